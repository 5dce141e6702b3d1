package sasl

import (
	"encoding/base64"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/xdg-go/scram"
)

func TestScramExchangeSucceeds(t *testing.T) {
	for _, m := range []Mechanism{ScramSHA256, ScramSHA512} {
		t.Run(string(m), func(t *testing.T) {
			creds := memCreds{}
			creds.add(t, m, "alice", "alice-secret", DefaultIterations)
			creds.add(t, m, "bob", "bob-secret", MaxIterations)
			s := newTestServer(t, creds)
			for _, user := range []string{"alice", "bob"} {
				for _, authz := range []string{"", user} {
					x, sess := runScram(t, s, m, user, user+"-secret", authz)
					require.NoError(t, x.firstErr)
					require.NoError(t, x.finalErr)
					require.True(t, x.done)
					require.NoError(t, x.clientVerified, "the client must accept the server signature")
					require.Equal(t, user, sess.User())
					require.Equal(t, m, sess.Mechanism())

					_, _, err := sess.Step([]byte("c=biws"))
					require.ErrorIs(t, err, ErrAuthenticationFailed, "no step after the end")
				}
			}
		})
	}
}

// TestScramRFC7677Vector replays RFC 7677 section 3 byte for byte. The
// vector's server nonce is not base64 of random bytes, so the test swaps
// in a conversation whose nonce generator returns it, keeping the
// session's own lookup and checks.
func TestScramRFC7677Vector(t *testing.T) {
	const (
		clientFirst = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
		serverFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
		clientFinal = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
		serverFinal = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
	)
	salt, err := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	require.NoError(t, err)
	salted, err := SaltedPassword(ScramSHA256, "pencil", salt, 4096)
	require.NoError(t, err)
	cred, err := DeriveScramCredential(ScramSHA256, salt, 4096, salted)
	require.NoError(t, err)
	creds := memCreds{}
	creds.put(ScramSHA256, "user", cred)

	sess, err := newTestServer(t, creds).Start(string(ScramSHA256))
	require.NoError(t, err)
	srv, err := scram.SHA256.NewServer(sess.scram.lookup)
	require.NoError(t, err)
	sess.scram.conv = srv.WithNonceGenerator(func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }).NewConversation()

	out, done, err := sess.Step([]byte(clientFirst))
	require.NoError(t, err)
	require.False(t, done)
	require.Equal(t, serverFirst, string(out))
	out, done, err = sess.Step([]byte(clientFinal))
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, serverFinal, string(out))
	require.Equal(t, "user", sess.User())
}

// serverFirstShape reduces a server-first message to what an observer
// could compare across users: field names, nonce, salt and iteration
// lengths and the iteration count.
var serverFirstRE = regexp.MustCompile(`^r=([^,]+),s=([^,]+),i=([0-9]+)$`)

func serverFirstShape(t *testing.T, s1 []byte) (nonceLen, saltLen int, iters string, salt string) {
	t.Helper()
	m := serverFirstRE.FindStringSubmatch(string(s1))
	require.NotNil(t, m, "server-first %q", s1)
	return len(m[1]), len(m[2]), m[3], m[2]
}

func TestScramUnknownUserLooksLikeWrongPassword(t *testing.T) {
	for _, m := range []Mechanism{ScramSHA256, ScramSHA512} {
		t.Run(string(m), func(t *testing.T) {
			creds := memCreds{}
			creds.add(t, m, "alice", "alice-secret", DefaultIterations)
			s := newTestServer(t, creds)

			wrong, _ := runScram(t, s, m, "alice", "not-the-password", "")
			unknown, _ := runScram(t, s, m, "mallory", "alice-secret", "")
			for _, x := range []exchange{wrong, unknown} {
				require.NoError(t, x.firstErr, "both pass the first message")
				require.ErrorIs(t, x.finalErr, ErrAuthenticationFailed)
				require.ErrorIs(t, x.finalErr, kerr.SaslAuthenticationFailed)
				require.False(t, x.done)
				require.Nil(t, x.serverFinal)
			}
			require.Equal(t, wrong.finalErr.Error(), unknown.finalErr.Error())
			require.Equal(t, "Authentication failed during authentication due to invalid credentials with SASL mechanism "+string(m),
				unknown.finalErr.Error())

			wn, ws, wi, _ := serverFirstShape(t, wrong.serverFirst)
			un, us, ui, usalt := serverFirstShape(t, unknown.serverFirst)
			require.Equal(t, []any{wn, ws, wi}, []any{un, us, ui})

			// The decoy is stable for a name (as a stored salt is) and
			// differs between names.
			again, _ := runScram(t, s, m, "mallory", "x", "")
			_, _, _, againSalt := serverFirstShape(t, again.serverFirst)
			require.Equal(t, usalt, againSalt)
			other, _ := runScram(t, s, m, "trudy", "x", "")
			_, _, _, otherSalt := serverFirstShape(t, other.serverFirst)
			require.NotEqual(t, usalt, otherSalt)

			// Reasons, for the log only, do differ.
			var wa, ua *AuthenticationError
			require.True(t, errors.As(wrong.finalErr, &wa))
			require.True(t, errors.As(unknown.finalErr, &ua))
			require.Contains(t, ua.Reason, "unknown user")
			require.NotContains(t, wa.Reason, "unknown user")
		})
	}
}

// TestScramDecoyNeverAuthenticates: a decoy's keys are unknowable, so
// no proof matches them; the session also refuses a decoy outright. The
// second guard is exercised here by marking a real user's exchange as a
// decoy between the two steps: the right password must then fail.
func TestScramDecoyNeverAuthenticates(t *testing.T) {
	creds := memCreds{}
	creds.add(t, ScramSHA256, "alice", "pw", DefaultIterations)
	s := newTestServer(t, creds)
	client, err := scram.SHA256.NewClientUnprepped("alice", "pw", "")
	require.NoError(t, err)
	conv := client.NewConversation()
	c1, err := conv.Step("")
	require.NoError(t, err)
	sess, err := s.Start(string(ScramSHA256))
	require.NoError(t, err)
	s1, _, err := sess.Step([]byte(c1))
	require.NoError(t, err)
	c2, err := conv.Step(string(s1))
	require.NoError(t, err)

	sess.scram.decoyReason = "forced decoy"
	out, done, err := sess.Step([]byte(c2))
	require.ErrorIs(t, err, ErrAuthenticationFailed)
	require.False(t, done)
	require.Nil(t, out)
	require.Empty(t, sess.User())
}

func TestScramAuthzIDMustBeUser(t *testing.T) {
	creds := memCreds{}
	creds.add(t, ScramSHA256, "alice", "pw", DefaultIterations)
	s := newTestServer(t, creds)
	for _, user := range []string{"alice", "nobody"} { // same answer whether or not the user exists
		x, sess := runScram(t, s, ScramSHA256, user, "pw", "admin")
		require.ErrorIs(t, x.firstErr, ErrAuthenticationFailed, user)
		require.Nil(t, x.serverFirst)
		require.Empty(t, sess.User())
		var ae *AuthenticationError
		require.True(t, errors.As(x.firstErr, &ae))
		require.Contains(t, ae.Reason, "authorization id")
	}
}

func TestScramNameEscaping(t *testing.T) {
	creds := memCreds{}
	creds.add(t, ScramSHA512, "a,b=c", "pw", DefaultIterations)
	s := newTestServer(t, creds)

	// The client escapes "a,b=c" as "a=2Cb=3Dc"; the lookup sees the name.
	x, sess := runScram(t, s, ScramSHA512, "a,b=c", "pw", "a,b=c")
	require.NoError(t, x.finalErr)
	require.True(t, x.done)
	require.Equal(t, "a,b=c", sess.User())

	// The escaped spelling is not a different user: a user literally named
	// "a=2Cb=3Dc" cannot be reached by sending the escape unescaped.
	for _, bad := range []string{
		"n,,n=a=2Xb,r=abc",     // '=' not starting =2C or =3D
		"n,,n=a=,r=abc",        // dangling '='
		"n,,n=a=2c,r=abc",      // lower-case hex is not an escape
		"n,a=x=41,n=alice,r=a", // bad escape in the authzid
	} {
		sess, err := s.Start(string(ScramSHA512))
		require.NoError(t, err)
		out, done, err := sess.Step([]byte(bad))
		require.ErrorIs(t, err, ErrAuthenticationFailed, bad)
		require.False(t, done)
		require.Nil(t, out)
	}
}

func TestScramStoredIterationsOutOfRange(t *testing.T) {
	for _, iters := range []int{1, MinIterations - 1, MaxIterations + 1} {
		// Build the credential by hand: the public helpers refuse it.
		salt := []byte("0123456789abcdef0123456789abcdef")
		salted, err := saltedPassword(ScramSHA256, "pw", salt, iters)
		require.NoError(t, err)
		h, _ := ScramSHA256.hashOf()
		clientKey := hmacSum(h, salted, "Client Key")
		sum := h()
		sum.Write(clientKey)
		creds := memCreds{}
		creds.put(ScramSHA256, "old", ScramCredential{
			Salt: salt, Iterations: iters, StoredKey: sum.Sum(nil), ServerKey: hmacSum(h, salted, "Server Key"),
		})
		x, _ := runScram(t, newTestServer(t, creds), ScramSHA256, "old", "pw", "")
		require.NoError(t, x.firstErr)
		_, _, i, _ := serverFirstShape(t, x.serverFirst)
		require.Equal(t, "4096", i, "the bad credential is never shown; the decoy is")
		require.ErrorIs(t, x.finalErr, ErrAuthenticationFailed, "iterations %d", iters)
		var ae *AuthenticationError
		require.True(t, errors.As(x.finalErr, &ae))
		require.Contains(t, ae.Reason, "iterations")
	}
}

func TestScramMalformedTokens(t *testing.T) {
	creds := memCreds{}
	creds.add(t, ScramSHA256, "alice", "pw", DefaultIterations)
	s := newTestServer(t, creds)

	firsts := []string{
		"", ",", "n,,", "n,,n=alice", "x,,n=alice,r=abc", "n,,m=ext,n=alice,r=abc",
		"p=tls-unique,,n=alice,r=abc", "n,b=x,n=alice,r=abc", "n,,r=abc,n=alice",
		"n,,n=alice,x=abc", "n,,n=al\xffice,r=abc", strings.Repeat("n,,", 5000),
	}
	for _, c1 := range firsts {
		sess, err := s.Start(string(ScramSHA256))
		require.NoError(t, err)
		out, done, err := sess.Step([]byte(c1))
		require.ErrorIs(t, err, ErrAuthenticationFailed, "%q", c1)
		require.False(t, done)
		require.Nil(t, out)
	}

	good := "n,,n=alice,r=abc"
	finals := []string{
		"", "c=biws", "c=biws,r=abc", "c=!!!,r=abc,p=AAAA", "c=biws,r=wrong,p=AAAA",
		"c=eSws,r=NONCE,p=AAAA",                             // cbind says "y,," but the client sent "n,,"
		"c=biws,r=NONCE,p=AAAA",                             // proof of the wrong length
		"c=biws,r=NONCE,p=" + strings.Repeat("A", 44),       // proof of the right length, wrong value
		"c=biws,r=NONCE,p=" + strings.Repeat("A", 43) + "=", // idem
		"c=biws,r=NONCE,p=\xff",
	}
	for _, c2 := range finals {
		sess, err := s.Start(string(ScramSHA256))
		require.NoError(t, err)
		s1, _, err := sess.Step([]byte(good))
		require.NoError(t, err)
		nonce := strings.TrimPrefix(strings.Split(string(s1), ",")[0], "r=")
		c2 = strings.ReplaceAll(c2, "NONCE", nonce)
		out, done, err := sess.Step([]byte(c2))
		require.ErrorIs(t, err, ErrAuthenticationFailed, "%q", c2)
		require.False(t, done)
		require.Nil(t, out)
	}
}

func TestTokenBound(t *testing.T) {
	creds := memCreds{}
	creds.add(t, ScramSHA256, "alice", "pw", DefaultIterations)
	s, err := NewServer(Config{
		Enabled: []Mechanism{ScramSHA256, Plain}, Credentials: creds,
		Nonce: seededNonce(1), DecoySecret: testSecret, MaxTokenBytes: 64,
	})
	require.NoError(t, err)
	for _, m := range []Mechanism{ScramSHA256, Plain} {
		ok := "n,,n=alice,r=" + strings.Repeat("x", 64-len("n,,n=alice,r="))
		if m == Plain {
			ok = "\x00alice\x00pw"
		}
		sess, err := s.Start(string(m))
		require.NoError(t, err)
		_, _, err = sess.Step([]byte(ok))
		require.NoError(t, err, "a token of the bound is accepted")

		sess, err = s.Start(string(m))
		require.NoError(t, err)
		_, _, err = sess.Step([]byte(ok + strings.Repeat("y", 65-len(ok))))
		var ae *AuthenticationError
		require.True(t, errors.As(err, &ae))
		require.Contains(t, ae.Reason, "exceeds 64")
	}
}

// TestDeterministicServerTokens: the same nonce source and the same
// client give byte-identical server tokens; another seed gives other
// nonces.
func TestDeterministicServerTokens(t *testing.T) {
	transcript := func(seed uint64) []string {
		creds := memCreds{}
		creds.add(t, ScramSHA512, "alice", "pw", DefaultIterations)
		s, err := NewServer(Config{
			Enabled: []Mechanism{ScramSHA512}, Credentials: creds,
			Nonce: seededNonce(seed), DecoySecret: testSecret,
		})
		require.NoError(t, err)
		var out []string
		for _, user := range []string{"alice", "alice", "ghost"} {
			x, _ := runScram(t, s, ScramSHA512, user, "pw", "")
			out = append(out, string(x.serverFirst), string(x.serverFinal))
		}
		return out
	}
	a, b := transcript(7), transcript(7)
	require.Equal(t, a, b)
	require.NotEqual(t, a[0], a[2], "each session draws a fresh nonce")
	require.NotEqual(t, a[0], transcript(8)[0])
}

func TestNonceSourceTooShort(t *testing.T) {
	creds := memCreds{}
	creds.add(t, ScramSHA256, "alice", "pw", DefaultIterations)
	s, err := NewServer(Config{
		Enabled: []Mechanism{ScramSHA256}, Credentials: creds,
		Nonce: func(int) []byte { return nil }, DecoySecret: testSecret,
	})
	require.NoError(t, err)
	x, _ := runScram(t, s, ScramSHA256, "alice", "pw", "")
	require.ErrorIs(t, x.firstErr, ErrAuthenticationFailed)
	require.Nil(t, x.serverFirst)
}

// handClient is an RFC 5802 client written from the RFC, independent of
// xdg-go/scram, for what that library's client never sends.
func handClient(t *testing.T, m Mechanism, sess *Session, gs2, c1bare, password string) (out []byte, done bool, err error) {
	t.Helper()
	s1, _, err := sess.Step([]byte(gs2 + c1bare))
	if err != nil {
		return nil, false, err
	}
	f := serverFirstRE.FindStringSubmatch(string(s1))
	require.NotNil(t, f)
	salt, err := base64.StdEncoding.DecodeString(f[2])
	require.NoError(t, err)
	iters, err := strconv.Atoi(f[3])
	require.NoError(t, err)
	salted, err := saltedPassword(m, password, salt, iters)
	require.NoError(t, err)
	h, _ := m.hashOf()
	clientKey := hmacSum(h, salted, "Client Key")
	stored := h()
	stored.Write(clientKey)
	c2wop := "c=" + base64.StdEncoding.EncodeToString([]byte(gs2)) + ",r=" + f[1]
	sig := hmacSum(h, stored.Sum(nil), c1bare+","+string(s1)+","+c2wop)
	proof := make([]byte, len(sig))
	for i := range sig {
		proof[i] = clientKey[i] ^ sig[i]
	}
	return sess.Step([]byte(c2wop + ",p=" + base64.StdEncoding.EncodeToString(proof)))
}

func TestScramHandClient(t *testing.T) {
	creds := memCreds{}
	creds.add(t, ScramSHA512, "alice", "pw", DefaultIterations)
	s := newTestServer(t, creds)
	tests := []struct {
		name, gs2, c1bare, password string
		ok                          bool
		reason                      string // part of the failure's log reason
	}{
		{"plain client", "n,,", "n=alice,r=hand", "pw", true, ""},
		// "y": the client could bind the channel but saw no -PLUS
		// mechanism advertised, which is true here (RFC 5802 section 6).
		{"client supports channel binding", "y,,", "n=alice,r=hand", "pw", true, ""},
		{"authzid escaped like the name", "n,a=alice,", "n=alice,r=hand", "pw", true, ""},
		{"wrong password", "n,,", "n=alice,r=hand", "pW", false, "proof"},
		{"tokenauth extension", "n,,", "n=alice,r=hand,tokenauth=true", "pw", false, "extensions are not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sess, err := s.Start(string(ScramSHA512))
			require.NoError(t, err)
			out, done, err := handClient(t, ScramSHA512, sess, tc.gs2, tc.c1bare, tc.password)
			if !tc.ok {
				require.ErrorIs(t, err, ErrAuthenticationFailed)
				require.False(t, done)
				var ae *AuthenticationError
				require.True(t, errors.As(err, &ae))
				require.Contains(t, ae.Reason, tc.reason)
				return
			}
			require.NoError(t, err)
			require.True(t, done)
			require.True(t, strings.HasPrefix(string(out), "v="))
			require.Equal(t, "alice", sess.User())
		})
	}
}

// librdkafkaFinal builds the client-final message librdkafka before 2.6.1
// sends: its nonce is the client nonce followed by the whole nonce, and
// its proof is computed over that message.
func librdkafkaFinal(t *testing.T, m Mechanism, clientFirstBare, serverFirst, cbind, password string, prefix string) (msg, wantServerFinal string) {
	t.Helper()
	attrs := map[string]string{}
	for _, f := range strings.Split(serverFirst, ",") {
		attrs[f[:1]] = f[2:]
	}
	salt, err := base64.StdEncoding.DecodeString(attrs["s"])
	require.NoError(t, err)
	iters, err := strconv.Atoi(attrs["i"])
	require.NoError(t, err)
	h, _ := m.hashOf()
	salted, err := SaltedPassword(m, password, salt, iters)
	require.NoError(t, err)
	clientKey := hmacSum(h, salted, "Client Key")
	sum := h()
	sum.Write(clientKey)
	storedKey := sum.Sum(nil)
	withoutProof := "c=" + cbind + ",r=" + prefix + attrs["r"]
	authMessage := clientFirstBare + "," + serverFirst + "," + withoutProof
	sig := hmacSum(h, storedKey, authMessage)
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	serverKey := hmacSum(h, salted, "Server Key")
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof),
		"v=" + base64.StdEncoding.EncodeToString(hmacSum(h, serverKey, authMessage))
}

// TestScramLibrdkafkaRepeatedNonce: librdkafka from v0.0.99 to v2.6.0
// (Debian's 2.0.2 among them) repeats the client nonce before the whole
// nonce in its client-final message; Kafka accepts a nonce that ends with
// the whole nonce since 3.8.1, and so does Strata, with the proof still
// checked over the message as sent.
func TestScramLibrdkafkaRepeatedNonce(t *testing.T) {
	for _, m := range []Mechanism{ScramSHA256, ScramSHA512} {
		t.Run(string(m), func(t *testing.T) {
			creds := memCreds{}
			creds.add(t, m, "alice", "alice-secret", DefaultIterations)
			s := newTestServer(t, creds)
			const cnonce = "rOprNGfwEbeRWgbNEkqO"
			login := func(user, password, prefix, cbind string) (string, bool, error) {
				sess, err := s.Start(string(m))
				require.NoError(t, err)
				bare := "n=" + user + ",r=" + cnonce
				s1, done, err := sess.Step([]byte("n,," + bare))
				require.NoError(t, err)
				require.False(t, done)
				final, want := librdkafkaFinal(t, m, bare, string(s1), cbind, password, prefix)
				s2, done, err := sess.Step([]byte(final))
				if err == nil {
					require.Equal(t, want, string(s2), "the server signature")
					require.Equal(t, user, sess.User())
				}
				return string(s2), done, err
			}
			_, done, err := login("alice", "alice-secret", cnonce, "biws")
			require.NoError(t, err)
			require.True(t, done)
			_, done, err = login("alice", "alice-secret", "anything", "biws")
			require.NoError(t, err, "Kafka's rule: the nonce ends with the whole nonce")
			require.True(t, done)
			for _, tc := range []struct{ user, password, prefix, cbind string }{
				{"alice", "wrong", cnonce, "biws"},
				{"mallory", "alice-secret", cnonce, "biws"}, // the decoy
				{"alice", "alice-secret", cnonce, "eSws"},   // "y,," as the channel binding
			} {
				_, done, err := login(tc.user, tc.password, tc.prefix, tc.cbind)
				require.ErrorIs(t, err, ErrAuthenticationFailed, "%+v", tc)
				require.False(t, done)
			}
		})
	}
}
