package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/internal/cli"
)

// The raw producer (--producer raw): batches compressed once, before the
// phase, and sent again and again in Produce requests built by hand
// (acks=all, no idempotence, every partition's next batch in each
// request, benchRawInflight requests in flight per connection). It costs
// its process almost no CPU, so what it measures is the broker: kgo
// compresses every batch as it goes, and with zstd on two shared cores
// the client is the bottleneck long before a broker is. It is also what
// a hostile client does: compression costs the attacker nothing.
const (
	producerKgo = "kgo"
	producerRaw = "raw"
	// benchRawBatches is how many distinct batches each partition's
	// requests cycle through.
	benchRawBatches = 16
	// benchRawInflight is how many Produce requests one raw producer
	// keeps in flight on its connection to a broker (the Java client's
	// max.in.flight.requests.per.connection).
	benchRawInflight = 5
	// benchRawRequestTimeout is the requests' timeout, in ms.
	benchRawRequestTimeoutMs = 30_000
)

// rawBatch is a batch built for the raw producer.
type rawBatch struct {
	raw          []byte
	records      int64
	valueBytes   int64 // what throughput counts
	recordsBytes int64 // the records section uncompressed, as kgo's metrics count it
	codec        record.Codec
}

// rawCodec is the record codec (and raw snappy, as kgo writes it) for a
// --compression value; kgo's default is snappy.
func rawCodec(compression string) record.Codec {
	switch compression {
	case "gzip":
		return record.CodecGzip
	case "snappy", compressionDefault:
		return record.CodecSnappy
	case "lz4":
		return record.CodecLZ4
	case "zstd":
		return record.CodecZstd
	}
	return record.CodecNone
}

// buildRawBatches builds n batches of values, each holding as many
// records as fit in batchBytes uncompressed (as kgo's
// ProducerBatchMaxBytes bounds them), timestamped now.
func buildRawBatches(values [][]byte, compression string, n, batchBytes int) ([]rawBatch, error) {
	codec := rawCodec(compression)
	opts := []record.BuilderOption{record.WithCompression(codec)}
	if codec == record.CodecSnappy {
		opts = append(opts, record.WithRawSnappy())
	}
	b := record.NewBuilder(opts...)
	now := time.Now().UnixMilli()
	out := make([]rawBatch, n)
	next := 0
	for i := range out {
		b.Reset(opts...)
		var valueBytes int64
		for {
			v := values[next%len(values)]
			// A record's overhead is a few bytes of varints.
			if b.Count() > 0 && b.UncompressedSize()+len(v)+32 > batchBytes {
				break
			}
			b.Append(now, nil, v)
			valueBytes += int64(len(v))
			next++
		}
		raw, err := b.AppendTo(nil)
		if err != nil {
			return nil, fmt.Errorf("building a batch: %w", err)
		}
		out[i] = rawBatch{raw: raw, records: int64(b.Count()), valueBytes: valueBytes,
			recordsBytes: int64(b.UncompressedSize() - record.HeaderSize), codec: codec}
	}
	return out, nil
}

// rawProducer sends prebuilt batches to topic's partition leaders.
type rawProducer struct {
	cl      *kgo.Client
	topic   string
	topicID [16]byte          // for Produce v13, which names topics by id
	leaders map[int32][]int32 // broker id: its partitions
	batches []rawBatch

	records, valueBytes atomic.Int64
	stats               batchStats
}

// newRawProducer connects to seeds and learns topic's partition leaders.
func newRawProducer(ctx context.Context, seeds []string, topic string, batches []rawBatch) (*rawProducer, error) {
	cl, err := cli.NewKafkaClient(seeds)
	if err != nil {
		return nil, err
	}
	p := &rawProducer{cl: cl, topic: topic, batches: batches, leaders: map[int32][]int32{}}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	mctx, cancel := context.WithTimeout(ctx, benchAdminTimeout)
	defer cancel()
	resp, err := req.RequestWith(mctx, cl)
	if err == nil && len(resp.Topics) != 1 {
		err = fmt.Errorf("metadata of %s: %d topics in the answer", topic, len(resp.Topics))
	}
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	p.topicID = resp.Topics[0].TopicID
	for _, pt := range resp.Topics[0].Partitions {
		if pt.Leader < 0 {
			cl.Close()
			return nil, fmt.Errorf("partition %d of %s has no leader", pt.Partition, topic)
		}
		p.leaders[pt.Leader] = append(p.leaders[pt.Leader], pt.Partition)
	}
	return p, nil
}

func (p *rawProducer) close() { p.cl.Close() }

// run sends requests until ctx ends or until is false, benchRawInflight
// at a time to each leader, and returns the first failure (a request
// that fails or a partition that answers an error).
func (p *rawProducer) run(ctx context.Context, until func() bool) error {
	var failed failure
	var wg sync.WaitGroup
	for leader, partitions := range p.leaders {
		br := p.cl.Broker(int(leader))
		for w := range benchRawInflight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; ctx.Err() == nil && failed.get() == nil && until(); i += benchRawInflight {
					if err := p.send(ctx, br, partitions, i); err != nil {
						if ctx.Err() == nil {
							failed.set(err)
						}
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	return failed.get()
}

// send sends one request with the i-th batch of each partition.
func (p *rawProducer) send(ctx context.Context, br *kgo.Broker, partitions []int32, i int) error {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, benchRawRequestTimeoutMs
	t := kmsg.NewProduceRequestTopic()
	t.Topic, t.TopicID = p.topic, p.topicID
	sent := make([]*rawBatch, len(partitions))
	for j, partition := range partitions {
		b := &p.batches[(i+j)%len(p.batches)]
		sent[j] = b
		tp := kmsg.NewProduceRequestTopicPartition()
		tp.Partition, tp.Records = partition, b.raw
		t.Partitions = append(t.Partitions, tp)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		return err
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				msg := ""
				if rp.ErrorMessage != nil {
					msg = *rp.ErrorMessage
				}
				return fmt.Errorf("partition %d: %s", rp.Partition, cli.KafkaError(err, msg))
			}
		}
	}
	for j, b := range sent {
		p.records.Add(b.records)
		p.valueBytes.Add(b.valueBytes)
		p.stats.OnProduceBatchWritten(kgo.BrokerMetadata{}, p.topic, partitions[j], kgo.ProduceBatchMetrics{
			NumRecords: int(b.records), UncompressedBytes: int(b.recordsBytes),
			CompressedBytes: len(b.raw) - record.HeaderSize, CompressionType: uint8(b.codec)})
	}
	return nil
}

// produceRaw is phase 1 with raw producers: w.producers of them, each
// with its own connections, for duration or maxProduceBytes (shared).
func (w kafkaWorkload) produceRaw(ctx context.Context, seeds []string, topic string, values [][]byte) (throughput, produceBatches, error) {
	batches, err := buildRawBatches(values, w.compression, benchRawBatches, w.rawBatchBytes())
	if err != nil {
		return throughput{}, produceBatches{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, w.duration+benchPhaseGrace)
	defer cancel()
	producers := make([]*rawProducer, max(w.producers, 1))
	for i := range producers {
		if producers[i], err = newRawProducer(ctx, seeds, topic, batches); err != nil {
			return throughput{}, produceBatches{}, err
		}
		defer producers[i].close()
	}
	start := time.Now()
	deadline := start.Add(w.duration)
	until := func() bool {
		var n int64
		for _, p := range producers {
			n += p.valueBytes.Load()
		}
		return n < w.maxProduceBytes && time.Now().Before(deadline)
	}
	err = inParallel(len(producers), func(i int) error { return producers[i].run(ctx, until) })
	elapsed := time.Since(start)
	var records, bytes int64
	var stats produceBatches
	for _, p := range producers {
		records += p.records.Load()
		bytes += p.valueBytes.Load()
		stats = stats.add(p.stats.get())
	}
	if err != nil {
		return throughput{}, produceBatches{}, fmt.Errorf("%w (%d records acknowledged before it)", err, records)
	}
	return newThroughput(records, bytes, elapsed), stats, nil
}
