package producer_test

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/internal/fuzzcorpus"
)

type fuzzSeed struct {
	name string
	data []byte
}

func fuzzSeeds() []fuzzSeed {
	two := kafkaSnapshot([]kafkaEntry{
		{producerID: 7, epoch: 0, lastSequence: 1, lastOffset: 6, offsetDelta: 3, timestamp: 1_700_000_000_500, coordinatorEpoch: -1, currentTxnFirstOffset: -1},
		{producerID: 1000, epoch: 2, lastSequence: 4, lastOffset: 8, offsetDelta: 1, timestamp: 1_700_000_000_900, coordinatorEpoch: -1, currentTxnFirstOffset: -1},
	})
	noBatch := kafkaSnapshot([]kafkaEntry{
		{producerID: 5, epoch: 1, lastSequence: -1, lastOffset: -1, timestamp: 77, coordinatorEpoch: 4, currentTxnFirstOffset: 3},
	})
	badCRC := append([]byte(nil), two...)
	badCRC[3] ^= 0xff
	return []fuzzSeed{
		{"empty-state", kafkaSnapshot(nil)},
		{"two-producers", two},
		{"no-batch-open-txn", noBatch},
		{"truncated", two[:len(two)-5]},
		{"trailing", append(append([]byte(nil), two...), 0, 0)},
		{"bad-crc", badCRC},
		{"version-0", append([]byte{0, 0}, two[2:]...)},
		{"nothing", nil},
	}
}

// FuzzDecodeSnapshot feeds arbitrary bytes to the snapshot decoder, with
// the CRC left as it is or fixed up so that the fields get explored: it
// never panics, and what it accepts restores into a state whose own
// snapshot decodes back to that state.
func FuzzDecodeSnapshot(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s.data, false)
		f.Add(s.data, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		defer func() {
			if r := recover(); r != nil {
				if v, ok := r.(assert.Violation); ok {
					t.Fatalf("invariant violated on snapshot input: %v", v)
				}
				panic(r)
			}
		}()
		if fixCRC && len(data) >= 6 {
			// Let the fuzzer past the checksum, to the fields.
			data = append([]byte(nil), data...)
			binary.BigEndian.PutUint32(data[2:], crc32.Checksum(data[6:], crc32.MakeTable(crc32.Castagnoli)))
		}
		ps, err := producer.DecodeSnapshot(data)
		if err != nil {
			require.ErrorIs(t, err, producer.ErrCorruptSnapshot)
			return
		}
		end := int64(0)
		for _, p := range ps {
			end = max(end, p.LastOffset(), p.CurrentTxnFirstOffset)
		}
		if end == math.MaxInt64 {
			return
		}
		// A time before every timestamp but math.MinInt64 keeps them all.
		now := time.UnixMilli(math.MinInt64 / 2)
		st, err := producer.Restore(producer.DefaultConfig(), end+1, ps, now)
		require.NoError(t, err)
		again, err := producer.DecodeSnapshot(st.EncodeSnapshot())
		require.NoError(t, err)
		require.Equal(t, st.Producers(), normalize(again))
		require.LessOrEqual(t, st.Len(), len(ps))
	})
}

// normalize sorts decoded producers by id, as a State lists them.
func normalize(ps []producer.Producer) []producer.Producer {
	st, err := producer.Restore(producer.DefaultConfig(), math.MaxInt64, ps, time.UnixMilli(math.MinInt64/2))
	if err != nil {
		panic(err)
	}
	return st.Producers()
}

// corpusSeeds are fuzzSeeds as FuzzDecodeSnapshot's corpus under
// testdata/fuzz, which the committed files keep in front of
// `go test -fuzz`. Rewrite it with:
//
//	go test ./core/producer -run TestGenerateFuzzCorpus -update-fuzz-corpus
func corpusSeeds() []fuzzcorpus.Seed {
	var out []fuzzcorpus.Seed
	for _, s := range fuzzSeeds() {
		out = append(out, fuzzcorpus.Seed{Name: s.name, Args: []any{s.data, true}})
	}
	return out
}

func TestGenerateFuzzCorpus(t *testing.T) {
	fuzzcorpus.Generate(t, "FuzzDecodeSnapshot", corpusSeeds()...)
}

// TestFuzzCorpusPresent: the committed corpus holds every current seed.
func TestFuzzCorpusPresent(t *testing.T) {
	fuzzcorpus.Check(t, "FuzzDecodeSnapshot", corpusSeeds()...)
}
