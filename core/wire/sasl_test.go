package wire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/sasl"
	"github.com/strata-log/strata/sim"
)

// oneUser is a sasl.Credentials with one SCRAM-SHA-512 user.
type oneUser struct {
	user string
	cred sasl.ScramCredential
}

func (o oneUser) LookupScram(m sasl.Mechanism, user string) (sasl.ScramCredential, bool) {
	return o.cred, m == sasl.ScramSHA512 && user == o.user
}

var saslAPIs = protocol.NewTable(
	protocol.API{Key: kmsg.ApiVersions.Int16(), MaxVersion: 4},
	protocol.API{Key: kmsg.SASLHandshake.Int16(), MaxVersion: 1},
	protocol.API{Key: kmsg.SASLAuthenticate.Int16(), MaxVersion: 2},
)

// TestPeerSASLLogin: a Peer with SASLLogin authenticates with PLAIN or
// SCRAM-SHA-512 before its first request; a wrong password fails the
// dial with ErrAuthentication and no request is sent.
func TestPeerSASLLogin(t *testing.T) {
	salt := []byte("0123456789abcdef0123456789abcdef")
	salted, err := sasl.SaltedPassword(sasl.ScramSHA512, "node-secret", salt, sasl.MinIterations)
	require.NoError(t, err)
	cred, err := sasl.DeriveScramCredential(sasl.ScramSHA512, salt, sasl.MinIterations, salted)
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		mech     sasl.Mechanism
		password string
		ok       bool
	}{
		{"PLAIN", sasl.Plain, "node-secret", true},
		{"SCRAM", sasl.ScramSHA512, "node-secret", true},
		{"wrong password", sasl.ScramSHA512, "guess", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sim.New(sim.Config{Seed: 5})
			var served []string
			s.AddProcess("srv", func(e env.Env) {
				srv, err := sasl.NewServer(sasl.Config{Enabled: []sasl.Mechanism{sasl.Plain, sasl.ScramSHA512},
					Credentials: oneUser{"broker", cred}, Nonce: func(n int) []byte { return make([]byte, n) },
					DecoySecret: []byte("decoy-secret-decoy-secret-decoy!")})
				require.NoError(t, err)
				_, err = e.Net().Listen("srv:9092", func(c env.Conn) {
					var sess *sasl.Session
					c.OnClose(func(error) {})
					c.OnFrame(func(f []byte) {
						hdr, req, err := ParseRequest(saslAPIs, f)
						require.NoError(t, err)
						served = append(served, hdr.APIName())
						var resp kmsg.Response
						switch r := req.(type) {
						case *kmsg.SASLHandshakeRequest:
							sess, err = srv.Start(r.Mechanism)
							require.NoError(t, err)
							resp = r.ResponseKind()
						case *kmsg.SASLAuthenticateRequest:
							ar := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
							token, _, err := sess.Step(r.SASLAuthBytes)
							if err != nil {
								ar.ErrorCode = 58 // SASL_AUTHENTICATION_FAILED
							}
							ar.SASLAuthBytes, resp = token, ar
						default:
							resp = req.ResponseKind()
						}
						_ = c.Send(EncodeResponse(hdr.CorrelationID, resp))
					})
				})
				require.NoError(t, err)
			}).Start()
			var dialErr error
			answered := false
			s.AddProcess("cli", func(e env.Env) {
				p := NewPeer(e, PeerConfig{Addr: "srv:9092", ClientID: "test",
					Authenticate: SASLLogin(func() (*sasl.ClientSession, error) {
						return sasl.NewClient(sasl.ClientConfig{Mechanism: tc.mech, User: "broker", Password: tc.password,
							Nonce: func(n int) []byte { return make([]byte, n) }})
					}),
					OnDialFailed: func(err error) { dialErr = err }})
				req := kmsg.NewPtrApiVersionsRequest()
				req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "x", "1"
				_, err := p.Do(req, 0, func(_ kmsg.Response, err error) { answered = err == nil })
				require.NoError(t, err)
			}).Start()
			require.NoError(t, s.RunFor(100*time.Millisecond))
			require.Equal(t, tc.ok, answered)
			if tc.ok {
				require.NoError(t, dialErr)
				require.Equal(t, "ApiVersions", served[len(served)-1])
			} else {
				require.ErrorIs(t, dialErr, ErrAuthentication)
				require.NotContains(t, served, "ApiVersions")
			}
		})
	}
}
