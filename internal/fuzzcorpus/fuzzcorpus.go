// Package fuzzcorpus writes and checks the committed seed corpora of fuzz
// targets: testdata/fuzz/TARGET/seed-NAME, in the `go test fuzz v1`
// format that go test runs as regression cases, and go test -fuzz starts
// from. A package's fuzz tests name their seeds once; with
// -update-fuzz-corpus its corpus tests rewrite the files:
//
//	go test ./core/PKG -run 'TestGenerate|Fuzz' -update-fuzz-corpus
//
// Only tests import it.
package fuzzcorpus

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update-fuzz-corpus", false, "rewrite the seed files under testdata/fuzz")

// TB is what the package needs of a test: a *testing.T or a *testing.F.
type TB interface {
	require.TestingT
	Helper()
	Skip(args ...any)
}

// Seed is one seed of a fuzz target: the name of its file (after
// "seed-") and the target's arguments.
type Seed struct {
	Name string
	Args []any
}

// Encode is a seed file's content: args in the `go test fuzz v1` format,
// a byte as a quoted rune (as go test writes one).
func Encode(args ...any) []byte {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, arg := range args {
		switch v := arg.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case byte:
			fmt.Fprintf(&b, "byte(%q)\n", rune(v))
		default:
			fmt.Fprintf(&b, "%T(%v)\n", v, v)
		}
	}
	return []byte(b.String())
}

func dir(target string) string { return filepath.Join("testdata", "fuzz", target) }

// Generate writes target's seed files; without -update-fuzz-corpus it
// skips the test.
func Generate(t TB, target string, seeds ...Seed) {
	t.Helper()
	if !*update {
		t.Skip("run with -update-fuzz-corpus to rewrite testdata/fuzz")
	}
	Write(t, target, seeds...)
}

// Write writes target's seed files when the test runs with
// -update-fuzz-corpus, and does nothing otherwise (for a fuzz target that
// also adds its seeds with f.Add).
func Write(t TB, target string, seeds ...Seed) {
	t.Helper()
	if !*update {
		return
	}
	require.NoError(t, os.MkdirAll(dir(target), 0o755))
	for _, s := range seeds {
		require.NoError(t, os.WriteFile(filepath.Join(dir(target), "seed-"+s.Name), Encode(s.Args...), 0o644))
	}
}

// Check requires the committed corpus of target to hold every seed as
// Encode writes it, so that a format change that forgets to regenerate
// the corpus is noticed.
func Check(t TB, target string, seeds ...Seed) {
	t.Helper()
	for _, s := range seeds {
		got, err := os.ReadFile(filepath.Join(dir(target), "seed-"+s.Name))
		require.NoError(t, err, "regenerate with -update-fuzz-corpus")
		require.Equal(t, string(Encode(s.Args...)), string(got), "seed %s is stale", s.Name)
	}
}
