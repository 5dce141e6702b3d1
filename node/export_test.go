package node

import "testing"

// The internal tests' raw-connection helpers, for the external (node_test)
// tests.
var (
	DialRawWithin = dialRawWithin
	ReadRawFrame  = readRawFrame
)

// TestCA is the internal tests' certificate authority, for the external
// tests' TLS listeners and clients.
type TestCA = testCA

// NewTestCA makes a certificate authority named name.
var NewTestCA = newTestCA

// PEM is the CA's certificate, PEM encoded (a trust store).
func (ca *testCA) PEM() []byte { return ca.pem }

// Issue makes a leaf certificate for cn naming hosts; it returns the
// certificate and key PEM.
func (ca *testCA) Issue(t testing.TB, cn string, hosts ...string) (certPEM, keyPEM []byte) {
	return ca.issue(t, cn, hosts...)
}
