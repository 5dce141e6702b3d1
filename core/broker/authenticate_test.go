package broker

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/sasl"
)

// testCreds is a sasl.Credentials over a map, as the image is.
type testCreds map[sasl.Mechanism]map[string]sasl.ScramCredential

func (c testCreds) LookupScram(m sasl.Mechanism, user string) (sasl.ScramCredential, bool) {
	cred, ok := c[m][user]
	return cred, ok
}

// addUser stores user's credentials for both SCRAM mechanisms, made the
// way `strata user create` makes them.
func (c testCreds) addUser(t testing.TB, user, password string) {
	t.Helper()
	for _, m := range []sasl.Mechanism{sasl.ScramSHA256, sasl.ScramSHA512} {
		salt := []byte("salt-" + user + "-" + string(m))
		salted, err := sasl.SaltedPassword(m, password, salt, 4096)
		require.NoError(t, err)
		cred, err := sasl.DeriveScramCredential(m, salt, 4096, salted)
		require.NoError(t, err)
		if c[m] == nil {
			c[m] = map[string]sasl.ScramCredential{}
		}
		c[m][user] = cred
	}
}

// newSASLBroker is a broker whose one listener is SASL_PLAINTEXT with
// every mechanism, alice's password "alice-secret", bob's "bob-secret".
func newSASLBroker(t *testing.T, mutate ...func(*Config)) (*Broker, *fakeEnv) {
	t.Helper()
	creds := testCreds{}
	creds.addUser(t, "alice", "alice-secret")
	creds.addUser(t, "bob", "bob-secret")
	builder, err := principal.NewBuilder("")
	require.NoError(t, err)
	return newTestBroker(t, append([]func(*Config){func(cfg *Config) {
		cfg.Listeners = []Listener{{Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0", AdvertisedHost: testHost,
			Protocol: meta.SecuritySASLPlaintext, Principals: builder,
			Mechanisms: []sasl.Mechanism{sasl.ScramSHA512, sasl.ScramSHA256, sasl.Plain}}}
		cfg.Security = SecurityConfig{Credentials: creds, DecoySecret: []byte("a decoy secret of enough bytes")}
	}}, mutate...)...)
}

func handshake(t *testing.T, c *fakeConn, version int16, mechanism string) *kmsg.SASLHandshakeResponse {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = version, mechanism
	return roundTripOn[*kmsg.SASLHandshakeResponse](t, c, req, 1)
}

func authenticate(t *testing.T, c *fakeConn, token []byte) *kmsg.SASLAuthenticateResponse {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 2, token
	return roundTripOn[*kmsg.SASLAuthenticateResponse](t, c, req, 2)
}

// scramLogin runs a whole SCRAM exchange over SaslAuthenticate and
// returns the last answer's error code.
func scramLogin(t *testing.T, c *fakeConn, m sasl.Mechanism, user, password string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	require.Zero(t, handshake(t, c, 1, string(m)).ErrorCode)
	gen := scram.SHA512
	if m == sasl.ScramSHA256 {
		gen = scram.SHA256
	}
	client, err := gen.NewClient(user, password, "")
	require.NoError(t, err)
	conv := client.NewConversation()
	first, err := conv.Step("")
	require.NoError(t, err)
	resp := authenticate(t, c, []byte(first))
	if resp.ErrorCode != 0 {
		return resp
	}
	final, err := conv.Step(string(resp.SASLAuthBytes))
	require.NoError(t, err)
	resp = authenticate(t, c, []byte(final))
	if resp.ErrorCode == 0 {
		_, err = conv.Step(string(resp.SASLAuthBytes))
		require.NoError(t, err, "the server's signature must verify")
	}
	return resp
}

func metadataOn(t *testing.T, c *fakeConn) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	roundTripOn[*kmsg.MetadataResponse](t, c, req, 3)
	require.False(t, c.closed)
}

func onlyConn(t *testing.T, b *Broker) *conn {
	t.Helper()
	require.Len(t, b.conns, 1)
	return b.conns[0]
}

func TestSASLSCRAMAuthenticates(t *testing.T) {
	for _, m := range []sasl.Mechanism{sasl.ScramSHA256, sasl.ScramSHA512} {
		t.Run(string(m), func(t *testing.T) {
			b, e := newSASLBroker(t)
			c := e.net.connect()
			resp := scramLogin(t, c, m, "alice", "alice-secret")
			require.Zero(t, resp.ErrorCode, "%v", resp.ErrorMessage)
			require.Equal(t, "User:alice", onlyConn(t, b).principal.String())
			metadataOn(t, c)
		})
	}
}

func TestSASLPlainOverHandshakeV1AndRawTokensV0(t *testing.T) {
	t.Run("v1", func(t *testing.T) {
		b, e := newSASLBroker(t)
		c := e.net.connect()
		hs := handshake(t, c, 1, "PLAIN")
		require.Zero(t, hs.ErrorCode)
		require.Equal(t, []string{"SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"}, hs.SupportedMechanisms)
		resp := authenticate(t, c, []byte("\x00bob\x00bob-secret"))
		require.Zero(t, resp.ErrorCode)
		require.Equal(t, "User:bob", onlyConn(t, b).principal.String())
		metadataOn(t, c)
	})
	t.Run("v0", func(t *testing.T) {
		b, e := newSASLBroker(t)
		c := e.net.connect()
		require.Zero(t, handshake(t, c, 0, "PLAIN").ErrorCode)
		// The token is a bare frame; so is the answer (empty for PLAIN).
		c.deliver([]byte("\x00bob\x00bob-secret"))
		require.Equal(t, []byte{}, lastSent(t, c))
		require.Equal(t, "User:bob", onlyConn(t, b).principal.String())
		metadataOn(t, c)
	})
	t.Run("v0 wrong password closes without an answer", func(t *testing.T) {
		_, e := newSASLBroker(t)
		c := e.net.connect()
		require.Zero(t, handshake(t, c, 0, "PLAIN").ErrorCode)
		sent := len(c.sent)
		c.deliver([]byte("\x00bob\x00wrong"))
		require.True(t, c.closed)
		require.Len(t, c.sent, sent)
	})
}

func TestSASLFailuresSayNothingOfTheUser(t *testing.T) {
	const delay = 100 * time.Millisecond
	var messages []string
	for _, tc := range []struct{ user, password string }{{"alice", "wrong"}, {"mallory", "whatever"}} {
		b, e := newSASLBroker(t, func(cfg *Config) { cfg.Security.FailedAuthenticationDelay = delay })
		e.advance(0) // timers wait for the clock
		c := e.net.connect()
		require.Zero(t, handshake(t, c, 1, "SCRAM-SHA-512").ErrorCode)
		client, err := scram.SHA512.NewClient(tc.user, tc.password, "")
		require.NoError(t, err)
		conv := client.NewConversation()
		first, _ := conv.Step("")
		resp := authenticate(t, c, []byte(first))
		require.Zero(t, resp.ErrorCode, "an unknown user gets a decoy salt, not an error")
		final, err := conv.Step(string(resp.SASLAuthBytes))
		require.NoError(t, err)
		sent := len(c.sent)
		c.deliver(encodeRequest(&kmsg.SASLAuthenticateRequest{Version: 2, SASLAuthBytes: []byte(final)}, 9))
		require.Len(t, c.sent, sent, "the failure is held back for the delay")
		require.False(t, c.closed)
		e.advance(delay)
		failed := responseTo[*kmsg.SASLAuthenticateResponse](t, lastSent(t, c), 9,
			&kmsg.SASLAuthenticateRequest{Version: 2})
		require.Equal(t, kerr.SaslAuthenticationFailed.Code, failed.ErrorCode)
		require.True(t, c.closed, "a failed authentication closes the connection")
		require.Empty(t, b.conns)
		messages = append(messages, *failed.ErrorMessage)
	}
	require.Equal(t, messages[0], messages[1], "a wrong password and an unknown user must read the same")
	require.NotContains(t, messages[1], "mallory")
}

func TestSASLRequestsBeforeAuthentication(t *testing.T) {
	t.Run("ApiVersions is served", func(t *testing.T) {
		_, e := newSASLBroker(t)
		c := e.net.connect()
		resp := roundTripOn[*kmsg.ApiVersionsResponse](t, c, &kmsg.ApiVersionsRequest{Version: 3,
			ClientSoftwareName: "t", ClientSoftwareVersion: "1"}, 1)
		require.Zero(t, resp.ErrorCode)
		require.False(t, c.closed)
	})
	t.Run("any other request closes", func(t *testing.T) {
		_, e := newSASLBroker(t)
		c := e.net.connect()
		c.deliver(encodeRequest(&kmsg.MetadataRequest{Version: 12}, 1))
		require.True(t, c.closed)
		require.Empty(t, c.sent)
		require.Contains(t, e.logBuf.String(), "request before authentication")
	})
	t.Run("SaslAuthenticate before SaslHandshake closes", func(t *testing.T) {
		_, e := newSASLBroker(t)
		c := e.net.connect()
		resp := authenticate(t, c, []byte("\x00bob\x00bob-secret"))
		require.Equal(t, kerr.IllegalSaslState.Code, resp.ErrorCode)
		require.True(t, c.closed)
	})
	t.Run("a frame over 512 KiB closes (CVE-2022-34917)", func(t *testing.T) {
		_, e := newSASLBroker(t)
		c := e.net.connect()
		c.deliver(make([]byte, MaxPreAuthFrameBytes+1))
		require.True(t, c.closed)
		require.Empty(t, c.sent)
	})
	t.Run("an unsupported mechanism lists the enabled ones, then closes", func(t *testing.T) {
		_, e := newSASLBroker(t, func(cfg *Config) { cfg.Listeners[0].Mechanisms = []sasl.Mechanism{sasl.ScramSHA512} })
		c := e.net.connect()
		resp := handshake(t, c, 1, "GSSAPI")
		require.Equal(t, kerr.UnsupportedSaslMechanism.Code, resp.ErrorCode)
		require.Equal(t, []string{"SCRAM-SHA-512"}, resp.SupportedMechanisms)
		require.True(t, c.closed)
	})
}

func TestSASLHandshakeOnAPlaintextListenerIsIllegal(t *testing.T) {
	b, e := newTestBroker(t)
	c := e.net.connect()
	resp := handshake(t, c, 1, "PLAIN")
	require.Equal(t, kerr.IllegalSaslState.Code, resp.ErrorCode)
	require.Equal(t, principal.Anonymous, onlyConn(t, b).principal)
	metadataOn(t, c)
}

func TestSASLReauthentication(t *testing.T) {
	const lifetime = time.Minute
	newBroker := func(t *testing.T) (*Broker, *fakeEnv, *fakeConn) {
		b, e := newSASLBroker(t, func(cfg *Config) { cfg.Security.MaxReauth = lifetime })
		c := e.net.connect()
		resp := scramLogin(t, c, sasl.ScramSHA512, "alice", "alice-secret")
		require.Zero(t, resp.ErrorCode)
		require.Equal(t, lifetime.Milliseconds(), resp.SessionLifetimeMillis)
		return b, e, c
	}
	t.Run("an expired session closes at its next request", func(t *testing.T) {
		_, e, c := newBroker(t)
		metadataOn(t, c)
		e.advance(lifetime)
		c.deliver(encodeRequest(&kmsg.MetadataRequest{Version: 12}, 5))
		require.True(t, c.closed)
	})
	t.Run("the same principal re-authenticates and goes on", func(t *testing.T) {
		b, e, c := newBroker(t)
		e.advance(lifetime / 2)
		require.Zero(t, scramLogin(t, c, sasl.ScramSHA512, "alice", "alice-secret").ErrorCode)
		e.advance(lifetime * 3 / 4) // past the first session's end
		metadataOn(t, c)
		require.Equal(t, "User:alice", onlyConn(t, b).principal.String())
	})
	t.Run("another principal is refused", func(t *testing.T) {
		_, _, c := newBroker(t)
		resp := scramLogin(t, c, sasl.ScramSHA512, "bob", "bob-secret")
		require.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
		require.True(t, c.closed)
	})
	t.Run("another mechanism is refused", func(t *testing.T) {
		_, _, c := newBroker(t)
		resp := handshake(t, c, 1, "PLAIN")
		require.Equal(t, kerr.UnsupportedSaslMechanism.Code, resp.ErrorCode)
		require.True(t, c.closed)
	})
}

// FuzzSASLTokens feeds arbitrary tokens to both SASL framings after a
// handshake, for every mechanism: whatever the bytes, the broker must not
// panic, must answer at most once per request, and a connection that did
// not authenticate is never served a request other than ApiVersions or
// SASL (the Metadata after the tokens closes it, or it was closed).
func FuzzSASLTokens(f *testing.F) {
	f.Add(uint8(0), false, []byte("\x00bob\x00bob-secret"), []byte{})
	f.Add(uint8(1), true, []byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add(uint8(2), true, []byte("n,a=bob,n=alice,r=x"), []byte{0xff, 0x00})
	f.Add(uint8(1), false, []byte{}, make([]byte, 9000))
	mechs := []string{"PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256"}
	f.Fuzz(func(t *testing.T, mech uint8, v1 bool, first, second []byte) {
		b, e := newSASLBroker(t)
		e.logger = slog.New(slog.DiscardHandler)
		b.log = e.logger
		c := e.net.connect()
		version := int16(0)
		if v1 {
			version = 1
		}
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = version, mechs[int(mech)%len(mechs)]
		c.deliver(encodeRequest(req, 1))
		for i, tok := range [][]byte{first, second} {
			if v1 {
				c.deliver(encodeRequest(&kmsg.SASLAuthenticateRequest{Version: 2, SASLAuthBytes: tok}, int32(2+i)))
			} else {
				c.deliver(tok)
			}
		}
		if c.closed || onlyConnOrNil(b) == nil || onlyConnOrNil(b).auth.state == authDone {
			return
		}
		sent := len(c.sent)
		c.deliver(encodeRequest(&kmsg.MetadataRequest{Version: 12}, 9))
		if !c.closed || len(c.sent) != sent {
			t.Fatalf("an unauthenticated connection was served Metadata")
		}
	})
}

func onlyConnOrNil(b *Broker) *conn {
	if len(b.conns) != 1 {
		return nil
	}
	return b.conns[0]
}
