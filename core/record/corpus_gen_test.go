package record

import (
	"testing"

	"github.com/strata-log/strata/internal/fuzzcorpus"
)

// TestGenerateFuzzCorpus rewrites the seed corpus under testdata/fuzz from
// the seeds in fuzz_test.go:
//
//	go test ./core/record -run TestGenerate -update-fuzz-corpus
//
// The fuzz targets add the same seeds with f.Add; the committed files keep
// them, together with any crasher found since, in front of `go test -fuzz`.
func TestGenerateFuzzCorpus(t *testing.T) {
	fuzzcorpus.Generate(t, "FuzzDecodeBatch", seedBatches(t)...)
	fuzzcorpus.Write(t, "FuzzIterateRecords", seedRecordSections(t)...)
	fuzzcorpus.Write(t, "FuzzSplitBatches", seedPayloads(t)...)
}
