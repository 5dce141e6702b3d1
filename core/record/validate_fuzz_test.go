package record_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/record/recordtest"
	"github.com/strata-log/strata/internal/fuzzcorpus"
)

// Bounds for fuzzing validation: large enough for every seed, small enough
// that a mutated length or a bomb fails fast.
const (
	validateFuzzMaxBatchBytes   = 1 << 20
	validateFuzzMaxDecompressed = 256 << 10
)

// validateSeed is one corpus entry of FuzzValidateProduce.
type validateSeed struct {
	name   string
	batch  []byte
	fixCRC bool
}

// validateSeeds are valid batches of every codec and every malformed shape
// and bomb of issue 22 (recordtest), small enough for the fuzz bounds.
func validateSeeds(t testing.TB) []validateSeed {
	var seeds []validateSeed
	for _, c := range codecs {
		seeds = append(seeds, validateSeed{"valid-" + c.name, buildBatch(t, testRecords(12), c.opts...).Bytes(), false})
	}
	seeds = append(seeds, validateSeed{"valid-producer", buildBatch(t, testRecords(3), record.WithProducer(7, 1, 40), record.WithCompression(record.CodecZstd)).Bytes(), false})
	for _, s := range recordtest.Malformed(testTimestamp) {
		seeds = append(seeds, validateSeed{"malformed-" + s.Name, s.Payload, false})
	}
	for _, c := range []record.Codec{record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		seeds = append(seeds, validateSeed{"bomb-" + c.String(), recordtest.Bomb(c, 300<<10, testTimestamp), false})
	}
	seeds = append(seeds,
		validateSeed{"bomb-snappy-claims-2GiB", recordtest.Bomb(record.CodecSnappy, 2<<30, testTimestamp), false},
		validateSeed{"bomb-zstd-rle", recordtest.ZstdRLEBomb(300<<10, testTimestamp), false},
		validateSeed{"fixcrc-malformed-key-length", recordtest.Malformed(testTimestamp)[1].Payload, true},
	)
	return seeds
}

// TestGenerateValidateProduceCorpus rewrites testdata/fuzz/FuzzValidateProduce
// from validateSeeds:
//
//	go test ./core/record -run TestGenerate -update-fuzz-corpus
func TestGenerateValidateProduceCorpus(t *testing.T) {
	var seeds []fuzzcorpus.Seed
	for _, s := range validateSeeds(t) {
		seeds = append(seeds, fuzzcorpus.Seed{Name: s.name, Args: []any{s.batch, s.fixCRC}})
	}
	fuzzcorpus.Generate(t, "FuzzValidateProduce", seeds...)
}

// fixCRC returns a copy of data with its CRC field set to the CRC32C of
// the bytes its batchLength claims, clamped to the buffer, so that
// mutations reach the checks behind the CRC.
func fixCRC(data []byte) []byte {
	const offCRC, offAttributes = 17, 21
	if len(data) < record.HeaderSize {
		return data
	}
	out := append([]byte{}, data...)
	end := int64(record.LogOverhead) + int64(int32(binary.BigEndian.Uint32(out[8:])))
	end = max(min(end, int64(len(out))), offAttributes)
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:end], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// FuzzValidateProduce: whatever the bytes, validation never panics and
// fails with one of record's errors; a batch it accepts iterates cleanly,
// record for record as its summary says.
func FuzzValidateProduce(f *testing.F) {
	for _, s := range validateSeeds(f) {
		f.Add(s.batch, s.fixCRC)
	}
	v := record.NewValidator()
	rr := record.NewRecordReader(record.NewDecompressor(validateFuzzMaxDecompressed))
	limits := record.ProduceLimits{MaxDecompressedBytes: validateFuzzMaxDecompressed}
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if fix {
			data = fixCRC(data)
		}
		b, err := record.ReadProduceBatch(data, validateFuzzMaxBatchBytes)
		if err != nil {
			return
		}
		sum, err := v.ValidateProduce(b, limits)
		if err != nil {
			var e *record.Error
			require.True(t, errors.As(err, &e), "%v is an *Error", err)
			known := false
			for _, kind := range []error{record.ErrCorrupt, record.ErrInvalidRecord, record.ErrDecompressedTooLarge} {
				known = known || errors.Is(err, kind)
			}
			require.True(t, known, "%v", err)
			require.True(t, sum.InvalidRecord >= -1 && sum.InvalidRecord < max(b.RecordCount(), 0), "InvalidRecord %d of %d", sum.InvalidRecord, b.RecordCount())
			return
		}
		require.NoError(t, b.ValidateStored())
		require.NoError(t, b.ValidateForAppend(record.OriginClient))
		require.LessOrEqual(t, sum.DecompressedBytes, validateFuzzMaxDecompressed)

		// A re-parse agrees with the summary.
		want := record.ProduceSummary{MinTimestampRecord: -1, MaxTimestamp: record.NoTimestamp, MaxTimestampRecord: -1, FirstNullKey: -1, InvalidRecord: -1, DecompressedBytes: sum.DecompressedBytes}
		want.MinTimestamp = record.NoTimestamp
		require.NoError(t, rr.Reset(b))
		for i := int32(0); rr.Next(); i++ {
			rec := rr.Record()
			require.Equal(t, i, rec.OffsetDelta)
			require.Equal(t, b.BaseOffset()+int64(i), rec.Offset)
			created := b.BaseTimestamp() + rec.TimestampDelta
			if created != record.NoTimestamp {
				if want.MinTimestampRecord < 0 || created < want.MinTimestamp {
					want.MinTimestamp, want.MinTimestampRecord = created, i
				}
				if created > want.MaxTimestamp {
					want.MaxTimestamp, want.MaxTimestampRecord = created, i
				}
			}
			if rec.Key == nil {
				if want.NullKeys == 0 {
					want.FirstNullKey = i
				}
				want.NullKeys++
			}
			want.Records++
		}
		require.NoError(t, rr.Err())
		require.Equal(t, b.RecordCount(), want.Records)
		require.Equal(t, want, sum)

		// Validation is a function of the batch: again, the same answer.
		again, err := v.ValidateProduce(b, limits)
		require.NoError(t, err)
		require.Equal(t, sum, again)
	})
}
