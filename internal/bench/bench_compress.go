package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The producers' compression (--compression) and what the records hold
// (--values): with random values no codec helps, and kgo sends a batch
// compressed only when that makes it smaller, so compressed figures need
// values that compress.
const (
	// compressionNone is the bench's historical setting; compressionDefault
	// leaves kgo's ProducerBatchCompression unset: its default preference
	// is [snappy, none] (franz-go v1.22.3, pkg/kgo/config.go), so snappy,
	// on every produce version.
	compressionNone    = "none"
	compressionDefault = "default"
	// valuesRandom are incompressible; valuesText are words of a small
	// vocabulary separated by spaces, like log lines: in 1 MiB batches
	// about 2.8x with kgo's snappy (s2's snappy encoder; 1.6x with
	// core/record's), 2x with lz4 and 3.2x with gzip or zstd.
	valuesRandom = "random"
	valuesText   = "text"
	// textVocabulary is how many distinct words text values draw from,
	// each 3 to 10 lowercase letters.
	textVocabulary = 1024
	// defaultFloodCompression is phase 4's flood codec.
	defaultFloodCompression = "zstd"
)

// benchCodecs are --compression's choices, by the name kgo's batch
// metrics give them (CompressionType 0 to 4).
var benchCodecs = []string{compressionNone, "gzip", "snappy", "lz4", "zstd"}

// parseCompression checks a --compression value.
func parseCompression(s string) (string, error) {
	if s == compressionDefault || slices.Contains(benchCodecs, s) {
		return s, nil
	}
	return "", fmt.Errorf("--compression must be %s or %s, got %q", compressionDefault, strings.Join(benchCodecs, ", "), s)
}

// compressionOpts are the producer options for a --compression value.
func compressionOpts(codec string) []kgo.Opt {
	var c kgo.CompressionCodec
	switch codec {
	case compressionDefault:
		return nil
	case "gzip":
		c = kgo.GzipCompression()
	case "snappy":
		c = kgo.SnappyCompression()
	case "lz4":
		c = kgo.Lz4Compression()
	case "zstd":
		c = kgo.ZstdCompression()
	default:
		c = kgo.NoCompression()
	}
	return []kgo.Opt{kgo.ProducerBatchCompression(c)}
}

// describeCompression is a --compression value for the report.
func describeCompression(codec string) string {
	if codec == compressionDefault {
		return "kgo's default (snappy, else none)"
	}
	return codec
}

// benchValues are n distinct values of size bytes of the kind asked.
func benchValues(kind string, n, size int) ([][]byte, error) {
	if kind == valuesText {
		return textValues(n, size, rand.Uint64()), nil
	}
	return randomValues(n, size)
}

// textValues are n values of size bytes of words from a vocabulary of
// textVocabulary random words, separated by spaces, seeded by seed.
func textValues(n, size int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	words := make([][]byte, textVocabulary)
	for i := range words {
		w := make([]byte, 3+r.IntN(8))
		for j := range w {
			w[j] = byte('a' + r.IntN(26))
		}
		words[i] = w
	}
	buf := make([]byte, 0, n*size)
	values := make([][]byte, n)
	for i := range values {
		start := len(buf)
		for len(buf)-start < size {
			buf = append(buf, words[r.IntN(len(words))]...)
			buf = append(buf, ' ')
		}
		buf = buf[:start+size]
		values[i] = buf[start : start+size : start+size]
	}
	return values
}

// batchStats counts the batches a producer had acknowledged and their
// record bytes before and after compression (kgo's
// HookProduceBatchWritten): proof of what went over the wire.
type batchStats struct {
	mu sync.Mutex
	s  produceBatches
}

// produceBatches is what a phase's producers sent, as kgo measured it.
type produceBatches struct {
	Batches int64 `json:"batches"`
	// Compressed counts the batches sent compressed: kgo sends a batch
	// uncompressed when compressing does not make it smaller.
	Compressed        int64 `json:"compressed"`
	UncompressedBytes int64 `json:"uncompressed_bytes"`
	CompressedBytes   int64 `json:"compressed_bytes"`
	// Codecs counts batches per codec name.
	Codecs map[string]int64 `json:"codecs,omitempty"`
}

// add is p and q together.
func (p produceBatches) add(q produceBatches) produceBatches {
	out := produceBatches{Batches: p.Batches + q.Batches, Compressed: p.Compressed + q.Compressed,
		UncompressedBytes: p.UncompressedBytes + q.UncompressedBytes, CompressedBytes: p.CompressedBytes + q.CompressedBytes}
	for _, m := range []map[string]int64{p.Codecs, q.Codecs} {
		for k, v := range m {
			if out.Codecs == nil {
				out.Codecs = map[string]int64{}
			}
			out.Codecs[k] += v
		}
	}
	return out
}

// Ratio is uncompressed over compressed bytes (1 without compression).
func (p produceBatches) Ratio() float64 {
	if p.CompressedBytes == 0 {
		return 0
	}
	return float64(p.UncompressedBytes) / float64(p.CompressedBytes)
}

// CompressedShare is the fraction of batches sent compressed.
func (p produceBatches) CompressedShare() float64 {
	if p.Batches == 0 {
		return 0
	}
	return float64(p.Compressed) / float64(p.Batches)
}

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten.
func (b *batchStats) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	codec := fmt.Sprintf("codec-%d", m.CompressionType)
	if int(m.CompressionType) < len(benchCodecs) {
		codec = benchCodecs[m.CompressionType]
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s.Batches++
	if m.CompressionType != 0 {
		b.s.Compressed++
	}
	b.s.UncompressedBytes += int64(m.UncompressedBytes)
	b.s.CompressedBytes += int64(m.CompressedBytes)
	if b.s.Codecs == nil {
		b.s.Codecs = map[string]int64{}
	}
	b.s.Codecs[codec]++
}

func (b *batchStats) get() produceBatches {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.s
	s.Codecs = make(map[string]int64, len(b.s.Codecs))
	for k, v := range b.s.Codecs {
		s.Codecs[k] = v
	}
	return s
}
