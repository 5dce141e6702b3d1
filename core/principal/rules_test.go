package principal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Cases from Kafka's SslPrincipalMapperTest; Java string literals are
// written here as Go raw strings holding the same characters.

func TestValidRulesKafka(t *testing.T) {
	for _, rules := range []string{
		`DEFAULT`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT`,
		`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/`,
		`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L`,
		`RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U`,
		`RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/`,
		`RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/`,
	} {
		_, err := ParseRules(rules)
		require.NoError(t, err, rules)
	}
}

func TestInvalidRulesKafka(t *testing.T) {
	for _, tc := range []struct{ rules, err string }{
		{`default`, `"default", unmatched substring: "default"`},
		{`DEFAUL`, `"DEFAUL", unmatched substring: "DEFAUL"`},
		{`DEFAULT/L`, `"DEFAULT/L", unmatched substring: "/L"`},
		{`DEFAULT/U`, `"DEFAULT/U", unmatched substring: "/U"`},
		{`RULE:CN=(.*?),OU=ServiceUsers.*/$1`, `"RULE:CN=(.*?)", unmatched substring: "RULE:CN=(.*?)"`},
		{`rule:^CN=(.*?),OU=ServiceUsers.*$/$1/`, `"rule:^CN=(.*?)", unmatched substring`},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U`, `unmatched substring: "/U"`},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/L`, `"RULE:^CN=(.*?)", unmatched substring`},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/U`, `"RULE:^CN=(.*?)", unmatched substring`},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/LU`, `"RULE:^CN=(.*?)", unmatched substring`},
		// Beyond Kafka's tests: a later invalid rule fails the whole value.
		{`DEFAULT, RULE:x/y/Q`, `unmatched substring: "Q"`},
		{`SAN:FOO:x/y/`, `"SAN:FOO:x/y/", unmatched substring`},
		{`SAN:DNS:x/y`, `"SAN:DNS:x/y", unmatched substring`},
		// Kafka's Matcher.find skips what its splitter cannot match, dropping
		// these RULEs silently (the config becomes [DEFAULT]); Strata refuses.
		{"RULE:a/b/\nDEFAULT", `"RULE:a/b/" is not part of any rule`},
		{"RULE:a/b/\u2029, DEFAULT\u0085", `"RULE:a/b/\u2029" is not part of any rule`},
		{"DEFAULT, RULE:a/b/\u2029x", `"RULE:a/b/\u2029" is not part of any rule`},
	} {
		t.Run(tc.rules, func(t *testing.T) {
			_, err := ParseRules(tc.rules)
			require.ErrorIs(t, err, ErrInvalidRule)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestSslPrincipalMapperKafka(t *testing.T) {
	rules, err := ParseRules(`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, ` +
		`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, ` +
		`RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, ` +
		`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, ` +
		`DEFAULT`)
	require.NoError(t, err)
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		got, err := rules.MapDN(dn)
		require.NoError(t, err, dn)
		require.Equal(t, want, got, dn)
	}
}

func TestRulesSplittingKafka(t *testing.T) {
	for _, tc := range []struct{ want, rules string }{
		// seeing is believing
		{`[]`, ``},
		{`[DEFAULT]`, `DEFAULT`},
		{`[RULE:/]`, `RULE://`},
		{`[RULE:/.*]`, `RULE:/.*/`},
		{`[RULE:/.*/L]`, `RULE:/.*/L`},
		{`[RULE:/, DEFAULT]`, `RULE://,DEFAULT`},
		{`[RULE:/, DEFAULT]`, `  RULE:// ,  DEFAULT  `},
		{`[RULE:   /     , DEFAULT]`, `  RULE:   /     / ,  DEFAULT  `},
		{`[RULE:  /     /U, DEFAULT]`, `  RULE:  /     /U   ,DEFAULT  `},
		{`[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]`, `  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  `},
		// empty rules are ignored
		{`[]`, `,   , , ,      , , ,   `},
		{`[RULE:/, DEFAULT]`, `,,RULE://,,,DEFAULT,,`},
		{`[RULE: /   , DEFAULT]`, `,  , RULE: /   /    ,,,   DEFAULT, ,   `},
		{`[RULE:   /  /U, DEFAULT]`, `     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,`},
		// escape sequences
		{`[RULE:\/\\\(\)\n\t/\/\/]`, `RULE:\/\\\(\)\n\t/\/\//`},
		{`[RULE:\**\/+/*/L, RULE:\/*\**/**]`, `RULE:\**\/+/*/L,RULE:\/*\**/**/`},
		// rules rule
		{
			`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`,
			`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`,
		},
		// Java's '$' in the splitter also stops before a final line
		// terminator that trim() leaves (U+2028 is above U+0020).
		{`[DEFAULT]`, "DEFAULT\u2028"},
		// Strata's SAN rules split the same way.
		{`[SAN:DNS:(.*)\.example\.com/$1, SAN:URI:spiffe:\/\/x\/(.*)/$1/L, DEFAULT]`, ` SAN:DNS:(.*)\.example\.com/$1/ , SAN:URI:spiffe:\/\/x\/(.*)/$1/L,DEFAULT`},
	} {
		t.Run(tc.rules, func(t *testing.T) {
			rules, err := ParseRules(tc.rules)
			require.NoError(t, err)
			require.Equal(t, "SslPrincipalMapper(rules = "+tc.want+")", rules.String())
		})
	}
}

func TestCommaWithWhitespaceKafka(t *testing.T) {
	rules, err := ParseRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	require.NoError(t, err)
	got, err := rules.MapDN(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`)
	require.NoError(t, err)
	require.Equal(t, `Tkac\, Adam`, got)
}

func TestNoMatchingRule(t *testing.T) {
	for _, value := range []string{``, `, ,`, `RULE:^CN=(.*),OU=x$/$1/`} {
		rules, err := ParseRules(value)
		require.NoError(t, err)
		_, err = rules.MapDN("CN=a,OU=y")
		require.ErrorIs(t, err, ErrNoMatchingRule, value)
		require.ErrorContains(t, err, `no rules apply to "CN=a,OU=y"`)
	}
}

// Java's String.replaceAll semantics, which Kafka applies after matches().
func TestReplaceAllJavaSemantics(t *testing.T) {
	for _, tc := range []struct{ rule, dn, want string }{
		// An empty match right after the whole-string match is replaced too.
		{`RULE:(.*)/x$1/`, "ab", "xabx"},
		{`RULE:.*/x/`, "abc", "xx"},
		// Anchored patterns replace once.
		{`RULE:^(.*)$/x$1/`, "ab", "xab"},
		// A lazy whole-string match replaces piecewise.
		{`RULE:a*?/-/`, "aa", "-a-a-"},
		// Alternation: the first alternative that matches at each position.
		{`RULE:(a|ab)(c|bcd)?/[$1|$2]/`, "abcd", "[a|bcd]"},
		// $N beyond the groups is literal (Kafka's escapeLiteralBackReferences).
		{`RULE:^CN=([^,]*)$/$1@$2/`, "CN=x", "x@$2"},
		// $12 with one group is $1 followed by "2".
		{`RULE:^CN=([^,]*)$/$12/`, "CN=x", "x2"},
		// $0 is the whole match; \$ a literal dollar.
		{`RULE:^CN=([^,]*)$/$0 \$1/`, "CN=x", "CN=x $1"},
		// One missing group among present ones.
		{`RULE:^(a)(b)(c)$/$3$4/`, "abc", "c$4"},
		// Named groups.
		{`RULE:^CN=(?<user>[^,]*),O=(?<org>.*)$/${user}@${org}/`, "CN=bob,O=acme", "bob@acme"},
		// An unmatched group reads as nothing.
		{`RULE:^CN=(x)?(.*)$/[$1]$2/`, "CN=y", "[]y"},
		// Java's '.' stops at \r; \s includes \x0B.
		{`RULE:^CN=(.*)$/$1/,DEFAULT`, "CN=a\rb", "CN=a\rb"},
		{`RULE:^CN=a\sb$/ok/`, "CN=a\x0Bb", "ok"},
		// /L and /U use full Unicode case mapping as Java does.
		{`RULE:^CN=(.*)$/$1/U`, "CN=straße", "STRASSE"},
		{`RULE:^CN=(.*)$/$1/L`, "CN=ΟΔΟΣ", "οδος"},
		{`RULE:^CN=(.*)$/$1/L`, "CN=ALICE", "alice"},
		{`RULE:^CN=(.*)$/$1/L`, "CN=İ", "i\u0307"},
		{`RULE:^CN=(.*)$/$1/U`, "CN=ﬁx", "FIX"},
		{`RULE:^CN=(.*)$/$1/L`, "CN=I", "i"}, // English, not Turkish: no dotless ı
	} {
		t.Run(tc.rule+" "+tc.dn, func(t *testing.T) {
			rules, err := ParseRules(tc.rule)
			require.NoError(t, err)
			got, err := rules.MapDN(tc.dn)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestUnsupportedRegex(t *testing.T) {
	for _, tc := range []struct{ pattern, err string }{
		{`^CN=(a)\1$`, "backreference"},
		{`^CN=(?<n>a)\k<n>$`, "backreference"},
		{`^CN=\0101$`, "octal"},
		{`^CN=(?=a)a$`, "lookahead"},
		{`^CN=(?!a)b$`, "lookahead"},
		{`^CN=(?<=a)b$`, "lookbehind"},
		{`^CN=(?<!a)b$`, "lookbehind"},
		{`^CN=(?>a)$`, "atomic"},
		{`^CN=a*+$`, "possessive"},
		{`^CN=a++$`, "possessive"},
		{`^CN=a?+$`, "possessive"},
		{`^CN=a{2}+$`, "possessive"},
		{`(?i)^cn=(.*)$`, "inline flags"},
		{`^CN=(?m:a)$`, "inline flags"},
		{`^CN=(?U)a$`, "inline flags"},
		{`^CN=(?P<n>a)$`, "inline flags or an unknown group"},
		{`^CN=(?<_n>a)$`, "group name"},
		{`^CN=[a[b]]$`, "nested character class"},
		{`^CN=[a-z&&[^x]]$`, "intersection"},
		{`^CN=[]a]$`, "starting with ']'"},
		{`^CN=[a$`, "unclosed character class"},
		{`^CN=\p{Lu}$`, "property names"},
		{`^CN=\bx$`, `\b differs`},
		{`^CN=x\Z`, `\Z`},
		{`^CN=\Gx`, `\G`},
		{`^CN=\v`, `vertical whitespace`},
		{`^CN=\h`, `horizontal`},
		{`^CN=\u0041`, `\x{HHHH}`},
		{`^CN=\y`, `the escape \y`},
		{`^CN=\é`, `non-ASCII`},
		{`^CN=a{$`, `'{'`},
		{`^CN=(a$`, `missing closing )`},
		{`^CN=a{1001}$`, `invalid repeat count`},
		{`^CN=(?<a>x)(?<a>y)$`, `<a> is already defined`},
		{`*CN`, `missing argument to repetition operator`},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			_, err := ParseRules("RULE:" + tc.pattern + "/x/")
			require.ErrorIs(t, err, ErrInvalidRule)
			require.ErrorIs(t, err, ErrUnsupportedRegex)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestSupportedRegexConstructs(t *testing.T) {
	for _, tc := range []struct{ pattern, dn string }{
		{`^CN=\Q(a.b)\E,O=x$`, "CN=(a.b),O=x"},
		{`^CN=\Q(a.b)$`, "CN=(a.b)$"},
		{`^CN=[\s,x]+$`, "CN=x, x"},
		{`^CN=[\S]+$`, "CN=abc"},
		{`^CN=\S+$`, "CN=abc"},
		{`^CN=\d{2,3}$`, "CN=123"},
		{`^CN=\x41\x{42}$`, "CN=AB"},
		{`^CN=(?:a|b)+$`, "CN=abba"},
		{`\ACN=a\z`, "CN=a"},
		{`^CN=a\-b\/c$`, "CN=a-b/c"},
		{`^CN=[^,]*,DC=[a-z]+}$`, "CN=q,DC=x}"},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			rules, err := ParseRules("RULE:" + tc.pattern + "/ok/")
			require.NoError(t, err)
			got, err := rules.MapDN(tc.dn)
			require.NoError(t, err)
			require.Equal(t, "ok", got)
		})
	}
	// Java's '.' does not match \r, U+0085, U+2028 or U+2029; \S excludes \x0B.
	for _, tc := range []struct{ pattern, dn string }{
		{`^CN=.x$`, "CN=\rx"},
		{`^CN=.x$`, "CN=\u0085x"},
		{`^CN=.x$`, "CN=\u2028x"},
		{`^CN=\S$`, "CN=\x0B"},
		{`^CN=[\S]$`, "CN=\x0B"},
	} {
		rules, err := ParseRules("RULE:" + tc.pattern + "/ok/")
		require.NoError(t, err)
		_, err = rules.MapDN(tc.dn)
		require.ErrorIs(t, err, ErrNoMatchingRule, tc.pattern)
	}
}

func TestInvalidReplacement(t *testing.T) {
	for _, tc := range []struct{ rule, err string }{
		// Kafka does not rewrite $N when the pattern has no group, and
		// Java then throws "No group 1" when a certificate matches.
		{`RULE:^CN=.*$/$1/`, "No group 1 (the pattern has 0)"},
		{`RULE:^CN=(.*)$/$x/`, "Illegal group reference"},
		{`RULE:^CN=(.*)$/$/`, "group index is missing"},
		{`RULE:^CN=(.*)$/${}/`, "0 length name"},
		{`RULE:^CN=(.*)$/${a/`, "missing trailing '}'"},
		{`RULE:^CN=(.*)$/${1a}/`, "starts with digit"},
		{`RULE:^CN=(.*)$/${nope}/`, "No group with name {nope}"},
		{`RULE:^CN=(.*)$/$99999999999/`, "too large"},
		// Kafka's off-by-one: with one group "$2$3" becomes "\$\2$3", and
		// Java throws on $3.
		{`RULE:^CN=(.*)$/$2$3/`, "No group 3"},
		// With three groups "$4$5" becomes "\$\4$5": Java throws on $5.
		{`RULE:^(a)(b)(c)$/$4$5/`, "No group 5"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			_, err := ParseRules(tc.rule)
			require.ErrorIs(t, err, ErrInvalidRule)
			require.ErrorIs(t, err, ErrInvalidReplacement)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestUnmappableName(t *testing.T) {
	rules, err := ParseRules(`RULE:^CN=([^,]*).*$/$1/, DEFAULT`)
	require.NoError(t, err)
	for _, dn := range []string{"CN=a\n", "CN=a,O=b\u2028", "CN=\xff"} {
		_, err := rules.MapDN(dn)
		require.ErrorIs(t, err, ErrUnmappableName, dn)
	}
	// DEFAULT alone needs no regexp and returns the DN unchanged.
	def, err := ParseRules(DefaultRules)
	require.NoError(t, err)
	got, err := def.MapDN("CN=a\n")
	require.NoError(t, err)
	require.Equal(t, "CN=a\n", got)
}
