package record_test

import (
	"fmt"

	"github.com/strata-log/strata/core/record"
)

// The produce path: one batch per partition, validated and stamped in place.
func Example_produce() {
	// What a producer sends (built here with the Builder).
	b := record.NewBuilder(record.WithCompression(record.CodecZstd), record.WithProducer(7, 0, 0))
	b.Append(1_700_000_000_000, []byte("k1"), []byte("v1"))
	b.Append(1_700_000_000_005, []byte("k2"), []byte("v2"))
	payload, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}

	batch, err := record.ReadProduceBatch(payload, record.DefaultMaxBatchBytes)
	if err != nil {
		panic(err)
	}
	if err := batch.ValidateForAppend(record.OriginClient); err != nil {
		panic(err)
	}
	logEnd := batch.AssignOffsets(42, 3)
	fmt.Println("offsets", batch.BaseOffset(), "to", batch.LastOffset(), "next", logEnd)
	fmt.Println("still valid:", batch.ValidateStored() == nil)
	// Output:
	// offsets 42 to 43 next 44
	// still valid: true
}

// Recovery: keep the whole batches of a segment, truncate a torn tail.
func ExampleSplitter() {
	var segment []byte
	for i := range 3 {
		b := record.NewBuilder(record.WithBaseOffset(int64(i)))
		b.Append(0, nil, []byte{byte(i)})
		segment, _ = b.AppendTo(segment)
	}
	torn := segment[:len(segment)-5] // power lost inside the last write

	s := record.NewSplitter(torn, record.DefaultMaxBatchBytes, record.CheckStored)
	for s.Next() {
		fmt.Println("batch at", s.Pos(), "offset", s.Batch().BaseOffset())
	}
	fmt.Println("truncate to", s.ValidBytes(), "of", len(torn), "bytes:", s.Err())
	// Output:
	// batch at 0 offset 0
	// batch at 69 offset 1
	// truncate to 138 of 202 bytes: record: corrupt batch: truncated at byte 202: batch of 69 bytes, only 64 remain
}

// Reading records, as compaction or a consumer would.
func ExampleRecordReader() {
	b := record.NewBuilder(record.WithCompression(record.CodecLZ4), record.WithBaseOffset(100))
	b.Append(1000, []byte("user-1"), []byte("alice"), record.Header{Key: []byte("src"), Value: []byte("web")})
	b.Append(1003, []byte("user-2"), nil) // a tombstone
	raw, _ := b.AppendTo(nil)
	batch, _ := record.ReadBatch(raw, record.DefaultMaxBatchBytes)

	r := record.NewRecordReader(record.NewDecompressor(record.DefaultMaxDecompressedBytes))
	if err := r.Reset(batch); err != nil {
		panic(err)
	}
	for r.Next() {
		rec := r.Record()
		fmt.Printf("%d %d %s value=%q tombstone=%v headers=%d\n",
			rec.Offset, rec.Timestamp, rec.Key, rec.Value, rec.Value == nil, len(rec.Headers))
	}
	fmt.Println(r.Err())
	// Output:
	// 100 1000 user-1 value="alice" tombstone=false headers=1
	// 101 1003 user-2 value="" tombstone=true headers=0
	// <nil>
}
