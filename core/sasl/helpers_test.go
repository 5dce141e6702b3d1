package sasl

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// memCreds is a Credentials over a map, as the metadata image will be.
type memCreds map[Mechanism]map[string]ScramCredential

func (c memCreds) LookupScram(m Mechanism, user string) (ScramCredential, bool) {
	cred, ok := c[m][user]
	return cred, ok
}

// add stores a credential for user made from password the way `strata
// user create` will: SaltedPassword then DeriveScramCredential.
func (c memCreds) add(t testing.TB, m Mechanism, user, password string, iterations int) {
	t.Helper()
	salt := []byte("salt-of-" + user + "-" + string(m) + "-padded-to-32b")[:DefaultSaltBytes]
	salted, err := SaltedPassword(m, password, salt, iterations)
	require.NoError(t, err)
	cred, err := DeriveScramCredential(m, salt, iterations, salted)
	require.NoError(t, err)
	c.put(m, user, cred)
}

func (c memCreds) put(m Mechanism, user string, cred ScramCredential) {
	if c[m] == nil {
		c[m] = map[string]ScramCredential{}
	}
	c[m][user] = cred
}

// seededNonce is a deterministic Config.Nonce, as the simulator's env
// gives.
func seededNonce(seed uint64) func(n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	return func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
}

var testSecret = []byte("decoy-secret-for-tests-0123456789")

func newTestServer(t testing.TB, creds Credentials, enabled ...Mechanism) *Server {
	t.Helper()
	if len(enabled) == 0 {
		enabled = []Mechanism{ScramSHA256, ScramSHA512, Plain}
	}
	s, err := NewServer(Config{
		Enabled:     enabled,
		Credentials: creds,
		Nonce:       seededNonce(1),
		DecoySecret: testSecret,
	})
	require.NoError(t, err)
	return s
}

// exchange is the transcript of one SCRAM exchange against a real
// xdg-go/scram client.
type exchange struct {
	serverFirst, serverFinal []byte
	firstErr, finalErr       error
	done                     bool
	clientVerified           error // the client's check of the server signature
}

// runScram drives a full exchange between an xdg-go/scram client and a
// Session. authzID is the client's authorization id.
func runScram(t *testing.T, s *Server, m Mechanism, user, password, authzID string) (exchange, *Session) {
	t.Helper()
	client, err := m.scramHash().NewClientUnprepped(user, password, authzID)
	require.NoError(t, err)
	conv := client.WithNonceGenerator(func() string { return "fyko+d2lbbFgONRv9qkxdawL" }).NewConversation()
	sess, err := s.Start(string(m))
	require.NoError(t, err)

	var x exchange
	c1, err := conv.Step("")
	require.NoError(t, err)
	x.serverFirst, _, x.firstErr = sess.Step([]byte(c1))
	if x.firstErr != nil {
		return x, sess
	}
	c2, err := conv.Step(string(x.serverFirst))
	require.NoError(t, err)
	x.serverFinal, x.done, x.finalErr = sess.Step([]byte(c2))
	if x.finalErr == nil {
		_, x.clientVerified = conv.Step(string(x.serverFinal))
	}
	return x, sess
}
