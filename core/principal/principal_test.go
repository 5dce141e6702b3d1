package principal

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Principal
		err  string
	}{
		{in: "User:alice", want: Principal{Type: "User", Name: "alice"}},
		{in: "User:ANONYMOUS", want: Anonymous},
		// SecurityUtilsTest.testPrincipalNameCanContainSeparator
		{in: "User:name:with:separator:in:it", want: Principal{Type: "User", Name: "name:with:separator:in:it"}},
		// SecurityUtilsTest.testParseKafkaPrincipalWithNonUserPrincipalType
		{in: "Group:foo", want: Principal{Type: "Group", Name: "foo"}},
		{in: "User:CN=a\\,b,O=x", want: Principal{Type: "User", Name: "CN=a\\,b,O=x"}},
		{in: "", err: "expected a string in format principalType:principalName"},
		{in: "alice", err: "expected a string in format principalType:principalName"},
		{in: "User:", err: "empty principal name"},
		{in: ":alice", err: "empty principal type"},
		{in: ":", err: "empty principal type"},
		{in: "User:\xff", err: "not valid UTF-8"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrInvalidPrincipal)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.in, got.String())
		})
	}
}

func TestAnonymousAndSASL(t *testing.T) {
	require.Equal(t, "User:ANONYMOUS", Anonymous.String())
	require.True(t, Anonymous.IsAnonymous())

	p, err := FromSASL("alice")
	require.NoError(t, err)
	require.Equal(t, "User:alice", p.String())
	require.False(t, p.IsAnonymous())

	_, err = FromSASL("")
	require.ErrorIs(t, err, ErrInvalidPrincipal)

	require.ErrorContains(t, Principal{Type: "Us:er", Name: "x"}.Validate(), "contains ':'")
}

func TestParseStringRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		typ := rapid.StringMatching(`[^:]+`).Draw(t, "type")
		name := rapid.StringN(1, 40, -1).Draw(t, "name")
		p := Principal{Type: typ, Name: name}
		require.NoError(t, p.Validate())
		got, err := Parse(p.String())
		require.NoError(t, err)
		require.Equal(t, p, got)
	})
}

func TestParseRefusesWhatValidateRefuses(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		p, err := Parse(s)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidPrincipal)
			return
		}
		require.NoError(t, p.Validate())
		require.Equal(t, s, p.String())
		require.False(t, strings.Contains(p.Type, ":"))
	})
}
