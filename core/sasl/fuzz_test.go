package sasl

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestStepNeverPanicsOnRandomTokens feeds random token sequences to every
// mechanism: Step must return (never panic), never authenticate, and
// once it fails keep failing.
func TestStepNeverPanicsOnRandomTokens(t *testing.T) {
	creds := memCreds{}
	creds.add(t, ScramSHA256, "alice", "pw", DefaultIterations)
	creds.add(t, ScramSHA512, "alice", "pw", DefaultIterations)
	s := newTestServer(t, creds)
	rapid.Check(t, func(rt *rapid.T) {
		m := rapid.SampledFrom([]Mechanism{ScramSHA256, ScramSHA512, Plain}).Draw(rt, "mechanism")
		sess, err := s.Start(string(m))
		require.NoError(rt, err)
		token := rapid.OneOf(
			rapid.SliceOfN(rapid.Byte(), 0, 200),
			// Near-valid shapes reach deeper into the parsers.
			rapid.Map(rapid.SliceOfN(rapid.SampledFrom([]string{
				"n", "y", "p=tls-unique", ",", "=", "=2C", "=3D", "a=", "n=", "r=", "c=", "p=", "m=",
				"alice", "biws", "\x00", "\xff", // no "pw": that would spell a right PLAIN message
			}), 0, 12), func(parts []string) []byte {
				var b []byte
				for _, p := range parts {
					b = append(b, p...)
				}
				return b
			}),
		)
		failed := false
		for i := range rapid.IntRange(1, 4).Draw(rt, "steps") {
			out, done, err := sess.Step(token.Draw(rt, "token"))
			require.False(rt, done, "random bytes never authenticate (step %d)", i)
			require.Empty(rt, sess.User())
			if failed {
				require.ErrorIs(rt, err, ErrAuthenticationFailed, "a failed session stays failed")
			}
			if err != nil {
				require.ErrorIs(rt, err, ErrAuthenticationFailed)
				require.Nil(rt, out)
				failed = true
			}
		}
	})
}

// FuzzStep: `go test -fuzz FuzzStep ./core/sasl/` explores further; the
// seeds run in every go test.
func FuzzStep(f *testing.F) {
	creds := memCreds{}
	creds.add(f, ScramSHA256, "alice", "pw", DefaultIterations)
	s := newTestServer(f, creds)
	for _, seed := range []string{
		"n,,n=alice,r=abc", "n,a=alice,n=alice,r=abc", "n,,n=a=2Cb,r=x", "\x00alice\x00pw",
		"c=biws,r=abc,p=AAAA", "", ",,,,", "n,,n=,r=",
	} {
		f.Add(uint8(0), []byte(seed), []byte("c=biws,r=abc,p=AAAA"))
	}
	f.Fuzz(func(t *testing.T, which uint8, first, second []byte) {
		m := []Mechanism{ScramSHA256, ScramSHA512, Plain}[which%3]
		sess, err := s.Start(string(m))
		require.NoError(t, err)
		_, _, _ = sess.Step(first) // may succeed: a valid first message or PLAIN's right password
		_, done, err := sess.Step(second)
		require.False(t, done)
		require.ErrorIs(t, err, ErrAuthenticationFailed, "a second step never succeeds without a valid proof")
	})
}
