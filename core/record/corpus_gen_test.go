package record

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// updateFuzzCorpus rewrites the seed corpus under testdata/fuzz from the
// seeds in fuzz_test.go:
//
//	go test ./core/record -run TestGenerateFuzzCorpus -update-fuzz-corpus
//
// The fuzz targets add the same seeds with f.Add; the committed files keep
// them, together with any crasher found since, in front of `go test -fuzz`.
var updateFuzzCorpus = flag.Bool("update-fuzz-corpus", false, "rewrite testdata/fuzz seed files")

func TestGenerateFuzzCorpus(t *testing.T) {
	if !*updateFuzzCorpus {
		t.Skip("run with -update-fuzz-corpus to rewrite testdata/fuzz")
	}
	targets := map[string][]fuzzSeed{
		"FuzzDecodeBatch":    seedBatches(t),
		"FuzzIterateRecords": seedRecordSections(t),
		"FuzzSplitBatches":   seedPayloads(t),
	}
	for target, seeds := range targets {
		dir := filepath.Join("testdata", "fuzz", target)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for _, s := range seeds {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "seed-"+s.name), marshalFuzzCorpus(s.args), 0o644))
		}
	}
}

// marshalFuzzCorpus encodes fuzz arguments in the `go test fuzz v1` file
// format.
func marshalFuzzCorpus(args []any) []byte {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, arg := range args {
		switch v := arg.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		default:
			fmt.Fprintf(&b, "%T(%v)\n", v, v)
		}
	}
	return []byte(b.String())
}
