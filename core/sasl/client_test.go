package sasl

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// converse runs a client session against a server session until the
// server says done or either side fails; it returns the server's user
// and the first error.
func converse(t *testing.T, srv *Server, cfg ClientConfig) (string, error) {
	t.Helper()
	cl, err := NewClient(cfg)
	require.NoError(t, err)
	ss, err := srv.Start(string(cfg.Mechanism))
	require.NoError(t, err)
	var challenge []byte
	for range 4 {
		token, err := cl.Step(challenge)
		if err != nil {
			return "", err
		}
		reply, done, err := ss.Step(token)
		if err != nil {
			return "", err
		}
		if done {
			if !cl.Done() {
				// SCRAM: the client verifies the server's final message.
				if _, err := cl.Step(reply); err != nil {
					return "", err
				}
			}
			require.True(t, cl.Done())
			return ss.User(), nil
		}
		challenge = reply
	}
	t.Fatal("the conversation did not end")
	return "", nil
}

// TestClientAgainstServer: the client side of PLAIN and SCRAM
// authenticates against this package's server with the right password
// and fails with a wrong one.
func TestClientAgainstServer(t *testing.T) {
	creds := memCreds{}
	creds.add(t, ScramSHA512, "broker", "node-secret", DefaultIterations)
	creds.add(t, ScramSHA256, "broker", "node-secret", DefaultIterations)
	srv := newTestServer(t, creds, Plain, ScramSHA256, ScramSHA512)
	for _, m := range []Mechanism{Plain, ScramSHA256, ScramSHA512} {
		t.Run(string(m), func(t *testing.T) {
			user, err := converse(t, srv, ClientConfig{Mechanism: m, User: "broker", Password: "node-secret", Nonce: seededNonce(7)})
			require.NoError(t, err)
			require.Equal(t, "broker", user)
			_, err = converse(t, srv, ClientConfig{Mechanism: m, User: "broker", Password: "wrong", Nonce: seededNonce(8)})
			require.Error(t, err)
		})
	}
	_, err := NewClient(ClientConfig{Mechanism: "GSSAPI", User: "u", Password: "p"})
	require.Error(t, err)
}

// TestClientConfigHidesPassword: a login printed or logged never shows
// its password.
func TestClientConfigHidesPassword(t *testing.T) {
	c := ClientConfig{Mechanism: ScramSHA512, User: "broker", Password: "hunter2"}
	for _, out := range []string{c.String(), fmt.Sprint(c), fmt.Sprintf("%v %+v %#v", c, c, c), c.LogValue().String()} {
		require.NotContains(t, out, "hunter2")
		require.Contains(t, out, "broker")
	}
}
