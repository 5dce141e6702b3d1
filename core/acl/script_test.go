package acl

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/internal/coretest"
)

// TestScripts runs testdata/*.txt. Commands:
//
//	policy [super=User:a;User:b] [allow-everyone=true]
//	add | remove | validate   (input: one binding a line)
//	authorize                 (input: one request a line)
//	matching | delete [type=] [pattern=] [name=] [principal=] [host=] [op=] [perm=]
//	list
//	authorized-ops principal= host= resource=TYPE:name
//
// A binding line is "PERMISSION principal host OPERATION TYPE:PATTERN:name"
// and a request line "principal host OPERATION TYPE:name"; a token "" is
// the empty string, an enum may be UNKNOWN or a number.
func TestScripts(t *testing.T) {
	coretest.RunScripts(t, "*.txt", func(t *testing.T) coretest.Commands {
		var (
			ix     Index
			policy Policy
		)
		return func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "policy":
				var super string
				allowEveryone := false
				coretest.ScanOptional(t, d, "super", &super)
				coretest.ScanOptional(t, d, "allow-everyone", &allowEveryone)
				p, err := NewPolicy(ParseSuperUsers(super), allowEveryone)
				if err != nil {
					return err.Error() + "\n"
				}
				policy = p
				return "ok\n"
			case "add":
				next, err := ix.Add(scriptBindings(t, d.Input)...)
				if err != nil {
					require.Equal(t, ix, next, "a failed Add changes nothing")
					return err.Error() + "\n"
				}
				ix = next
				return fmt.Sprintf("%d bindings\n", ix.Len())
			case "remove":
				ix = ix.Remove(scriptBindings(t, d.Input)...)
				return fmt.Sprintf("%d bindings\n", ix.Len())
			case "validate":
				var out strings.Builder
				for _, b := range scriptBindings(t, d.Input) {
					if err := b.Validate(); err != nil {
						fmt.Fprintf(&out, "%s\n", err)
					} else {
						fmt.Fprintf(&out, "ok\n")
					}
				}
				return out.String()
			case "authorize":
				var out strings.Builder
				for _, line := range nonEmptyLines(d.Input) {
					r := scriptRequest(t, line)
					fmt.Fprintf(&out, "%s: %s\n", line, ix.Authorize(policy, r))
				}
				return out.String()
			case "list":
				bs, err := ix.Matching(MatchAll)
				require.NoError(t, err)
				return listing(bs)
			case "matching", "delete":
				bs, err := ix.Matching(scriptFilter(t, d))
				if err != nil {
					return err.Error() + "\n"
				}
				if d.Cmd == "delete" {
					ix = ix.Remove(bs...)
					return listing(bs) + fmt.Sprintf("%d bindings left\n", ix.Len())
				}
				return listing(bs)
			case "authorized-ops":
				var principal, host, resource string
				d.ScanArgs(t, "principal", &principal)
				d.ScanArgs(t, "host", &host)
				d.ScanArgs(t, "resource", &resource)
				typ, name, ok := strings.Cut(resource, ":")
				require.True(t, ok, "resource TYPE:name")
				rt := parseEnum(t, typ, kmsg.ParseACLResourceType)
				bits := ix.AuthorizedOperations(policy, principal, host, rt, name)
				var ops []string
				for op := kmsg.ACLOperation(0); op < 32; op++ {
					if bits&(1<<uint(op)) != 0 {
						ops = append(ops, op.String())
					}
				}
				return fmt.Sprintf("%#x %s\n", bits, strings.Join(ops, " "))
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		}
	})
}

func listing(bs []Binding) string {
	if len(bs) == 0 {
		return "(none)\n"
	}
	var out strings.Builder
	for _, b := range bs {
		fmt.Fprintf(&out, "%s\n", b)
	}
	return out.String()
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func token(s string) string {
	if s == `""` {
		return ""
	}
	return s
}

// parseEnum reads a kmsg enum by name, or UNKNOWN, or a number.
func parseEnum[E ~int8](t *testing.T, s string, parse func(string) (E, error)) E {
	t.Helper()
	if s == "UNKNOWN" {
		return 0
	}
	if n, err := strconv.ParseInt(s, 10, 8); err == nil {
		return E(n)
	}
	v, err := parse(s)
	require.NoError(t, err)
	return v
}

func scriptBindings(t *testing.T, input string) []Binding {
	var out []Binding
	for _, line := range nonEmptyLines(input) {
		f := strings.Fields(line)
		require.Len(t, f, 5, "binding line %q: PERMISSION principal host OPERATION TYPE:PATTERN:name", line)
		res := strings.SplitN(f[4], ":", 3)
		require.Len(t, res, 3, "resource %q: TYPE:PATTERN:name", f[4])
		out = append(out, Binding{
			Permission:   parseEnum(t, f[0], kmsg.ParseACLPermissionType),
			Principal:    token(f[1]),
			Host:         token(f[2]),
			Operation:    parseEnum(t, f[3], kmsg.ParseACLOperation),
			ResourceType: parseEnum(t, res[0], kmsg.ParseACLResourceType),
			PatternType:  parseEnum(t, res[1], kmsg.ParseACLResourcePatternType),
			ResourceName: res[2],
		})
	}
	return out
}

func scriptRequest(t *testing.T, line string) Request {
	f := strings.Fields(line)
	require.Len(t, f, 4, "request line %q: principal host OPERATION TYPE:name", line)
	typ, name, ok := strings.Cut(f[3], ":")
	require.True(t, ok, "resource %q: TYPE:name", f[3])
	return Request{
		Principal:    token(f[0]),
		Host:         token(f[1]),
		Operation:    parseEnum(t, f[2], kmsg.ParseACLOperation),
		ResourceType: parseEnum(t, typ, kmsg.ParseACLResourceType),
		ResourceName: name,
	}
}

func scriptFilter(t *testing.T, d *datadriven.TestData) Filter {
	f := MatchAll
	var s string
	if d.HasArg("type") {
		d.ScanArgs(t, "type", &s)
		f.ResourceType = parseEnum(t, s, kmsg.ParseACLResourceType)
	}
	if d.HasArg("pattern") {
		d.ScanArgs(t, "pattern", &s)
		f.PatternType = parseEnum(t, s, kmsg.ParseACLResourcePatternType)
	}
	if d.HasArg("op") {
		d.ScanArgs(t, "op", &s)
		f.Operation = parseEnum(t, s, kmsg.ParseACLOperation)
	}
	if d.HasArg("perm") {
		d.ScanArgs(t, "perm", &s)
		f.Permission = parseEnum(t, s, kmsg.ParseACLPermissionType)
	}
	f.ResourceName = optionalString(t, d, "name")
	f.Principal = optionalString(t, d, "principal")
	f.Host = optionalString(t, d, "host")
	return f
}

// optionalString returns the value of the argument key, or nil when the
// command lacks it.
func optionalString(t *testing.T, d *datadriven.TestData, key string) *string {
	if !d.HasArg(key) {
		return nil
	}
	var v string
	d.ScanArgs(t, key, &v)
	v = token(v)
	return &v
}
