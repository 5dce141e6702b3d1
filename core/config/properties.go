package config

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Property is one key=value of a properties file, with the line it
// started on (for error messages).
type Property struct {
	Key, Value string
	Line       int
}

// ParseProperties reads Java-properties text as Kafka's server.properties
// uses it: one key=value (or key:value, or key value) per line; lines
// starting with # or ! are comments; surrounding whitespace is trimmed; a
// line ending in an odd number of backslashes continues on the next line;
// \t \n \r \f \uXXXX and \<char> escapes are decoded. Properties come back
// in file order (a later duplicate wins when applied in order).
func ParseProperties(r io.Reader) ([]Property, error) {
	var props []Property
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxPropertiesLineBytes)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		start := lineNo
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continues(line) && sc.Scan() {
			lineNo++
			line = line[:len(line)-1] + strings.TrimLeft(sc.Text(), " \t\f")
		}
		if continues(line) {
			line = line[:len(line)-1] // continuation at EOF: drop the backslash
		}
		key, value := splitProperty(line)
		k, err := unescape(key)
		if err != nil {
			return nil, fmt.Errorf("line %d: key %q: %w", start, key, err)
		}
		v, err := unescape(value)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", start, k, err)
		}
		props = append(props, Property{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v), Line: start})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", lineNo+1, err)
	}
	return props, nil
}

// maxPropertiesLineBytes bounds one physical line of a properties file.
const maxPropertiesLineBytes = 1 << 20

// continues reports whether line ends in an odd number of backslashes.
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits at the first unescaped '=', ':' or whitespace; an
// '=' or ':' after whitespace separators is part of the separator.
func splitProperty(line string) (key, value string) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i >= len(line) {
		return line, ""
	}
	key = line[:i]
	rest := strings.TrimLeft(line[i:], " \t\f")
	if line[i] == '=' || line[i] == ':' {
		rest = strings.TrimLeft(line[i+1:], " \t\f")
	} else if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if len(s)-(i+1) < 4 {
				return "", fmt.Errorf("malformed \\u escape %q", s[i-1:])
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\u escape %q", s[i-1:i+5])
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// SplitListLoose splits a list value at commas, trims the items and
// drops empty ones, as Kafka's server.properties lists are read
// (" a, ,b" is a and b).
func SplitListLoose(value string) []string {
	var out []string
	for part := range strings.SplitSeq(value, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
