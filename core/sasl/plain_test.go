package sasl

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPlain(t *testing.T) {
	creds := memCreds{}
	creds.add(t, ScramSHA512, "alice", "alice-pw", DefaultIterations)
	creds.add(t, ScramSHA256, "bob", "bob-pw", MaxIterations)
	// carol's two credentials have different passwords: PLAIN uses the
	// SCRAM-SHA-512 one only.
	creds.add(t, ScramSHA512, "carol", "carol-512", DefaultIterations)
	creds.add(t, ScramSHA256, "carol", "carol-256", DefaultIterations)
	// dave's SCRAM-SHA-512 record is unusable; PLAIN falls back to 256.
	creds.add(t, ScramSHA256, "dave", "dave-pw", DefaultIterations)
	creds.put(ScramSHA512, "dave", ScramCredential{Salt: []byte("s"), Iterations: 1})
	s := newTestServer(t, creds)

	tests := []struct {
		name   string
		token  string
		user   string // "" means authentication fails
		reason string // a part of the failure's log reason
	}{
		{"sha512 credential", "\x00alice\x00alice-pw", "alice", ""},
		{"authzid equal to user", "alice\x00alice\x00alice-pw", "alice", ""},
		{"sha256 credential", "\x00bob\x00bob-pw", "bob", ""},
		{"sha512 preferred", "\x00carol\x00carol-512", "carol", ""},
		{"sha256 not tried when sha512 exists", "\x00carol\x00carol-256", "", "wrong password"},
		{"unusable sha512 skipped", "\x00dave\x00dave-pw", "dave", ""},
		{"wrong password", "\x00alice\x00nope", "", "wrong password"},
		{"password of another user", "\x00alice\x00bob-pw", "", "wrong password"},
		{"unknown user", "\x00mallory\x00alice-pw", "", "unknown user"},
		{"authzid differs", "admin\x00alice\x00alice-pw", "", "authorization id"},
		{"two fields", "alice\x00alice-pw", "", "2 fields"},
		{"four fields", "\x00alice\x00alice-pw\x00", "", "4 fields"},
		{"one field", "alice", "", "1 fields"},
		{"empty token", "", "", "1 fields"},
		{"empty user", "\x00\x00alice-pw", "", "no user name"},
		{"empty password", "\x00alice\x00", "", "no password"},
		{"not utf-8", "\x00alice\x00\xff\xfe", "", "UTF-8"},
		{"password case matters", "\x00alice\x00ALICE-PW", "", "wrong password"},
		{"user case matters", "\x00Alice\x00alice-pw", "", "unknown user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sess, err := s.Start(string(Plain))
			require.NoError(t, err)
			out, done, err := sess.Step([]byte(tc.token))
			if tc.user != "" {
				require.NoError(t, err)
				require.True(t, done)
				require.Empty(t, out)
				require.NotNil(t, out, "PLAIN answers an empty token, not none")
				require.Equal(t, tc.user, sess.User())
			} else {
				require.ErrorIs(t, err, ErrAuthenticationFailed)
				require.Equal(t, "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN", err.Error())
				require.False(t, done)
				require.Nil(t, out)
				require.Empty(t, sess.User())
				var ae *AuthenticationError
				require.True(t, errors.As(err, &ae))
				require.Contains(t, ae.Reason, tc.reason)
				require.NotContains(t, ae.Reason, "pw", "a reason never quotes a password")
			}
			_, _, err = sess.Step([]byte("\x00alice\x00alice-pw"))
			require.ErrorIs(t, err, ErrAuthenticationFailed, "PLAIN is one step")
		})
	}
}
