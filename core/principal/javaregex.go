package principal

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrUnsupportedRegex is wrapped by the error for a rule pattern that uses
// a java.util.regex construct Go's RE2 cannot run, or runs with a different
// meaning. Such a rule is refused when the rules are parsed, never guessed
// at when a certificate arrives.
var ErrUnsupportedRegex = errors.New("unsupported regular expression")

// javaDot is Java's '.' without DOTALL: any character but the line
// terminators \n, \r, U+0085, U+2028 and U+2029 (Go's '.' only excludes \n).
const javaDot = `[^\n\r\x{85}\x{2028}\x{2029}]`

// javaSpaceClass and javaNotSpaceRanges are Java's \s, [ \t\n\x0B\f\r]
// (Go's \s lacks \x0B), and the ranges of its complement, \S.
const (
	javaSpaceRanges    = `\t\n\x0B\f\r `
	javaNotSpaceRanges = `\x00-\x08\x0E-\x1F\x21-\x{10FFFF}`
)

// javaLineTerminators are the characters Java's '$' may stop before when
// they end the input.
const javaLineTerminators = "\n\r\u0085\u2028\u2029"

// refusedEscapes names, for each escape letter Java accepts and Strata
// refuses, the reason.
var refusedEscapes = map[rune]string{
	'b': `\b differs between JDK versions (Unicode before JDK 19) and from RE2`,
	'B': `\B differs between JDK versions (Unicode before JDK 19) and from RE2`,
	'Z': `\Z (end before a final line terminator) has no RE2 equivalent`,
	'G': `\G (end of the previous match) has no RE2 equivalent`,
	'R': `\R (linebreak matcher) has no RE2 equivalent`,
	'X': `\X (grapheme cluster) has no RE2 equivalent`,
	'h': `\h (horizontal whitespace) has no RE2 equivalent`,
	'H': `\H has no RE2 equivalent`,
	'v': `\v is vertical whitespace in Java but only \x0B in RE2`,
	'V': `\V has no RE2 equivalent`,
	'p': `\p{...} property names differ between Java and RE2`,
	'P': `\P{...} property names differ between Java and RE2`,
	'e': `\e is not supported by RE2; use \x1B`,
	'c': `\cX is not supported by RE2; use \xHH`,
	'u': `\uHHHH is not supported by RE2; use \x{HHHH}`,
	'N': `\N{name} is not supported by RE2`,
	'k': `\k<name> is a backreference, which RE2 cannot run`,
	'E': `\E without \Q`,
}

var repetition = regexp.MustCompile(`^\{[0-9]+(,[0-9]*)?\}`)

// translateJavaRegex turns a java.util.regex pattern into a Go regexp
// that matches exactly the same strings with the same groups, or refuses
// it. It accepts the common ground (literals, classes without nesting or
// intersection, \d \w \s and their negations, \t \n \r \f \a \xHH \x{H..}
// \A \z, ^ $ . | groups, named groups (?<name>..), non-capturing groups,
// greedy and lazy quantifiers, \Q..\E) and rewrites '.' and \s/\S to
// Java's meaning. It refuses, with a reason: backreferences (\1, \k<..>),
// lookahead and lookbehind, atomic groups, possessive quantifiers, inline
// flags (Java's (?i) folds ASCII only where RE2 folds Unicode; (?m)
// differs on line terminators; (?U) means different things), nested
// classes and intersections ([a[b]], [a&&b]), octal escapes, \p{..},
// word boundaries and the other escapes of refusedEscapes.
func translateJavaRegex(p string) (string, error) {
	if !utf8.ValidString(p) {
		return "", fmt.Errorf("%w: pattern is not valid UTF-8", ErrUnsupportedRegex)
	}
	refuse := func(what string) (string, error) {
		return "", fmt.Errorf("%w: %s in %q", ErrUnsupportedRegex, what, p)
	}
	rs := []rune(p)
	var b strings.Builder
	inClass, classStart := false, false
	for i := 0; i < len(rs); {
		c := rs[i]
		if c == '\\' {
			if i+1 >= len(rs) {
				return refuse("a trailing backslash")
			}
			d := rs[i+1]
			switch {
			case d == 'Q':
				if inClass {
					return refuse(`\Q inside a character class`)
				}
				rest := string(rs[i+2:])
				quoted, _, found := strings.Cut(rest, `\E`)
				b.WriteString(regexp.QuoteMeta(quoted))
				i += 2 + utf8.RuneCountInString(quoted)
				if found {
					i += 2
				}
				continue
			case d >= '0' && d <= '9':
				return refuse(`a backreference or octal escape (\` + string(d) + `): RE2 has no backreferences`)
			case d == 's':
				if inClass {
					b.WriteString(javaSpaceRanges)
				} else {
					b.WriteString("[" + javaSpaceRanges + "]")
				}
			case d == 'S':
				if inClass {
					b.WriteString(javaNotSpaceRanges)
				} else {
					b.WriteString("[^" + javaSpaceRanges + "]")
				}
			case strings.ContainsRune("dDwWtnrfaxAz", d):
				b.WriteRune('\\')
				b.WriteRune(d)
			case ('a' <= d && d <= 'z') || ('A' <= d && d <= 'Z'):
				if why, ok := refusedEscapes[d]; ok {
					return refuse(why)
				}
				return refuse(`the escape \` + string(d))
			case d >= utf8.RuneSelf:
				return refuse(`an escaped non-ASCII character`)
			default: // ASCII punctuation, space or control: itself in both
				b.WriteRune('\\')
				b.WriteRune(d)
			}
			i += 2
			classStart = false
			continue
		}
		if inClass {
			switch {
			case c == '[':
				return refuse("a nested character class or union ([a[b]])")
			case c == ']' && classStart:
				return refuse("a character class starting with ']'")
			case c == ']':
				inClass = false
			case c == '&' && i+1 < len(rs) && rs[i+1] == '&':
				return refuse("a character class intersection (&&)")
			}
			b.WriteRune(c)
			classStart = false
			i++
			continue
		}
		switch c {
		case '[':
			b.WriteRune('[')
			i++
			if i < len(rs) && rs[i] == '^' {
				b.WriteRune('^')
				i++
			}
			inClass, classStart = true, true
			continue
		case '.':
			b.WriteString(javaDot)
		case '(':
			if i+1 < len(rs) && rs[i+1] == '?' {
				n, err := translateGroupOpen(rs[i:], refuse)
				if err != nil {
					return "", err
				}
				b.WriteString(string(rs[i : i+n]))
				i += n
				continue
			}
			b.WriteRune('(')
		case '*', '+', '?':
			b.WriteRune(c)
			if i+1 < len(rs) && rs[i+1] == '+' {
				return refuse("a possessive quantifier (" + string(c) + "+)")
			}
		case '{':
			m := repetition.FindString(string(rs[i:]))
			if m == "" {
				return refuse("a '{' that does not start a repetition {n}, {n,} or {n,m}")
			}
			b.WriteString(m)
			i += len(m)
			if i < len(rs) && rs[i] == '+' {
				return refuse("a possessive quantifier (" + m + "+)")
			}
			continue
		default:
			b.WriteRune(c)
		}
		i++
	}
	if inClass {
		return refuse("an unclosed character class")
	}
	return b.String(), nil
}

// translateGroupOpen checks the "(?" group opening at the start of rs and
// returns how many runes of it to copy unchanged.
func translateGroupOpen(rs []rune, refuse func(string) (string, error)) (int, error) {
	fail := func(what string) (int, error) {
		_, err := refuse(what)
		return 0, err
	}
	if len(rs) < 3 {
		return fail("an incomplete group")
	}
	switch rs[2] {
	case ':':
		return 3, nil
	case '=', '!':
		return fail("lookahead (?" + string(rs[2]) + "...): RE2 has no lookaround")
	case '>':
		return fail("an atomic group (?>...)")
	case '<':
		if len(rs) > 3 && (rs[3] == '=' || rs[3] == '!') {
			return fail("lookbehind (?<" + string(rs[3]) + "...): RE2 has no lookaround")
		}
		// Java's named group: a letter, then letters and digits.
		j := 3
		for j < len(rs) && (isASCIILetter(rs[j]) || (j > 3 && '0' <= rs[j] && rs[j] <= '9')) {
			j++
		}
		if j == 3 || j >= len(rs) || rs[j] != '>' {
			return fail("a group name that Java refuses (a letter, then letters and digits)")
		}
		return j + 1, nil
	}
	return fail("inline flags or an unknown group construct (?" + string(rs[2]) + "...)")
}

func isASCIILetter(r rune) bool { return ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') }

// javaPattern is a compiled java.util.regex pattern as a rule uses it:
// matches() against the whole input, then String.replaceAll.
type javaPattern struct {
	source string         // as written in the rule
	full   *regexp.Regexp // \A(?:p)\z, for Matcher.matches
	search *regexp.Regexp // p, for Matcher.find from the start
	// after finds from an offset with the character before it as context:
	// \A(?s:.)(?s:.)*?(p), the match being group 1.
	after *regexp.Regexp
}

func compileJavaPattern(source string) (*javaPattern, error) {
	tr, err := translateJavaRegex(source)
	if err != nil {
		return nil, err
	}
	search, err := regexp.Compile(tr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrUnsupportedRegex, source, err)
	}
	seen := map[string]bool{}
	for _, name := range search.SubexpNames() {
		if name != "" && seen[name] {
			return nil, fmt.Errorf("%w: named capturing group <%s> is already defined in %q", ErrUnsupportedRegex, name, source)
		}
		seen[name] = true
	}
	full, err := regexp.Compile(`\A(?:` + tr + `)\z`)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrUnsupportedRegex, source, err)
	}
	after, err := regexp.Compile(`\A(?s:.)(?s:.)*?(` + tr + `)`)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrUnsupportedRegex, source, err)
	}
	return &javaPattern{source: source, full: full, search: search, after: after}, nil
}

// groups is the number of capturing groups (Matcher.groupCount).
func (p *javaPattern) groups() int { return p.search.NumSubexp() }

// findFrom is Matcher.find starting at byte offset from: the leftmost
// match starting at or after from, seen in the context of all of s. It
// returns the submatch indexes into s, or nil.
func (p *javaPattern) findFrom(s string, from int) []int {
	if from == 0 {
		return p.search.FindStringSubmatchIndex(s)
	}
	_, w := utf8.DecodeLastRuneInString(s[:from])
	base := from - w
	m := p.after.FindStringSubmatchIndex(s[base:])
	if m == nil {
		return nil
	}
	out := m[2:]
	for i := range out {
		if out[i] >= 0 {
			out[i] += base
		}
	}
	return out
}

// replaceAll is Java's String.replaceAll(pattern, replacement): unlike
// Go's ReplaceAll it also replaces an empty match that starts where the
// previous match ended ("abc".replaceAll(".*", "x") is "xx" in Java).
// After an empty match the search moves on one character (a rune here,
// a UTF-16 unit in Java: they differ only inside a supplementary
// character).
func (p *javaPattern) replaceAll(s string, repl replacement) string {
	var out strings.Builder
	first, last, appended := -1, 0, 0
	for {
		next, ok := searchFrom(s, first, last)
		if !ok {
			break
		}
		m := p.findFrom(s, next)
		if m == nil {
			break
		}
		out.WriteString(s[appended:m[0]])
		repl.expand(&out, s, m)
		appended = m[1]
		first, last = m[0], m[1]
	}
	out.WriteString(s[appended:])
	return out.String()
}

// searchFrom is where Java's Matcher.find() searches after a match
// [first, last): at last, or one character on after an empty match (ok
// is false when that is past the end of s). Before the first match, first
// is -1 and last 0.
func searchFrom(s string, first, last int) (next int, ok bool) {
	if last != first {
		return last, true
	}
	if last >= len(s) {
		return 0, false
	}
	_, w := utf8.DecodeRuneInString(s[last:])
	return last + w, true
}

// replacement is a rule's replacement string compiled against its
// pattern: literal text and group references, as Java's
// Matcher.appendReplacement reads it after Kafka's
// escapeLiteralBackReferences.
type replacement struct {
	parts []replacementPart
}

type replacementPart struct {
	literal string
	group   int // -1 for a literal
}

func (r replacement) expand(out *strings.Builder, s string, m []int) {
	for _, part := range r.parts {
		if part.group < 0 {
			out.WriteString(part.literal)
			continue
		}
		if start, end := m[2*part.group], m[2*part.group+1]; start >= 0 && end >= 0 {
			out.WriteString(s[start:end])
		}
	}
}

// ErrInvalidReplacement is wrapped by the error for a replacement that
// Java's Matcher would throw on. Kafka throws when the rule first matches
// a certificate; Strata refuses the rules when they are parsed.
var ErrInvalidReplacement = errors.New("invalid replacement")

var backReference = regexp.MustCompile(`\$([0-9]+)`)

// kafkaEscapeLiteralBackReferences is Kafka's
// SslPrincipalMapper.Rule.escapeLiteralBackReferences (taken from NiFi):
// a $N naming a group the pattern lacks (after dropping trailing digits
// while N > groups and N >= 10) becomes a literal "\$N". Kafka keeps
// matching against the original string while inserting backslashes into
// the copy, so from the second insertion on the backslash lands one place
// early per earlier insertion; that is reproduced here, since it decides
// what Kafka's rule produces.
func kafkaEscapeLiteralBackReferences(unescaped string, groups int) (string, error) {
	if groups == 0 {
		return unescaped, nil
	}
	value := unescaped
	for _, m := range backReference.FindAllStringSubmatchIndex(unescaped, -1) {
		num := unescaped[m[2]:m[3]]
		if strings.HasPrefix(num, "0") {
			continue
		}
		n, err := strconv.ParseInt(num, 10, 32)
		if err != nil {
			return "", fmt.Errorf("%w: group reference $%s is too large", ErrInvalidReplacement, num)
		}
		for n > int64(groups) && n >= 10 {
			n /= 10
		}
		if n > int64(groups) {
			groupStart := m[2]
			value = value[:groupStart-1] + `\` + value[groupStart-1:]
		}
	}
	return value, nil
}

// compileReplacement reads repl as Kafka's rule does: its
// escapeLiteralBackReferences, then Java's Matcher.appendReplacement rules
// (\x is a literal x, $N the longest group number that exists, ${name} a
// named group, anything else after '$' an error).
func compileReplacement(repl string, p *javaPattern) (replacement, error) {
	groups := p.groups()
	escaped, err := kafkaEscapeLiteralBackReferences(repl, groups)
	if err != nil {
		return replacement{}, err
	}
	fail := func(format string, args ...any) (replacement, error) {
		return replacement{}, fmt.Errorf("%w: %q: %s", ErrInvalidReplacement, repl, fmt.Sprintf(format, args...))
	}
	var r replacement
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			r.parts = append(r.parts, replacementPart{literal: lit.String(), group: -1})
			lit.Reset()
		}
	}
	rs := []rune(escaped)
	for i := 0; i < len(rs); {
		c := rs[i]
		switch c {
		case '\\':
			i++
			if i == len(rs) {
				return fail("character to be escaped is missing")
			}
			lit.WriteRune(rs[i])
			i++
		case '$':
			i++
			if i == len(rs) {
				return fail("Illegal group reference: group index is missing")
			}
			var ref int
			if rs[i] == '{' {
				i++
				j := i
				for j < len(rs) && (isASCIILetter(rs[j]) || ('0' <= rs[j] && rs[j] <= '9')) {
					j++
				}
				name := string(rs[i:j])
				switch {
				case name == "":
					return fail("named capturing group has 0 length name")
				case j == len(rs) || rs[j] != '}':
					return fail("named capturing group is missing trailing '}'")
				case '0' <= name[0] && name[0] <= '9':
					return fail("capturing group name {%s} starts with digit character", name)
				}
				ref = p.search.SubexpIndex(name)
				if ref < 0 {
					return fail("No group with name {%s}", name)
				}
				i = j + 1
			} else {
				ref = int(rs[i] - '0')
				if ref < 0 || ref > 9 {
					return fail("Illegal group reference")
				}
				i++
				for i < len(rs) && '0' <= rs[i] && rs[i] <= '9' {
					next := ref*10 + int(rs[i]-'0')
					if next > groups {
						break
					}
					ref = next
					i++
				}
				if ref > groups {
					return fail("No group %d (the pattern has %d)", ref, groups)
				}
			}
			flush()
			r.parts = append(r.parts, replacementPart{group: ref})
		default:
			lit.WriteRune(c)
			i++
		}
	}
	flush()
	return r, nil
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}
