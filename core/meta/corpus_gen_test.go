package meta

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// updateFuzzCorpus rewrites the seed corpus under testdata/fuzz from
// fuzzSeeds:
//
//	go test ./core/meta -run TestGenerateFuzzCorpus -update-fuzz-corpus
//
// FuzzDecodeRecord adds the same seeds with f.Add; the committed files keep
// them, and any crasher found since, in front of `go test -fuzz`.
var updateFuzzCorpus = flag.Bool("update-fuzz-corpus", false, "rewrite testdata/fuzz seed files")

func TestGenerateFuzzCorpus(t *testing.T) {
	if !*updateFuzzCorpus {
		t.Skip("run with -update-fuzz-corpus to rewrite testdata/fuzz")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeRecord")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, s := range fuzzSeeds() {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s.value)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "seed-"+s.name), []byte(content), 0o644))
	}
}

// TestFuzzCorpusPresent: the committed corpus holds every current seed, so a
// format change that forgets to regenerate it is noticed.
func TestFuzzCorpusPresent(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeRecord")
	for _, s := range fuzzSeeds() {
		got, err := os.ReadFile(filepath.Join(dir, "seed-"+s.name))
		require.NoError(t, err, "regenerate with -update-fuzz-corpus")
		require.Equal(t, fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s.value), string(got), "seed %s is stale", s.name)
	}
}
