package record

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Each benchmark runs beside a named baseline in the same process, so the
// ratio is read off one run:
//
//	go test -run='^$' -bench=. -benchmem ./core/record

// benchBatch builds a batch of about size bytes from records with 1 KiB
// values of text-like bytes (compressible about 3x, as JSON payloads are).
func benchBatch(b *testing.B, size int, opts ...BuilderOption) []byte {
	rng := rand.New(rand.NewPCG(7, 7))
	words := []string{"strata", "offset", "batch", "leader", "epoch", "replica", "segment", "\"id\":", "{", "}", "12345", "true"}
	builder := NewBuilder(opts...)
	for builder.UncompressedSize() < size-1200 {
		value := make([]byte, 0, 1024)
		for len(value) < 1000 {
			value = append(value, words[rng.IntN(len(words))]...)
			value = append(value, ' ')
		}
		builder.Append(1_700_000_000_000+int64(builder.Count()), []byte(fmt.Sprintf("key-%d", builder.Count())), value)
	}
	raw, err := builder.AppendTo(nil)
	require.NoError(b, err)
	return raw
}

var benchSizes = []struct {
	name string
	size int
}{{"64KiB", 64 << 10}, {"1MiB", 1 << 20}}

func BenchmarkValidateStored(b *testing.B) {
	for _, s := range benchSizes {
		raw := benchBatch(b, s.size)
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				batch, err := ReadBatch(raw, MaxBatchSize)
				if err != nil {
					b.Fatal(err)
				}
				if err := batch.ValidateStored(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/baseline-crc32c", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				_ = crc32.Checksum(raw[offAttributes:], castagnoli)
			}
		})
	}
}

func BenchmarkValidateForAppend(b *testing.B) {
	raw := benchBatch(b, 1<<20, WithProducer(1, 0, 0))
	b.SetBytes(int64(len(raw)))
	loopProduce(b, raw, validateForAppend)
}

// validateForAppend is the header-only check of a client's batch.
func validateForAppend(batch Batch) error { return batch.ValidateForAppend(OriginClient) }

// loopProduce reads raw as a produce batch and checks it with validate,
// for every iteration of b's loop.
func loopProduce(b *testing.B, raw []byte, validate func(Batch) error) {
	for b.Loop() {
		batch, err := ReadProduceBatch(raw, MaxBatchSize)
		if err != nil {
			b.Fatal(err)
		}
		if err := validate(batch); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAssignOffsets(b *testing.B) {
	raw := benchBatch(b, 1<<20)
	batch, err := ReadBatch(raw, MaxBatchSize)
	require.NoError(b, err)
	next := int64(0)
	for b.Loop() {
		next = batch.AssignOffsets(next, 3)
	}
}

func BenchmarkSetMaxTimestamp(b *testing.B) {
	raw := benchBatch(b, 1<<20)
	batch, err := ReadBatch(raw, MaxBatchSize)
	require.NoError(b, err)
	b.Run("1MiB/patch", func(b *testing.B) {
		ts := int64(0)
		for b.Loop() {
			ts++
			batch.SetMaxTimestamp(LogAppendTime, ts)
		}
	})
	b.Run("1MiB/baseline-recompute", func(b *testing.B) {
		for b.Loop() {
			writeCRC(raw, crcOf(raw))
		}
	})
}

func BenchmarkIterateRecords(b *testing.B) {
	for _, c := range []Codec{CodecNone, CodecZstd, CodecLZ4, CodecSnappy, CodecGzip} {
		raw := benchBatch(b, 1<<20, WithCompression(c))
		batch, err := ReadBatch(raw, MaxBatchSize)
		require.NoError(b, err)
		reader := NewRecordReader(NewDecompressor(DefaultMaxDecompressedBytes))
		uncompressed := 0
		require.NoError(b, reader.Reset(batch))
		for reader.Next() {
			uncompressed += len(reader.Record().Value)
		}
		require.NoError(b, reader.Err())
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(uncompressed))
			for b.Loop() {
				if err := reader.Reset(batch); err != nil {
					b.Fatal(err)
				}
				for reader.Next() {
				}
				if err := reader.Err(); err != nil {
					b.Fatal(err)
				}
			}
			// After the loop: the timer reset at its start drops metrics.
			b.ReportMetric(float64(len(raw))/float64(uncompressed), "compressed/raw")
		})
		if c != CodecNone {
			continue
		}
		b.Run("none/baseline-kmsg", func(b *testing.B) {
			b.SetBytes(int64(uncompressed))
			var kr kmsg.Record
			for b.Loop() {
				data := batch.RecordBytes()
				for len(data) > 0 {
					length, n := readVarint(data)
					if err := kr.ReadFrom(data[:n+int(length)]); err != nil {
						b.Fatal(err)
					}
					data = data[n+int(length):]
				}
			}
		})
	}
}

// BenchmarkValidateProduce is the cost of validating a producer's 1 MiB
// batch of 1 KiB records, per codec, in MB/s of uncompressed records
// (Validator.ValidateProduce: CRC, header, decompression, every record),
// beside the header-only validation the produce path ran before (CRC,
// header and producer fields: ReadProduceBatch and ValidateForAppend).
// snappy-raw is what franz-go v1.22.3 sends by default
// (ProducerBatchCompression's default preference is snappy, then none);
// snappy-xerial is the Java client's framing.
//
//	go test -run='^$' -bench=ValidateProduce -count=5 ./core/record
func BenchmarkValidateProduce(b *testing.B) {
	codecs := []struct {
		name string
		opts []BuilderOption
	}{
		{"none", nil},
		{"snappy-raw", []BuilderOption{WithCompression(CodecSnappy), WithRawSnappy()}},
		{"snappy-xerial", []BuilderOption{WithCompression(CodecSnappy)}},
		{"lz4", []BuilderOption{WithCompression(CodecLZ4)}},
		{"zstd", []BuilderOption{WithCompression(CodecZstd)}},
		{"gzip", []BuilderOption{WithCompression(CodecGzip)}},
	}
	limits := LimitsFor(DefaultMaxBatchBytes)
	for _, c := range codecs {
		raw := benchBatch(b, 1<<20, append(c.opts, WithProducer(1, 0, 0))...)
		batch, err := ReadProduceBatch(raw, MaxBatchSize)
		require.NoError(b, err)
		v := NewValidator()
		sum, err := v.ValidateProduce(batch, limits)
		require.NoError(b, err)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(sum.DecompressedBytes))
			loopProduce(b, raw, func(batch Batch) error {
				_, err := v.ValidateProduce(batch, limits)
				return err
			})
			b.ReportMetric(float64(len(raw))/float64(sum.DecompressedBytes), "compressed/raw")
		})
		b.Run(c.name+"/baseline-header-only", func(b *testing.B) {
			b.SetBytes(int64(sum.DecompressedBytes))
			loopProduce(b, raw, validateForAppend)
		})
	}
}
