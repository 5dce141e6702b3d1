// Package record owns Kafka's RecordBatch v2 (magic 2) format: the bytes a
// producer sends, a segment stores and a fetch returns.
//
// It reads a batch header in place and validates it (lengths, magic,
// CRC32C, counts, producer fields), splits a concatenation of batches (a
// produce payload, a segment, a fetch response) into batches and reports how
// many leading bytes were whole, stamps the broker-owned fields of a batch
// (base offset, partition leader epoch, LogAppendTime), iterates the records
// of a batch (decompressing gzip, snappy in raw or xerial framing, lz4 and
// zstd), parses control records, and builds batches for tests, the
// simulator's clients and compaction output.
//
// # What it never does
//
//   - It never recompresses and never copies record bytes on the produce
//     path. A Batch is a view of the caller's buffer; validation reads it,
//     offset assignment writes 12 bytes of it (base offset and partition
//     leader epoch, both outside the CRC), and nothing else changes. Only a
//     RecordReader decompresses, and only into its own reused buffer.
//   - It never trusts a length. Every length field is checked against the
//     bytes actually present and against a caller-given bound
//     (message.max.bytes for batches, a decompressed-size cap against zip
//     bombs) before it sizes anything; where a codec states sizes up front
//     (snappy, zstd's frame and block headers) a bomb is refused before
//     any decoding.
//   - It never panics on input. Bad bytes from a client, a peer or a disk get
//     an *Error whose Kind is one of the Err* sentinels; panics are reserved
//     for programming errors (a non-positive bound, an unknown Origin).
//   - Like all of core it starts no goroutines and reads no clock: codecs are
//     created with concurrency 1 and used synchronously, and a Builder's
//     output depends only on its input, so simulator traces stay stable.
//
// # Invariants
//
//   - A Batch value always spans exactly one batch: LogOverhead+batchLength
//     bytes, batchLength >= MinBatchLength, magic 2, and it fits in the
//     buffer it was read from. ReadBatch, ReadProduceBatch and Splitter are
//     the only ways to get one; a Builder's output goes through ReadBatch.
//   - A batch that passed ValidateStored has a matching CRC32C over
//     [attributes, end), a known codec, 0 <= recordCount <= lastOffsetDelta+1,
//     and a base offset whose last offset does not overflow.
//   - A batch that passed ValidateForAppend is additionally one a producer
//     may write: recordCount > 0, lastOffsetDelta == recordCount-1, and
//     (from a client) no control flag and well-formed producer fields.
//   - A batch that passed Validator.ValidateProduce is additionally one
//     whose records all parse: it decompresses within
//     MaxDecompressedBytes of its topic's max.message.bytes, its records
//     are exactly recordCount with offset deltas 0..recordCount-1 and no
//     byte after the last, and every length agrees with the bytes.
//     ValidateProduce depends on nothing but the batch and its limits, so
//     it may run off the event loop.
//   - Writes into a batch keep its CRC valid: the fields outside the CRC are
//     written directly; SetMaxTimestamp patches the CRC in O(log n) without
//     reading the records, so a batch that was corrupt stays detectably
//     corrupt.
//   - Record offsets inside a batch strictly increase and stay within
//     [0, lastOffsetDelta]; a RecordReader rejects anything else.
//
// # Errors
//
// Every error is an *Error carrying a sentinel (ErrCorrupt and its
// refinements ErrTruncated and ErrCRCMismatch, ErrUnsupportedMagic,
// ErrBatchTooLarge, ErrInvalidRecord, ErrDecompressedTooLarge), the byte
// position where the problem was found and what was expected. Compare with
// errors.Is; the broker maps sentinels to Kafka error codes in its one error
// table.
package record
