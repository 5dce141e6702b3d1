package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrInvalidValue is wrapped by every refusal of a value.
var ErrInvalidValue = errors.New("config: invalid value")

// Row is one config key.
type Row struct {
	// Name is the key ("segment.bytes").
	Name string
	// Type is the value's type as DescribeConfigs reports it.
	Type kmsg.ConfigType
	// Default is the value the key has when nothing sets it.
	Default string
	// ServerDefault is, for a topic key, the broker key that sets the
	// cluster's default for it ("log.segment.bytes"), or "" when there is
	// none.
	ServerDefault string
	// Doc is the key's one-line documentation (DescribeConfigs v3+).
	Doc string
	// Check parses a value (trimmed) and says what values are valid.
	Check Check
}

// Check parses a value of a key and checks it against the key's bounds;
// its text says what is valid, in the words docs/operations.md uses.
// The constructors below (IntIn, LongIn, Boolean, OneOf, ...) are
// Kafka's ConfigDef validators; Custom is for a value with a structure of
// its own (a listener list).
type Check struct {
	parse func(string) (Value, error)
	text  string
}

// validator is Check's name inside the package, where the constructors
// are Kafka's ConfigDef names.
type validator = Check

// Value is a value of a row that parsed and is within its bounds.
type Value struct {
	text string
	n    int64
	f    float64
	list []string
	// parsed is a Custom check's result.
	parsed any
}

// Int is an INT, LONG or BOOLEAN (1 for true) value.
func (v Value) Int() int64 { return v.n }

// Float is a DOUBLE value.
func (v Value) Float() float64 { return v.f }

// Bool is a BOOLEAN value.
func (v Value) Bool() bool { return v.n != 0 }

// String is the value as set, trimmed of surrounding spaces.
func (v Value) String() string { return v.text }

// List is a LIST value's items, trimmed, in the order set. The slice is
// shared: callers do not modify it.
func (v Value) List() []string { return v.list }

// Parsed is a Custom check's result (nil for the other checks).
func (v Value) Parsed() any { return v.parsed }

// Parse checks a value for the key as Kafka's ConfigDef does: the value is
// trimmed of surrounding spaces, then parsed and range checked. The error
// wraps ErrInvalidValue and says what is valid.
func (r *Row) Parse(value string) (Value, error) {
	v, err := r.Check.parse(strings.TrimSpace(value))
	if err != nil {
		return Value{}, fmt.Errorf("%w: %w", ErrInvalidValue, err)
	}
	return v, nil
}

// Validate is Parse without the value.
func (r *Row) Validate(value string) error {
	_, err := r.Parse(value)
	return err
}

// ValidValues says which values the key takes ("[61,...]", "[compact,
// delete]"), as docs/operations.md lists it.
func (r *Row) ValidValues() string { return r.Check.text }

// IsList reports whether the key's value is a list, which
// IncrementalAlterConfigs may APPEND to and SUBTRACT from.
func (r *Row) IsList() bool { return r.Type == kmsg.ConfigTypeList }

// Validators, named as Kafka's ConfigDef names them. The exported ones
// are for rows outside this package (core/server's broker keys).

// IntIn accepts an INT (32 bits) in [lo, hi].
func IntIn(lo, hi int32) Check { return intIn(lo, hi) }

// LongIn accepts a LONG in [lo, hi].
func LongIn(lo, hi int64) Check { return longIn(lo, hi) }

// ShortIn accepts a SHORT (16 bits) in [lo, hi].
func ShortIn(lo, hi int16) Check {
	text := rangeText(int64(lo), int64(hi), math.MaxInt16)
	return Check{text: text, parse: func(v string) (Value, error) {
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil {
			return Value{}, fmt.Errorf("%q is not a short", v)
		}
		if n < int64(lo) || n > int64(hi) {
			return Value{}, fmt.Errorf("value must be in %s", text)
		}
		return Value{text: v, n: n}, nil
	}}
}

// Boolean accepts true or false in any case.
func Boolean() Check { return boolean() }

// AnyLong accepts every LONG.
func AnyLong() Check { return anyLong() }

// AnyInt accepts every INT.
func AnyInt() Check {
	c := intIn(math.MinInt32, math.MaxInt32)
	c.text = "any int"
	return c
}

// AnyString accepts every value.
func AnyString() Check {
	return Check{text: "any string", parse: func(v string) (Value, error) { return Value{text: v}, nil }}
}

// Custom accepts what parse accepts; text says what that is, and parse's
// result is the Value's Parsed.
func Custom(text string, parse func(string) (any, error)) Check {
	return Check{text: text, parse: func(v string) (Value, error) {
		x, err := parse(v)
		if err != nil {
			return Value{}, err
		}
		return Value{text: v, parsed: x}, nil
	}}
}

// Text is what the check accepts.
func (c Check) Text() string { return c.text }

// rangeText is Kafka's Range text: "[lo,...,hi]", or "[lo,...]" when hi
// is the type's largest value.
func rangeText(lo, hi, typeMax int64) string {
	if hi == typeMax {
		return fmt.Sprintf("[%d,...]", lo)
	}
	return fmt.Sprintf("[%d,...,%d]", lo, hi)
}

// intIn accepts an INT (32 bits) in [lo, hi].
func intIn(lo, hi int32) validator {
	return validator{text: rangeText(int64(lo), int64(hi), math.MaxInt32), parse: func(v string) (Value, error) {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return Value{}, fmt.Errorf("%q is not an int", v)
		}
		if n < int64(lo) || n > int64(hi) {
			return Value{}, fmt.Errorf("value must be in %s", rangeText(int64(lo), int64(hi), math.MaxInt32))
		}
		return Value{text: v, n: n}, nil
	}}
}

// longAtLeast accepts a LONG of at least lo.
func longAtLeast(lo int64) validator { return longIn(lo, math.MaxInt64) }

// longIn accepts a LONG in [lo, hi].
func longIn(lo, hi int64) validator {
	return validator{text: rangeText(lo, hi, math.MaxInt64), parse: func(v string) (Value, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Value{}, fmt.Errorf("%q is not a long", v)
		}
		switch {
		case n < lo && hi == math.MaxInt64:
			return Value{}, fmt.Errorf("value must be at least %d", lo)
		case n < lo || n > hi:
			return Value{}, fmt.Errorf("value must be in %s", rangeText(lo, hi, math.MaxInt64))
		}
		return Value{text: v, n: n}, nil
	}}
}

// anyLong accepts every LONG.
func anyLong() validator {
	v := longAtLeast(math.MinInt64)
	v.text = "any long"
	return v
}

// doubleIn accepts a DOUBLE in [lo, hi] (never NaN).
func doubleIn(lo, hi float64) validator {
	text := fmt.Sprintf("[%g,...,%g]", lo, hi)
	return validator{text: text, parse: func(v string) (Value, error) {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return Value{}, fmt.Errorf("%q is not a double", v)
		}
		if f < lo || f > hi {
			return Value{}, fmt.Errorf("value must be in %s", text)
		}
		return Value{text: v, f: f}, nil
	}}
}

// boolean accepts true or false in any case, as Kafka does.
func boolean() validator {
	return validator{text: "true or false", parse: func(v string) (Value, error) {
		switch {
		case strings.EqualFold(v, "true"):
			return Value{text: v, n: 1}, nil
		case strings.EqualFold(v, "false"):
			return Value{text: v}, nil
		}
		return Value{}, fmt.Errorf("value must be true or false")
	}}
}

// oneOf accepts one of allowed, exactly (Kafka's ValidString).
func oneOf(allowed ...string) validator {
	text := "[" + strings.Join(allowed, ", ") + "]"
	return validator{text: text, parse: func(v string) (Value, error) {
		if slices.Contains(allowed, v) {
			return Value{text: v}, nil
		}
		return Value{}, fmt.Errorf("value must be one of %s", text)
	}}
}

// listOf accepts a non-empty comma-separated list of allowed items
// (Kafka's ValidList).
func listOf(allowed ...string) validator {
	text := "[" + strings.Join(allowed, ", ") + "]"
	return validator{text: text, parse: func(v string) (Value, error) {
		items, err := SplitList(v)
		if err != nil {
			return Value{}, err
		}
		if len(items) == 0 {
			return Value{}, fmt.Errorf("value must list at least one of %s", text)
		}
		for _, it := range items {
			if !slices.Contains(allowed, it) {
				return Value{}, fmt.Errorf("%q is not one of %s", it, text)
			}
		}
		return Value{text: v, list: items}, nil
	}}
}

// gzipLevel is Kafka's GzipCompression level: -1 (the codec's default) or
// 1 to 9.
func gzipLevel() validator {
	in := intIn(1, 9)
	return validator{text: "-1 or [1,...,9]", parse: func(v string) (Value, error) {
		if v == "-1" {
			return Value{text: v, n: -1}, nil
		}
		val, err := in.parse(v)
		if err != nil {
			return Value{}, fmt.Errorf("value must be -1 or in [1,...,9]")
		}
		return val, nil
	}}
}

// throttledReplicas accepts "", "*" or a list of partition:broker pairs
// (Kafka's ThrottledReplicaListValidator).
func throttledReplicas() validator {
	return validator{text: "empty, * or partition:broker,...", parse: func(v string) (Value, error) {
		if v == "" || v == "*" {
			return Value{text: v}, nil
		}
		items, err := SplitList(v)
		if err != nil {
			return Value{}, err
		}
		for _, it := range items {
			p, b, ok := strings.Cut(it, ":")
			_, perr := strconv.ParseInt(p, 10, 32)
			_, berr := strconv.ParseInt(b, 10, 32)
			if !ok || perr != nil || berr != nil {
				return Value{}, fmt.Errorf("%q is not partition:broker", it)
			}
		}
		return Value{text: v, list: items}, nil
	}}
}

// SplitList splits a LIST value at commas and trims the items, as Kafka's
// ConfigDef does. An empty (or all-space) value is the empty list; an
// empty item within a list ("compact,,delete") is refused, as Kafka's
// ValidList refuses it.
func SplitList(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []string
	for it := range strings.SplitSeq(v, ",") {
		it = strings.TrimSpace(it)
		if it == "" {
			return nil, fmt.Errorf("%q has an empty item", v)
		}
		out = append(out, it)
	}
	return out, nil
}
