package principal

import (
	"fmt"
	"regexp"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// findFrom must be Java's Matcher.find from an offset: the leftmost start
// at or after the offset, the pattern's preferred match there, with the
// text before the offset as context. The oracle tries each start q with
// \A(?s:.){q}(p), which anchors p at q without hiding what precedes it.
func TestFindFromMatchesOracle(t *testing.T) {
	patterns := []string{``, `a*`, `a*?`, `(a|ab)`, `b?`, `^a`, `a$`, `(a)(b)?`, `\Aa*`, `[ab]*?b`, `(?:é|a)+`, `\z`, `[^a]`}
	rapid.Check(t, func(t *rapid.T) {
		src := rapid.SampledFrom(patterns).Draw(t, "pattern")
		s := rapid.StringOfN(rapid.SampledFrom([]rune{'a', 'b', 'é'}), 0, 12, -1).Draw(t, "s")
		p, err := compileJavaPattern(src)
		require.NoError(t, err)
		var offsets []int
		for i := range s {
			offsets = append(offsets, i)
		}
		offsets = append(offsets, len(s))
		from := rapid.SampledFrom(offsets).Draw(t, "from")

		var want []int
		for q := from; q <= len(s); {
			anchored := regexp.MustCompile(fmt.Sprintf(`\A(?s:.){%d}(%s)`, utf8.RuneCountInString(s[:q]), p.search.String()))
			if m := anchored.FindStringSubmatchIndex(s); m != nil {
				want = m[2:]
				break
			}
			if q == len(s) {
				break
			}
			_, w := utf8.DecodeRuneInString(s[q:])
			q += w
		}
		require.Equal(t, want, p.findFrom(s, from))
	})
}

func TestTranslateJavaRegex(t *testing.T) {
	for _, tc := range []struct{ java, goRE string }{
		{`a.b`, `a` + javaDot + `b`},
		{`[.]`, `[.]`},
		{`\s+`, `[\t\n\x0B\f\r ]+`},
		{`[^\s,]`, `[^\t\n\x0B\f\r ,]`},
		{`[\S]`, `[\x00-\x08\x0E-\x1F\x21-\x{10FFFF}]`},
		{`\S`, `[^\t\n\x0B\f\r ]`},
		{`\Q.*\E+`, `\.\*+`},
		{`(?<user>\w+)@(?:x|y){1,3}?`, `(?<user>\w+)@(?:x|y){1,3}?`},
		{`\/\,\ `, `\/\,\ `},
	} {
		got, err := translateJavaRegex(tc.java)
		require.NoError(t, err, tc.java)
		require.Equal(t, tc.goRE, got, tc.java)
	}
}
