package principal

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// DefaultRules is the default of ssl.principal.mapping.rules
// (BrokerSecurityConfigs.DEFAULT_SSL_PRINCIPAL_MAPPING_RULES): the whole
// distinguished name is the principal name.
const DefaultRules = "DEFAULT"

// ErrInvalidRule is wrapped by the error for a rule ParseRules refuses:
// one Kafka's SslPrincipalMapper refuses (IllegalArgumentException
// "Invalid rule"), or one whose pattern or replacement Strata refuses
// (ErrUnsupportedRegex, ErrInvalidReplacement).
var ErrInvalidRule = errors.New("invalid ssl.principal.mapping.rules rule")

// ErrNoMatchingRule is wrapped by the error Map returns when no rule
// applies: Kafka's SslPrincipalMapper.NoMatchingRule. Kafka then fails the
// connection's authentication; so should the caller.
var ErrNoMatchingRule = errors.New("no rules apply")

// ErrUnmappableName is wrapped by the error for an identity the rules
// cannot be applied to faithfully: one that is not valid UTF-8, or that
// ends with a line terminator (where Java's '$' also matches before it and
// RE2's does not).
var ErrUnmappableName = errors.New("name cannot be mapped")

// Source says what a rule's pattern is matched against.
type Source int

// The sources a rule can read. SourceDN is the only one Kafka has.
const (
	// SourceDN is the subject distinguished name in RFC 2253 form
	// (FormatRFC2253): RULE: and DEFAULT.
	SourceDN Source = iota
	// SourceDNS is each dNSName SAN in certificate order (SAN:DNS:).
	SourceDNS
	// SourceURI is each uniformResourceIdentifier SAN (SAN:URI:), as Go's
	// url.URL.String renders it (a SPIFFE ID such as
	// spiffe://example.org/ns/prod/sa/etl reads back unchanged).
	SourceURI
	// SourceEmail is each rfc822Name SAN (SAN:EMAIL:).
	SourceEmail
	// SourceIP is each iPAddress SAN as net.IP.String renders it (SAN:IP:).
	SourceIP
)

var sourceNames = map[string]Source{"DNS": SourceDNS, "URI": SourceURI, "EMAIL": SourceEmail, "IP": SourceIP}

// String is the keyword of the source as rules spell it.
func (s Source) String() string {
	switch s {
	case SourceDN:
		return "DN"
	case SourceDNS:
		return "DNS"
	case SourceURI:
		return "URI"
	case SourceEmail:
		return "EMAIL"
	case SourceIP:
		return "IP"
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// Identity is what a certificate says about its holder, in the forms the
// rules read: the subject DN in RFC 2253 form and the subject alternative
// names by kind, each in certificate order. IdentityOf builds it from an
// *x509.Certificate.
type Identity struct {
	DN    string
	DNS   []string
	URI   []string
	Email []string
	IP    []string
}

func (id Identity) values(s Source) []string {
	switch s {
	case SourceDNS:
		return id.DNS
	case SourceURI:
		return id.URI
	case SourceEmail:
		return id.Email
	case SourceIP:
		return id.IP
	}
	return []string{id.DN}
}

// Rule is one parsed rule of ssl.principal.mapping.rules.
type Rule struct {
	// Default is the DEFAULT rule: the whole DN.
	Default bool
	// Source is what the pattern is matched against.
	Source Source
	// Pattern and Replacement are as written in the rule.
	Pattern, Replacement string
	// Lower and Upper are the /L and /U suffixes: the result is lower- or
	// upper-cased as Java's String.toLowerCase(Locale.ENGLISH) does.
	Lower, Upper bool

	pattern *javaPattern
	repl    replacement
}

// String renders the rule as Kafka's SslPrincipalMapper.Rule.toString
// does (which drops the trailing '/': "RULE:pattern/replacement/L"), SAN
// rules as "SAN:DNS:pattern/replacement".
func (r Rule) String() string {
	if r.Default {
		return "DEFAULT"
	}
	var b strings.Builder
	if r.Source == SourceDN {
		b.WriteString("RULE:")
	} else {
		b.WriteString("SAN:" + r.Source.String() + ":")
	}
	b.WriteString(r.Pattern + "/" + r.Replacement)
	if r.Lower {
		b.WriteString("/L")
	} else if r.Upper {
		b.WriteString("/U")
	}
	return b.String()
}

// apply returns the rule's result for one value and whether it matched.
func (r Rule) apply(value string) (string, bool) {
	if r.Default {
		return value, true
	}
	if !r.pattern.full.MatchString(value) {
		return "", false
	}
	out := r.pattern.replaceAll(value, r.repl)
	switch {
	case r.Lower:
		out = cases.Lower(language.English).String(out)
	case r.Upper:
		out = cases.Upper(language.English).String(out)
	}
	return out, true
}

// Rules is a parsed ssl.principal.mapping.rules value: rules tried in
// order, the first that matches deciding the name.
type Rules struct {
	rules []Rule
}

// List returns the rules in order (a copy).
func (rs Rules) List() []Rule { return append([]Rule(nil), rs.rules...) }

// String renders the rules as Kafka's SslPrincipalMapper.toString does,
// "SslPrincipalMapper(rules = [RULE:.../$1/L, DEFAULT])".
func (rs Rules) String() string {
	parts := make([]string, len(rs.rules))
	for i, r := range rs.rules {
		parts[i] = r.String()
	}
	return "SslPrincipalMapper(rules = [" + strings.Join(parts, ", ") + "])"
}

// The rule grammar, Kafka's SslPrincipalMapper.RULE_PATTERN with Strata's
// SAN alternative before the catch-all, and Java's '.', '\s' and '$'
// spelled out for RE2 (Go's regexp chooses the same leftmost-first match
// a backtracking engine such as Java's does, so the split is Kafka's):
//
//	(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|SAN:(DNS|URI|EMAIL|IP):((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)
//
// A config in which no rule starts with "SAN:" splits exactly as in Kafka:
// a piece starting with "SAN:" is one Kafka refuses anyway.
const (
	jDot         = javaDot
	jSpace       = "[" + javaSpaceRanges + "]"
	jEnd         = `(?:\r\n|[\n\r\x{85}\x{2028}\x{2029}])?\z`
	ruleBody     = `((?:\\` + jDot + `|[^\\/])*)/((?:\\` + jDot + `|[^\\/])*)/([LU]?)` + jDot + `*?`
	rulePattern  = `(DEFAULT)|RULE:` + ruleBody + `|SAN:(DNS|URI|EMAIL|IP):` + ruleBody + `|(` + jDot + `*?)`
	groupDefault = 1
	groupPattern = 2
	groupRepl    = 3
	groupCase    = 4
	groupSAN     = 5
	groupSANPat  = 6
	groupSANRepl = 7
	groupSANCase = 8
)

var (
	ruleSplitter = regexp.MustCompile(jSpace + `*(` + rulePattern + `)` + jSpace + `*(?:,` + jSpace + `*|` + jEnd + `)`)
	ruleParser   = regexp.MustCompile(`\A(?:` + rulePattern + `)`)
)

// javaTrim is Java's String.trim: it strips every character <= U+0020.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// splitRules is SslPrincipalMapper.splitRules: Matcher.find over the
// trimmed value, one piece per match (group 1 of the splitter, whose
// pattern has one capture before the rule's own).
//
// Matcher.find skips text the splitter cannot match: a line terminator
// after a rule ("RULE:a/b/\nDEFAULT", or U+2029 before a comma) makes
// Kafka drop that rule without a word. Strata refuses such a value
// instead (the only value Kafka accepts that Strata refuses here).
func splitRules(value string) ([]string, error) {
	s := javaTrim(value)
	var pieces []string
	first, last := -1, 0
	for {
		next, ok := searchFrom(s, first, last)
		if !ok {
			break
		}
		m := findFromSplitter(s, next)
		if m == nil {
			if next < len(s) {
				return nil, fmt.Errorf("%w: %q is not part of any rule (Kafka would drop it silently)", ErrInvalidRule, s[next:])
			}
			break
		}
		if m[0] != next {
			return nil, fmt.Errorf("%w: %q is not part of any rule (Kafka would drop it silently)", ErrInvalidRule, s[next:m[0]])
		}
		pieces = append(pieces, s[m[2]:m[3]])
		first, last = m[0], m[1]
	}
	return pieces, nil
}

// findFromSplitter runs the splitter from byte offset from; the splitter
// has no anchors at its start, so s[from:] is the same search.
func findFromSplitter(s string, from int) []int {
	m := ruleSplitter.FindStringSubmatchIndex(s[from:])
	if m == nil {
		return nil
	}
	for i := range m {
		if m[i] >= 0 {
			m[i] += from
		}
	}
	return m
}

// ParseRules parses an ssl.principal.mapping.rules value the way Kafka's
// SslPrincipalMapper does: a comma-separated list (whitespace around
// commas ignored, empty entries dropped) of
//
//	DEFAULT                           the whole DN
//	RULE:pattern/replacement/         pattern must match the whole DN; the
//	RULE:pattern/replacement/L        result is the DN with every match
//	RULE:pattern/replacement/U        replaced (String.replaceAll), /L or /U
//	                                  lower- or upper-casing it
//
// where a '/' inside pattern or replacement is escaped as "\/". Strata adds
//
//	SAN:DNS:pattern/replacement/[LU]  the first dNSName SAN the pattern
//	SAN:URI:pattern/replacement/[LU]  matches as a whole, rewritten the
//	SAN:EMAIL:pattern/replacement/[LU] same way (SANs tried in certificate
//	SAN:IP:pattern/replacement/[LU]   order; none matching: next rule)
//
// for example, a SPIFFE ID spiffe://example.org/ns/prod/sa/etl to "etl.prod":
//
//	SAN:URI:^spiffe:\/\/example\.org\/ns\/([a-z]+)\/sa\/([a-z]+)$/$2.$1/
//
// (every '/' of a pattern is written "\/", as in Kafka's RULE:).
// A value that is empty or only commas holds no rules, so every Map fails
// with ErrNoMatchingRule (as in Kafka).
//
// Patterns are java.util.regex patterns limited to what RE2 runs with the
// same meaning (see translateJavaRegex); replacements follow Java's
// Matcher.appendReplacement ($1, ${name}, \$ for a literal $), after
// Kafka's rewriting of $N beyond the pattern's groups into a literal. A
// replacement Java would throw on, which Kafka only discovers when a
// certificate first matches, is refused here.
func ParseRules(value string) (Rules, error) {
	pieces, err := splitRules(value)
	if err != nil {
		return Rules{}, err
	}
	var rs Rules
	for _, piece := range pieces {
		r, ok, err := parseRule(piece)
		if err != nil {
			return Rules{}, err
		}
		if ok {
			rs.rules = append(rs.rules, r)
		}
	}
	return rs, nil
}

// parseRule is SslPrincipalMapper.parseRules for one piece: the rule
// grammar must match all of it; a piece matching only the catch-all is an
// empty entry (ok false) if empty and invalid otherwise.
func parseRule(piece string) (Rule, bool, error) {
	m := ruleParser.FindStringSubmatchIndex(piece)
	if m == nil {
		return Rule{}, false, fmt.Errorf("%w: %q", ErrInvalidRule, piece)
	}
	if m[1] != len(piece) {
		return Rule{}, false, fmt.Errorf("%w: %q, unmatched substring: %q", ErrInvalidRule, piece, piece[m[1]:])
	}
	group := func(g int) (string, bool) {
		if m[2*g] < 0 {
			return "", false
		}
		return piece[m[2*g]:m[2*g+1]], true
	}
	if _, ok := group(groupDefault); ok {
		return Rule{Default: true, Source: SourceDN}, true, nil
	}
	r := Rule{Source: SourceDN}
	pat, ok := group(groupPattern)
	repl, _ := group(groupRepl)
	caseFlag, _ := group(groupCase)
	if !ok {
		kind, isSAN := group(groupSAN)
		if !isSAN {
			return Rule{}, false, nil // empty entry: the catch-all matched ""
		}
		r.Source = sourceNames[kind]
		pat, _ = group(groupSANPat)
		repl, _ = group(groupSANRepl)
		caseFlag, _ = group(groupSANCase)
	}
	r.Pattern, r.Replacement = pat, repl
	r.Lower, r.Upper = caseFlag == "L", caseFlag == "U"
	var err error
	if r.pattern, err = compileJavaPattern(pat); err != nil {
		return Rule{}, false, fmt.Errorf("%w: %q: %w", ErrInvalidRule, piece, err)
	}
	if r.repl, err = compileReplacement(repl, r.pattern); err != nil {
		return Rule{}, false, fmt.Errorf("%w: %q: %w", ErrInvalidRule, piece, err)
	}
	return r, true, nil
}

// MapDN applies the rules to a distinguished name alone, as Kafka's
// SslPrincipalMapper.getName does; SAN rules are passed over.
func (rs Rules) MapDN(dn string) (string, error) {
	return rs.Map(Identity{DN: dn})
}

// Map applies the rules in order to id and returns the first result: a
// RULE: whose pattern matches the whole DN, a SAN: rule whose pattern
// matches one of the SANs of its kind, or DEFAULT. With none it returns
// an error wrapping ErrNoMatchingRule.
func (rs Rules) Map(id Identity) (string, error) {
	for _, r := range rs.rules {
		for _, v := range id.values(r.Source) {
			if !r.Default {
				if err := checkMappable(v); err != nil {
					return "", err
				}
			}
			if out, ok := r.apply(v); ok {
				return out, nil
			}
		}
	}
	return "", fmt.Errorf("%w to %q, rules %v", ErrNoMatchingRule, id.DN, rs.ruleList())
}

func (rs Rules) ruleList() []string {
	out := make([]string, len(rs.rules))
	for i, r := range rs.rules {
		out[i] = r.String()
	}
	return out
}

func checkMappable(v string) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrUnmappableName, v)
	}
	if v != "" && strings.ContainsRune(javaLineTerminators, lastRune(v)) {
		return fmt.Errorf("%w: %q ends with a line terminator", ErrUnmappableName, v)
	}
	return nil
}
