package kclient_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/sasl"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/sim/kclient"
	"github.com/strata-log/strata/sim/servertest"
)

// staticCreds are SCRAM credentials kept in the test.
type staticCreds map[sasl.Mechanism]map[string]sasl.ScramCredential

func (c staticCreds) LookupScram(m sasl.Mechanism, user string) (sasl.ScramCredential, bool) {
	cred, ok := c[m][user]
	return cred, ok
}

// saslServer is one server with a PLAINTEXT listener (n1:9092, for the
// harness) and a SASL_PLAINTEXT one (n1:9094) on which alice's
// password is "alice-secret".
func saslServer(t *testing.T, seed uint64, tweaks ...func(*server.Config)) *servertest.Single {
	t.Helper()
	creds := staticCreds{}
	for _, m := range []sasl.Mechanism{sasl.ScramSHA256, sasl.ScramSHA512} {
		salt := []byte("salt-of-alice-" + string(m))
		salted, err := sasl.SaltedPassword(m, "alice-secret", salt, 4096)
		require.NoError(t, err)
		cred, err := sasl.DeriveScramCredential(m, salt, 4096, salted)
		require.NoError(t, err)
		creds[m] = map[string]sasl.ScramCredential{"alice": cred}
	}
	builder, err := principal.NewBuilder("")
	require.NoError(t, err)
	return servertest.Start(t, seed, func(cfg *server.Config) {
		cfg.BrokerListener.Listeners = []broker.Listener{
			{Name: "INTERNAL", Addr: "n1:9092", AdvertisedHost: "n1", Protocol: meta.SecurityPlaintext, Principals: builder},
			{Name: "CLIENT", Addr: "n1:9094", AdvertisedHost: "n1", Protocol: meta.SecuritySASLPlaintext, Principals: builder,
				Mechanisms: []sasl.Mechanism{sasl.ScramSHA512, sasl.ScramSHA256, sasl.Plain}},
		}
		cfg.BrokerListener.InterBrokerListener = "INTERNAL"
		cfg.BrokerListener.Security = broker.SecurityConfig{Credentials: creds, DecoySecret: []byte("the decoy secret of the test")}
		for _, tweak := range tweaks {
			tweak(cfg)
		}
	})
}

func TestSASLLogsIn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		login    kclient.SASL
		refused  bool
		wantCode int16
	}{
		{"scram-sha-512", kclient.SASL{Mechanism: sasl.ScramSHA512, User: "alice", Password: "alice-secret"}, false, 0},
		{"scram-sha-256", kclient.SASL{Mechanism: sasl.ScramSHA256, User: "alice", Password: "alice-secret"}, false, 0},
		{"plain", kclient.SASL{Mechanism: sasl.Plain, User: "alice", Password: "alice-secret"}, false, 0},
		{"wrong password", kclient.SASL{Mechanism: sasl.ScramSHA512, User: "alice", Password: "guess"}, true, kerr.SaslAuthenticationFailed.Code},
		{"unknown user", kclient.SASL{Mechanism: sasl.Plain, User: "mallory", Password: "guess"}, true, kerr.SaslAuthenticationFailed.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := saslServer(t, 1)
			login := tc.login
			c := kclient.New(x.ClientEnv(), kclient.Config{ClientID: "sasl", Bootstrap: []string{"n1:9094"}, SASL: &login})
			var resp kmsg.Response
			var err error
			done := false
			c.DoAny(kmsg.NewPtrMetadataRequest(), func(r kmsg.Response, e error) { resp, err, done = r, e, true })
			x.RunUntil("the metadata answer", func() bool { return done })
			if !tc.refused {
				require.NoError(t, err)
				md := resp.(*kmsg.MetadataResponse)
				require.Len(t, md.Brokers, 1)
				require.Equal(t, int32(9094), md.Brokers[0].Port, "the answer names the SASL listener's port")
				return
			}
			require.ErrorIs(t, err, kclient.ErrNotSent)
			require.ErrorIs(t, err, kclient.ErrAuthentication)
			var ae *kclient.AuthError
			require.True(t, errors.As(err, &ae))
			require.Equal(t, tc.wantCode, ae.Code)
		})
	}
}

// TestSASLReauthenticates: with connections.max.reauth.ms at 1 s, a
// client that keeps one connection busy for 5 s logs in again before each
// session ends (KIP-368); without that the broker closes the connection
// at the first request after the expiry and that request's outcome is
// lost.
func TestSASLReauthenticates(t *testing.T) {
	for _, m := range []sasl.Mechanism{sasl.ScramSHA512, sasl.Plain} {
		t.Run(string(m), func(t *testing.T) {
			x := saslServer(t, 1, func(cfg *server.Config) { cfg.BrokerListener.Security.MaxReauth = time.Second })
			login := kclient.SASL{Mechanism: m, User: "alice", Password: "alice-secret"}
			c := kclient.New(x.ClientEnv(), kclient.Config{ClientID: "sasl", Bootstrap: []string{"n1:9094"}, SASL: &login})
			answered := 0
			for range 25 {
				var err error
				done := false
				c.DoAny(kmsg.NewPtrMetadataRequest(), func(_ kmsg.Response, e error) { err, done = e, true })
				x.RunUntil("the metadata answer", func() bool { return done })
				require.NoError(t, err, "request %d", answered)
				answered++
				start := x.Sim.Now()
				x.RunUntil("200 ms", func() bool { return x.Sim.Now()-start >= 200*time.Millisecond })
			}
		})
	}
}
