package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerStreams("produce", "write stdin to a topic, one record per line, like kafka-console-producer.sh", produceCommand)
}

// Defaults and bounds of `strata produce`.
const (
	// defaultMaxLineBytes is --max-line-bytes: the longest input line,
	// 1 MiB (Kafka's max.message.bytes is about that). A longer line
	// stops the command rather than growing the read buffer without
	// bound.
	defaultMaxLineBytes = 1 << 20
	// defaultDeliveryTimeout is --delivery-timeout, Kafka's
	// delivery.timeout.ms default: how long a record may take from
	// being read to being acknowledged, retries included.
	defaultDeliveryTimeout = 2 * time.Minute
	// produceMaxBufferedBytes bounds the bytes read but not yet
	// acknowledged; reading stdin waits while it is reached, so a large
	// input streams in bounded memory.
	produceMaxBufferedBytes = 64 << 20
	// produceInitialLineBytes is the read buffer's starting size; it
	// grows up to --max-line-bytes.
	produceInitialLineBytes = 64 << 10
)

// produceCodecs are --compression's values.
var produceCodecs = map[string]kgo.CompressionCodec{
	"none":   kgo.NoCompression(),
	"gzip":   kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(),
	"lz4":    kgo.Lz4Compression(),
	"zstd":   kgo.ZstdCompression(),
}

// produceAcks are --acks's values; anything but all turns idempotence
// off, which needs acks=all.
var produceAcks = map[string]kgo.Acks{
	"all": kgo.AllISRAcks(),
	"-1":  kgo.AllISRAcks(),
	"1":   kgo.LeaderAck(),
	"0":   kgo.NoAck(),
}

// produceCommand is `strata produce`: every line of stdin (without its
// '\n', byte for byte otherwise) becomes one record of --topic. It reads
// as it produces, so memory stays bounded whatever the input's size; at
// EOF it flushes and prints a summary to stderr. Ctrl-C (ctx) stops
// reading; what was read is still delivered.
func produceCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, c := cli.NewFlagSet("produce", "produce --topic T [flags] < lines",
		"Produces one record per line of stdin, like kafka-console-producer.sh. At EOF it flushes and\n"+
			"prints a summary (records, bytes of keys and values, partitions) to stderr; it exits 1 if any\n"+
			"record failed, printing the first error with Kafka's error name.", stderr)
	bootstrap := cli.BootstrapFlag(fs)
	commandConfig := cli.CommandConfigFlag(fs)
	topic := fs.String("topic", "", "the `topic` to produce to (required)")
	keySep := fs.String("key-separator", "", "split each line at the first `SEP`: the key before it, the value after (default: no key; a line without SEP is an error)")
	partition := fs.Int("partition", -1, "produce every record to this `partition`; -1 lets the key's hash choose (without keys: batches spread over the partitions)")
	acks := fs.String("acks", "all", "acknowledgements to wait for: all, 1 or 0")
	compression := fs.String("compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	var headers cli.KeyValues
	fs.Var(&headers, "header", "a `key=value` header on every record (repeatable)")
	maxLine := fs.Int("max-line-bytes", defaultMaxLineBytes, "the longest input line in `bytes`; a longer one stops the command")
	deliveryTimeout := fs.Duration("delivery-timeout", defaultDeliveryTimeout, "fail a record not acknowledged this long after it was read")
	if code, ok := c.ParseFlags(fs, args); !ok {
		return code
	}
	codec, codecOK := produceCodecs[*compression]
	ack, ackOK := produceAcks[*acks]
	addrs, addrErr := cli.ParseAddrs(*bootstrap)
	switch {
	case *topic == "":
		return c.UsageError("--topic is required")
	case !codecOK:
		return c.UsageError("--compression must be none, gzip, snappy, lz4 or zstd, got %q", *compression)
	case !ackOK:
		return c.UsageError("--acks must be all, 1 or 0, got %q", *acks)
	case *partition < -1 || *partition > 1<<31-1:
		return c.UsageError("--partition must be a partition number, got %d", *partition)
	case *maxLine < 1:
		return c.UsageError("--max-line-bytes must be positive")
	case *deliveryTimeout <= 0:
		return c.UsageError("--delivery-timeout must be positive")
	case addrErr != nil:
		return c.UsageError("%v", addrErr)
	}
	security, err := cli.LoadClientSecurity(*commandConfig)
	if err != nil {
		return c.UsageError("%v", err)
	}

	idempotent := *acks == "all" || *acks == "-1"
	opts := append(security,
		kgo.DefaultProduceTopic(*topic),
		kgo.RequiredAcks(ack),
		kgo.ProducerBatchCompression(codec),
		kgo.RecordDeliveryTimeout(*deliveryTimeout),
		kgo.MaxBufferedBytes(produceMaxBufferedBytes),
	)
	needs := []kmsg.Key{kmsg.Produce}
	if idempotent {
		needs = append(needs, kmsg.InitProducerID)
	} else {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if *partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := cli.NewKafkaClient(addrs, opts...)
	if err != nil {
		return c.Fail("%v", err)
	}
	defer cl.Close()
	checkCtx, cancel := context.WithTimeout(ctx, cli.DefaultAdminTimeout)
	err = cli.RequireAPIs(checkCtx, kadm.NewClient(cl), needs...)
	cancel()
	if err != nil {
		return c.Fail("%v", err)
	}

	var recHeaders []kgo.RecordHeader
	for _, h := range headers {
		recHeaders = append(recHeaders, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	p := &producer{cl: cl, partition: int32(*partition), headers: recHeaders, partitions: map[int32]bool{}}
	if *keySep != "" {
		p.keySep = []byte(*keySep)
	}

	// Reading runs beside the interrupt: a read from a terminal cannot
	// be interrupted, but the records already read can still be
	// delivered.
	readErr := make(chan error, 1)
	go func() { readErr <- p.readLines(stdin, *maxLine) }()
	var inputErr error
	select {
	case inputErr = <-readErr:
	case <-ctx.Done():
		p.stopReading()
		fmt.Fprintln(stderr, "strata produce: interrupted; delivering the records already read")
	}
	flushCtx, cancel := context.WithTimeout(context.Background(), *deliveryTimeout)
	defer cancel()
	if err := cl.Flush(flushCtx); err != nil {
		p.fail(fmt.Errorf("flush: %w", err))
	}
	return p.summarize(stderr, inputErr)
}

// producer counts one produce command's outcomes. Promises run on
// franz-go's promise goroutine, reading on its own: mu guards the counts.
type producer struct {
	cl        *kgo.Client
	keySep    []byte // nil: no keys
	partition int32  // -1: the partitioner chooses
	headers   []kgo.RecordHeader

	mu         sync.Mutex
	stopped    bool // no record is produced once set
	read       int64
	acked      int64
	ackedBytes int64
	firstErr   error
	partitions map[int32]bool
}

// splitLines is bufio.ScanLines without dropping a '\r': a line is
// everything up to '\n', so values round-trip byte for byte.
func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// readLines produces every line of r until EOF, a read error, a line
// longer than maxLine or stopReading.
func (p *producer) readLines(r io.Reader, maxLine int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, min(produceInitialLineBytes, maxLine+1)), maxLine+1)
	sc.Split(splitLines)
	line := int64(0)
	for sc.Scan() {
		line++
		rec := &kgo.Record{Headers: p.headers}
		text := sc.Bytes()
		if p.keySep != nil {
			key, value, ok := bytes.Cut(text, p.keySep)
			if !ok {
				return fmt.Errorf("line %d has no key separator %q", line, p.keySep)
			}
			rec.Key = bytes.Clone(key)
			rec.Value = append([]byte{}, value...)
		} else {
			rec.Value = append([]byte{}, text...)
		}
		if p.partition >= 0 {
			rec.Partition = p.partition
		}
		if !p.produce(rec) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d is longer than --max-line-bytes (%d bytes)", line+1, maxLine)
		}
		return fmt.Errorf("reading stdin: %w", err)
	}
	return nil
}

// produce hands rec to the client unless reading was stopped; it blocks
// while the client's buffer is full.
func (p *producer) produce(rec *kgo.Record) bool {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return false
	}
	p.read++
	p.mu.Unlock()
	// Not the interrupt's context: canceling it would fail the records
	// already buffered, and an interrupt means "deliver what was read".
	p.cl.Produce(context.Background(), rec, p.promise)
	return true
}

func (p *producer) stopReading() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

func (p *producer) promise(r *kgo.Record, err error) {
	if err != nil {
		p.fail(err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.acked++
	p.ackedBytes += int64(len(r.Key) + len(r.Value))
	p.partitions[r.Partition] = true
}

func (p *producer) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.firstErr == nil {
		p.firstErr = err
	}
}

// summarize prints the summary line (and the first error) and returns
// the exit code.
func (p *producer) summarize(stderr io.Writer, inputErr error) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(stderr, "strata produce: %d records, %d bytes, %d partitions", p.acked, p.ackedBytes, len(p.partitions))
	if unacked := p.read - p.acked; unacked > 0 {
		fmt.Fprintf(stderr, "; %d records failed", unacked)
	}
	fmt.Fprintln(stderr)
	code := exitOK
	if p.firstErr != nil {
		fmt.Fprintf(stderr, "strata produce: first error: %s\n", cli.KafkaError(p.firstErr, ""))
		code = exitError
	}
	if inputErr != nil {
		fmt.Fprintf(stderr, "strata produce: %v\n", inputErr)
		code = exitError
	}
	return code
}
