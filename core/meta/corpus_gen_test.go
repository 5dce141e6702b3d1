package meta

import (
	"testing"

	"github.com/strata-log/strata/internal/fuzzcorpus"
)

// The seed corpus under testdata/fuzz is fuzzSeeds, which FuzzDecodeRecord
// also adds with f.Add; the committed files keep them, and any crasher
// found since, in front of `go test -fuzz`. Rewrite it with:
//
//	go test ./core/meta -run TestGenerateFuzzCorpus -update-fuzz-corpus
func corpusSeeds() []fuzzcorpus.Seed {
	var out []fuzzcorpus.Seed
	for _, s := range fuzzSeeds() {
		out = append(out, fuzzcorpus.Seed{Name: s.name, Args: []any{s.value}})
	}
	return out
}

func TestGenerateFuzzCorpus(t *testing.T) {
	fuzzcorpus.Generate(t, "FuzzDecodeRecord", corpusSeeds()...)
}

// TestFuzzCorpusPresent: the committed corpus holds every current seed, so a
// format change that forgets to regenerate it is noticed.
func TestFuzzCorpusPresent(t *testing.T) {
	fuzzcorpus.Check(t, "FuzzDecodeRecord", corpusSeeds()...)
}
