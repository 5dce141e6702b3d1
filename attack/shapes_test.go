package attack

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/record/recordtest"
	"github.com/strata-log/strata/core/wire"
)

// Every attacker comes from a loopback address of its own (127.0.0.x),
// so that max.connections.per.ip tells them apart from the victim
// (127.0.0.1) and from each other.
const (
	fromController = "127.0.0.2"
	fromMalformed  = "127.0.0.3"
	fromBombs      = "127.0.0.4"
	fromPartial    = "127.0.0.5"
	fromTrickle    = "127.0.0.6"
	fromIdle       = "127.0.0.7" // and 127.0.0.8
	fromIdle2      = "127.0.0.8"
	fromMetadata   = "127.0.0.9"
	fromBad        = "127.0.0.10"
	fromMutations  = "127.0.0.%d" // 20 + worker
)

// workers runs n copies of f until ctx ends and waits for them.
func workers(ctx context.Context, n int, f func(ctx context.Context, w int)) {
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				f(ctx, w)
			}
		}()
	}
	wg.Wait()
}

// brokerWorkers runs n workers (see workers), each on a connection of its
// own from address from to the node's broker listener, dialed again each
// time f returns. A dial that fails is a finding; the worker dials again
// after pause.
func brokerWorkers(ctx context.Context, r *run, n int, from string, pause time.Duration, f func(ctx context.Context, w int, conn net.Conn)) {
	workers(ctx, n, func(ctx context.Context, w int) {
		conn, err := dialFrom(from, r.node.BrokerAddr)
		if err != nil {
			r.finding("dial: %v", err)
			sleepCtx(ctx, pause)
			return
		}
		defer conn.Close()
		f(ctx, w, conn)
	})
}

// remaining is the time left before ctx's deadline (at least 100 ms).
func remaining(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Second
	}
	return max(time.Until(dl), 100*time.Millisecond)
}

// codes counts answers by error name, for the report.
type codes struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *codes) add(code int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	name := "OK"
	if err := kerr.ErrorForCode(code); err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			name = ke.Message
		} else {
			name = err.Error()
		}
	}
	c.n[name]++
}

func (c *codes) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for k, v := range c.n {
		parts = append(parts, fmt.Sprintf("%s×%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// --- forged quorum and controller requests at the CONTROLLER listener ---

// forgery is one request to the controller listener that must be refused:
// any answer must carry an error and grant nothing.
type forgery struct {
	name  string
	build func(epoch int32, clusterID string) kmsg.Request
}

// self is the attacked node's id; other is an id of no voter.
const (
	selfID    = 1
	nonVoter  = 77
	bigOffset = int64(1) << 40
)

func quorumRequest(from, to int32, payload quorum.Payload, clusterID string) kmsg.Request {
	req, err := quorum.EncodeRequest(quorum.Message{From: quorum.NodeID(from), To: quorum.NodeID(to), Payload: payload}, clusterID, quorum.DefaultWireVersions)
	if err != nil {
		panic(fmt.Sprintf("encode %v: %v", payload, err))
	}
	return req
}

// forgeries are issue 22's quorum shapes (finding 1) and the controller
// values the simulator's hostile peer sends, aimed at voter to (whose
// fellow voter, for a forgery in a real voter's name, is peer).
func forgeries(to, peer int32) []forgery {
	vote := func(candidate, epoch int32, last quorum.OffsetAndEpoch, clusterID string) kmsg.Request {
		return quorumRequest(candidate, to, quorum.VoteRequest{Epoch: epoch, CandidateID: quorum.NodeID(candidate), LastEnd: last}, clusterID)
	}
	return []forgery{
		{"vote-max-epoch", func(_ int32, cid string) kmsg.Request {
			return vote(peer, math.MaxInt32, quorum.OffsetAndEpoch{Offset: bigOffset, Epoch: math.MaxInt32 - 1}, cid)
		}},
		{"vote-self-named", func(e int32, cid string) kmsg.Request {
			return vote(to, e+1, quorum.OffsetAndEpoch{Offset: bigOffset, Epoch: e}, cid)
		}},
		{"vote-non-voter", func(e int32, cid string) kmsg.Request {
			return vote(nonVoter, e+1, quorum.OffsetAndEpoch{Offset: bigOffset, Epoch: e}, cid)
		}},
		{"vote-negative-offset", func(e int32, cid string) kmsg.Request {
			return vote(peer, e+1, quorum.OffsetAndEpoch{Offset: -1, Epoch: 0}, cid)
		}},
		{"vote-other-cluster", func(e int32, _ string) kmsg.Request {
			return vote(peer, e+1, quorum.OffsetAndEpoch{Offset: bigOffset, Epoch: e}, "evil-cluster-id-000000")
		}},
		{"begin-epoch-self-named", func(e int32, cid string) kmsg.Request {
			return quorumRequest(to, to, quorum.BeginQuorumEpochRequest{Epoch: e + 1, LeaderID: quorum.NodeID(to)}, cid)
		}},
		{"begin-epoch-max", func(_ int32, cid string) kmsg.Request {
			return quorumRequest(peer, to, quorum.BeginQuorumEpochRequest{Epoch: math.MaxInt32, LeaderID: quorum.NodeID(peer)}, cid)
		}},
		{"end-epoch-non-voter", func(e int32, cid string) kmsg.Request {
			return quorumRequest(nonVoter, to, quorum.EndQuorumEpochRequest{Epoch: e, LeaderID: nonVoter}, cid)
		}},
		{"fetch-negative-offset", func(e int32, cid string) kmsg.Request {
			return quorumRequest(nonVoter, to, quorum.FetchRequest{Epoch: max(e, 0), ReplicaID: nonVoter, FetchOffset: -1, MaxBytes: 1 << 10}, cid)
		}},
		{"register-negative-id", func(_ int32, cid string) kmsg.Request {
			return registration(-5, cid)
		}},
		{"register-other-cluster", func(_ int32, _ string) kmsg.Request {
			return registration(nonVoter, "evil-cluster-id-000000")
		}},
		{"heartbeat-stale-epoch", func(_ int32, _ string) kmsg.Request {
			req := kmsg.NewPtrBrokerHeartbeatRequest()
			req.Version = 1
			req.BrokerID, req.BrokerEpoch = to, math.MaxInt64
			req.CurrentMetadataOffset, req.WantFence, req.WantShutdown = math.MaxInt64, true, true
			return req
		}},
		{"allocate-producer-ids-stale-epoch", func(_ int32, _ string) kmsg.Request {
			req := kmsg.NewPtrAllocateProducerIDsRequest()
			req.BrokerID, req.BrokerEpoch = to, -5
			return req
		}},
		{"create-topics-bad-name", func(_ int32, _ string) kmsg.Request {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Version, req.TimeoutMillis = 7, 1000
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = "../../etc/passwd", 1, 1
			req.Topics = []kmsg.CreateTopicsRequestTopic{t}
			return req
		}},
	}
}

func registration(id int32, clusterID string) kmsg.Request {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 3
	req.BrokerID, req.ClusterID = id, clusterID
	req.IncarnationID = [16]byte{0: 0xee, 15: 7}
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "attacker", 9092
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{l}
	return req
}

// refusal checks an answer to a forgery: an error somewhere, nothing
// granted. It returns the epoch the answer carried (-1: none).
func refusal(resp kmsg.Response) (codes []int16, granted bool, epoch int32) {
	epoch = -1
	add := func(c int16) { codes = append(codes, c) }
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		add(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
				granted = granted || p.VoteGranted
				epoch = max(epoch, p.LeaderEpoch)
			}
		}
	case *kmsg.BeginQuorumEpochResponse:
		add(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
				epoch = max(epoch, p.LeaderEpoch)
			}
		}
	case *kmsg.EndQuorumEpochResponse:
		add(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
				epoch = max(epoch, p.LeaderEpoch)
			}
		}
	case *kmsg.FetchResponse:
		add(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
				epoch = max(epoch, p.CurrentLeader.LeaderEpoch)
			}
		}
	case *kmsg.BrokerRegistrationResponse:
		add(r.ErrorCode)
	case *kmsg.BrokerHeartbeatResponse:
		add(r.ErrorCode)
	case *kmsg.AllocateProducerIDsResponse:
		add(r.ErrorCode)
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			add(t.ErrorCode)
		}
	}
	return codes, granted, epoch
}

func anyError(codes []int16) bool {
	return slices.ContainsFunc(codes, func(c int16) bool { return c != 0 })
}

// sendForgeries sends every forgery to the controller listener at addr
// once, pipelined on one connection, and checks the answers: every one
// refused, none unanswered. It returns the largest epoch seen.
func sendForgeries(r *run, from, addr string, to, peer int32, epoch int32, clusterID string, seen *codes) (int32, error) {
	conn, err := dialFrom(from, addr)
	if err != nil {
		return epoch, err
	}
	defer conn.Close()
	fs := forgeries(to, peer)
	reqs := make([]kmsg.Request, len(fs))
	for i, f := range fs {
		reqs[i] = f.build(epoch, clusterID)
	}
	resps, err := pipeline(conn, reqs, 5*time.Second)
	for i, resp := range resps {
		cs, granted, e := refusal(resp)
		epoch = max(epoch, e)
		for _, c := range cs {
			if c != 0 {
				seen.add(c)
			}
		}
		if granted || !anyError(cs) {
			r.finding("%s to node %d at %s was not refused: granted=%v codes=%v (%+v)", fs[i].name, to, addr, granted, cs, resp)
		}
	}
	if err != nil {
		r.finding("forgeries to node %d at %s: %d of %d answered, then %v", to, addr, len(resps), len(reqs), err)
	}
	return epoch, nil
}

// attackControllerListener floods the node's CONTROLLER listener with
// forged quorum requests (a Vote at the largest epoch, self-named Votes
// and BeginQuorumEpochs, ...) and controller requests with values out of
// range (finding 1). The node is the sole voter; peer 2 is no voter.
func attackControllerListener(ctx context.Context, r *run) string {
	var seen codes
	var sent atomic.Int64
	workers(ctx, 3, func(ctx context.Context, w int) {
		epoch := int32(0)
		for ctx.Err() == nil {
			e, err := sendForgeries(r, fromController, r.node.CtrlAddr, selfID, 2, epoch, r.node.ClusterID, &seen)
			if err != nil {
				r.finding("dial the controller listener: %v", err)
				return
			}
			epoch = e
			sent.Add(int64(len(forgeries(selfID, 2))))
		}
	})
	return fmt.Sprintf("%d forgeries, answers %s", sent.Load(), seen.String())
}

// --- malformed record batches (finding 2) ---

const (
	produceVersion = 9
	produceAcks    = -1
)

// produceRequest is a Produce of one batch per (topic, partition) entry,
// in order (an entry may repeat a partition).
type part struct {
	topic     string
	partition int32
	batch     []byte
}

func produceRequest(parts ...part) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = produceVersion, produceAcks, 10000
	for _, p := range parts {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.topic {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = p.topic
			req.Topics = append(req.Topics, rt)
		}
		rt := &req.Topics[len(req.Topics)-1]
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p.partition, p.batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

// produceAnswers flattens a Produce answer in the request's order.
func produceAnswers(resp *kmsg.ProduceResponse) []kmsg.ProduceResponseTopicPartition {
	var out []kmsg.ProduceResponseTopicPartition
	for _, t := range resp.Topics {
		out = append(out, t.Partitions...)
	}
	return out
}

// goodBatch is a valid batch of keyed records (keys unique to the run, so
// that compaction keeps them all) in codec.
func goodBatch(rng *rand.Rand, prefix string, n int, codec record.Codec) ([]byte, []goodRecord) {
	now := time.Now().UnixMilli()
	var recs []byte
	var out []goodRecord
	for i := range n {
		g := goodRecord{key: fmt.Sprintf("%s-%d", prefix, i), value: fmt.Sprintf("good %d %x", i, rng.Uint64())}
		out = append(out, g)
		recs = append(recs, recordtest.Record(int32(i), 0, []byte(g.key), []byte(g.value))...)
	}
	if codec != record.CodecNone {
		var err error
		recs, err = record.NewCompressor().Compress(nil, recs, codec)
		if err != nil {
			panic(err)
		}
	}
	return record.Assemble(record.BatchHeader{
		PartitionLeaderEpoch: record.NoPartitionLeaderEpoch,
		Attributes:           record.Attributes(codec),
		LastOffsetDelta:      int32(n - 1),
		BaseTimestamp:        now,
		MaxTimestamp:         now,
		ProducerID:           record.NoProducerID,
		ProducerEpoch:        record.NoProducerEpoch,
		BaseSequence:         record.NoSequence,
		RecordCount:          int32(n),
	}, recs), out
}

var codecs = []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}

// refusedRecord is what a malformed batch may be answered with.
var refusedRecord = []int16{kerr.CorruptMessage.Code, kerr.InvalidRecord.Code}

// attackMalformedBatches sends every malformed shape of recordtest, CRC
// valid, to a delete-policy and a compacted topic, each pipelined beside
// valid batches that must be appended: the shapes refused
// (CORRUPT_MESSAGE or INVALID_RECORD), the valid ones acknowledged.
func attackMalformedBatches(ctx context.Context, r *run) string {
	var seen codes
	var goodN atomic.Int64
	shapes := recordtest.Malformed(time.Now().UnixMilli())
	attempt := r.malformedRuns.Add(1)
	brokerWorkers(ctx, r, 4, fromMalformed, 0, func(ctx context.Context, w int, conn net.Conn) {
		rng := rand.New(rand.NewPCG(r.seed, uint64(attempt-1)<<32|uint64(w)))
		for round := 0; ctx.Err() == nil; round++ {
			type sent struct {
				shape string
				topic string
				good  []goodRecord
			}
			var reqs []kmsg.Request
			var what []sent
			for _, topic := range []string{deleteTopic, compactTopic} {
				for range 3 {
					s := shapes[rng.IntN(len(shapes))]
					reqs = append(reqs, produceRequest(part{topic, 0, s.Payload}))
					what = append(what, sent{shape: s.Name, topic: topic})
				}
				b, g := goodBatch(rng, fmt.Sprintf("good-%s-a%d-w%d-r%d", topic, attempt, w, round), 1+rng.IntN(4), codecs[rng.IntN(len(codecs))])
				reqs = append(reqs, produceRequest(part{topic, 0, b}))
				what = append(what, sent{shape: "valid", topic: topic, good: g})
			}
			resps, err := pipeline(conn, reqs, 10*time.Second)
			for i, resp := range resps {
				ps := produceAnswers(resp.(*kmsg.ProduceResponse))
				if len(ps) != 1 {
					r.finding("%s to %s: %d partitions answered", what[i].shape, what[i].topic, len(ps))
					continue
				}
				p := ps[0]
				seen.add(p.ErrorCode)
				switch {
				case what[i].good != nil && p.ErrorCode != 0:
					r.finding("a valid batch to %s was refused: %v %s", what[i].topic, kerr.ErrorForCode(p.ErrorCode), deref(p.ErrorMessage))
				case what[i].good != nil:
					r.addGood(what[i].topic, 0, p.BaseOffset, what[i].good)
					goodN.Add(int64(len(what[i].good)))
				case !slices.Contains(refusedRecord, p.ErrorCode):
					r.finding("shape %s to %s answered %v (%s), not CORRUPT_MESSAGE or INVALID_RECORD", what[i].shape, what[i].topic, kerr.ErrorForCode(p.ErrorCode), deref(p.ErrorMessage))
				}
			}
			if err != nil {
				if ctx.Err() == nil {
					r.finding("malformed batches: %d of %d answered, then %v", len(resps), len(reqs), err)
				}
				return
			}
		}
	})
	return fmt.Sprintf("%d shapes; %d good records appended; answers %s", len(shapes), goodN.Load(), seen.String())
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// --- decompression bombs (findings 3 and 5) ---

type bomb struct {
	name  string
	batch []byte
	parts int // partitions of one request
}

// bombs builds the bombs once (generating them takes CPU, so outside any
// phase's measurements).
var bombs = sync.OnceValue(func() []bomb {
	const maxRequestBytes = 4 << 20
	var out []bomb
	add := func(name string, b []byte) {
		out = append(out, bomb{name: name, batch: b, parts: min(bombPartitions, max(1, maxRequestBytes/len(b)))})
	}
	ts := time.Now().UnixMilli()
	add("zstd-64MiB", recordtest.Bomb(record.CodecZstd, 64<<20, ts))
	add("zstd-rle-2GiB", recordtest.ZstdRLEBomb(2<<30, ts))
	add("gzip-64MiB", recordtest.Bomb(record.CodecGzip, 64<<20, ts))
	add("lz4-17MiB", recordtest.Bomb(record.CodecLZ4, 17<<20, ts))
	add("snappy-17MiB", recordtest.Bomb(record.CodecSnappy, 17<<20, ts))
	add("snappy-claims-1GiB", recordtest.Bomb(record.CodecSnappy, 1<<30, ts))
	return out
})

// refusedBomb is what a bomb may be answered with: past the decompressed
// bound (MESSAGE_TOO_LARGE), or refused as a record that does not parse.
var refusedBomb = []int16{kerr.MessageTooLarge.Code, kerr.CorruptMessage.Code, kerr.InvalidRecord.Code}

// attackBombs sends requests of a bomb in each of up to 50 partitions of a
// compacted topic (finding 5's shape: the loop was held 32 s), and
// requests that repeat one partition three times, with a bomb and with a
// valid batch: every bomb refused, every repeated partition refused
// (INVALID_REQUEST for each copy), nothing appended (checked after).
func attackBombs(ctx context.Context, r *run) string {
	var seen codes
	var sentBytes, sentReqs atomic.Int64
	bs := bombs()
	brokerWorkers(ctx, r, 3, fromBombs, 0, func(ctx context.Context, w int, conn net.Conn) {
		rng := rand.New(rand.NewPCG(r.seed, 100+uint64(w)))
		for ctx.Err() == nil {
			var reqs []kmsg.Request
			var names []string
			var repeated []bool
			for range 2 {
				b := bs[rng.IntN(len(bs))]
				var parts []part
				for p := range b.parts {
					parts = append(parts, part{bombTopic, int32(p), b.batch})
				}
				reqs = append(reqs, produceRequest(parts...))
				names, repeated = append(names, b.name), append(repeated, false)
				sentBytes.Add(int64(b.parts * len(b.batch)))
			}
			valid, _ := goodBatch(rng, "repeated", 2, record.CodecNone)
			b := bs[rng.IntN(len(bs))]
			reqs = append(reqs,
				produceRequest(part{bombTopic, 7, b.batch}, part{bombTopic, 7, b.batch}, part{bombTopic, 7, b.batch}),
				produceRequest(part{bombTopic, 8, valid}, part{bombTopic, 8, valid}, part{bombTopic, 8, valid}))
			names = append(names, b.name+"-repeated", "valid-repeated")
			repeated = append(repeated, true, true)
			resps, err := pipeline(conn, reqs, 30*time.Second)
			sentReqs.Add(int64(len(resps)))
			for i, resp := range resps {
				for _, p := range produceAnswers(resp.(*kmsg.ProduceResponse)) {
					seen.add(p.ErrorCode)
					switch {
					case repeated[i] && p.ErrorCode != kerr.InvalidRequest.Code:
						r.finding("%s: partition %d answered %v, not INVALID_REQUEST", names[i], p.Partition, kerr.ErrorForCode(p.ErrorCode))
					case !repeated[i] && !slices.Contains(refusedBomb, p.ErrorCode):
						r.finding("%s: partition %d answered %v (%s)", names[i], p.Partition, kerr.ErrorForCode(p.ErrorCode), deref(p.ErrorMessage))
					}
				}
			}
			if err != nil {
				if ctx.Err() == nil {
					r.finding("bombs: %d of %d answered, then %v", len(resps), len(reqs), err)
				}
				return
			}
		}
	})
	return fmt.Sprintf("%d requests, %d MiB of bombs; answers %s", sentReqs.Load(), sentBytes.Load()>>20, seen.String())
}

// --- partial frames and trickling (findings 4 and 6) ---

// waitClosed reads from c until the node closes it and returns how long
// that took from start, or an error if it answered or did not close by
// the deadline.
func waitClosed(c net.Conn, start time.Time, deadline time.Duration) (time.Duration, error) {
	_ = c.SetReadDeadline(start.Add(deadline))
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			return 0, fmt.Errorf("the node answered %d bytes", n)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return 0, fmt.Errorf("not closed within %v", deadline)
		}
		if err != nil {
			return time.Since(start), nil // EOF or reset: closed
		}
	}
}

// durations collects durations safely.
type durations struct {
	mu sync.Mutex
	ds []time.Duration
}

func (d *durations) add(x time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ds = append(d.ds, x)
}

func (d *durations) summary() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ds) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d, closed after %v to %v", len(d.ds), slices.Min(d.ds).Round(10*time.Millisecond), slices.Max(d.ds).Round(10*time.Millisecond))
}

// closeSlack is how much later than its rule a connection may be closed:
// the read timeout is checked in intervals, and the machine is shared.
const closeSlack = 2 * time.Second

// stalled runs n connections from address from, each written by send (in
// a goroutine of its own: the node may stop reading, which is the point)
// until the node closes it, which it must do within the read timeout; each
// is opened again at once. It returns how long the node took to close
// them; what names a connection that was not closed, for the finding.
func stalled(ctx context.Context, r *run, n int, from, what string, send func(ctx context.Context, conn net.Conn)) string {
	var closed durations
	brokerWorkers(ctx, r, n, from, 100*time.Millisecond, func(ctx context.Context, _ int, conn net.Conn) {
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			send(ctx, conn)
		}()
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
		defer stop()
		took, err := waitClosed(conn, start, readTimeout+closeSlack)
		_ = conn.Close()
		<-done
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			r.finding("%s: %v", what, err)
			return
		}
		closed.add(took)
	})
	return closed.summary()
}

// attackPartialFrames: ten connections each announce a 100 MiB frame,
// send 1 MiB + 1 byte of it and stall (finding 4: the node went to 1 GB
// RSS and /healthz took 7 s); each must be closed by the read timeout, and
// is opened again at once.
func attackPartialFrames(ctx context.Context, r *run) string {
	body := append(binary.BigEndian.AppendUint32(nil, 100<<20), bytes.Repeat([]byte{0xa5}, 1<<20+1)...)
	return "stalled frames: " + stalled(ctx, r, 10, fromPartial, "a stalled 100 MiB frame", func(_ context.Context, conn net.Conn) {
		_, _ = conn.Write(body)
	})
}

// attackTrickle: five connections each send a Metadata request for 100
// topics (about 3 KiB) at ten bytes a second (finding 6: one byte a second
// was never timed out); each must be closed by the read timeout and is
// opened again.
func attackTrickle(ctx context.Context, r *run) string {
	var names []string
	for i := range 100 {
		names = append(names, fmt.Sprintf("trickled-topic-name-%04d", i))
	}
	frame := encode(metadataRequest(1, names...), 1, "trickle")
	return "tricklers: " + stalled(ctx, r, 5, fromTrickle, "a trickled frame", func(ctx context.Context, conn net.Conn) {
		for i := range frame {
			if _, err := conn.Write(frame[i : i+1]); err != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
}

// --- idle sockets up to max.connections (finding 6) ---

// attackIdleSockets opens silent connections from two addresses until the
// node refuses more: the first address is held to max.connections.per.ip,
// the second takes what is left of max.connections. Meanwhile the victim's
// open connections must be served; every silent one must be closed by
// connections.max.idle.ms; and then a new client must get in.
func attackIdleSockets(ctx context.Context, r *run, v *victim) string {
	v.skipFresh(true)
	defer v.skipFresh(false)
	var mu sync.Mutex
	var lived []time.Duration // how long each accepted connection lived
	refused := map[string]int{}
	var watchers sync.WaitGroup
	// open dials n connections from one address at once; each is watched
	// until the node closes it: at once if refused, at the idle timeout
	// if accepted.
	open := func(from string, n int) {
		for range n {
			c, err := dialFrom(from, r.node.BrokerAddr)
			if err != nil {
				r.finding("dial from %s: %v", from, err)
				return
			}
			opened := time.Now()
			watchers.Add(1)
			go func() {
				defer watchers.Done()
				defer c.Close()
				took, err := waitClosed(c, opened, idleTimeout+closeSlack)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					r.finding("a silent connection from %s: %v", from, err)
				case took < idleTimeout/2:
					refused[from]++
				default:
					lived = append(lived, took)
				}
			}()
		}
	}
	filled := time.Now()
	open(fromIdle, maxConnectionsPerIP+10)
	open(fromIdle2, maxConnections)

	// Full: a new client is refused until the silent ones are closed, then
	// gets in.
	var servedAfter time.Duration
	for time.Since(filled) < idleTimeout+2*closeSlack {
		c, err := dialFrom(victimAddr, r.node.BrokerAddr)
		if err == nil {
			_, err = roundTrip(c, metadataRequest(1, victimTopic), time.Second)
			_ = c.Close()
			if err == nil {
				servedAfter = time.Since(filled)
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if servedAfter == 0 {
		r.finding("no new client got in within %v of the slots filling", idleTimeout+2*closeSlack)
	}
	watchers.Wait()
	<-ctx.Done()
	mu.Lock()
	defer mu.Unlock()
	if refused[fromIdle] != 10 {
		r.finding("max.connections.per.ip is %d, and %d of %d connections from one address were refused", maxConnectionsPerIP, refused[fromIdle], maxConnectionsPerIP+10)
	}
	span := "none"
	if len(lived) > 0 {
		span = fmt.Sprintf("%v to %v", slices.Min(lived).Round(10*time.Millisecond), slices.Max(lived).Round(10*time.Millisecond))
		if slices.Min(lived) < idleTimeout-100*time.Millisecond {
			r.finding("a silent connection was closed after %v, before connections.max.idle.ms (%v)", slices.Min(lived), idleTimeout)
		}
	}
	return fmt.Sprintf("%d silent connections held, closed idle after %s; refused at once: %d from the first address, %d from the second; a new client served %v after the slots filled",
		len(lived), span, refused[fromIdle], refused[fromIdle2], servedAfter.Round(10*time.Millisecond))
}

// --- pipelined all-topics Metadata floods (finding 5) ---

// attackMetadataFlood: four connections each pipeline 500 Metadata v1
// requests for every topic (about 2,000 partitions, an answer of ~100 KB),
// reading the answers as they come, for the whole phase (finding 5: 2,000
// such requests held the loop 55 s).
func attackMetadataFlood(ctx context.Context, r *run) string {
	var answers, partitions, parsed atomic.Int64
	const pipelined = 500
	brokerWorkers(ctx, r, 4, fromMetadata, 0, func(ctx context.Context, w int, conn net.Conn) {
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
		defer stop()
		req := metadataRequest(1)
		var out []byte
		for i := range pipelined {
			out = append(out, encode(req, int32(i), "flood")...)
		}
		go func() { _, _ = conn.Write(out) }()
		_ = conn.SetReadDeadline(time.Now().Add(remaining(ctx) + time.Second))
		for i := range pipelined {
			frame, err := readFrame(conn)
			if err != nil {
				if ctx.Err() == nil {
					r.finding("metadata flood: %d of %d answered, then %v", i, pipelined, err)
				}
				return
			}
			answers.Add(1)
			// Decoding every answer would make this process, where
			// the victim runs too, the bottleneck: one in fifty.
			if i%50 != 0 {
				continue
			}
			resp, err := wire.ParseResponse(frame, req)
			if err != nil {
				r.finding("metadata flood: %v", err)
				return
			}
			md := resp.(*kmsg.MetadataResponse)
			if len(md.Topics) < heavyTopics {
				r.finding("an all-topics Metadata answered %d topics", len(md.Topics))
			}
			for _, t := range md.Topics {
				partitions.Add(int64(len(t.Partitions)))
			}
			parsed.Add(1)
		}
	})
	per := int64(0)
	if n := parsed.Load(); n > 0 {
		per = partitions.Load() / n
	}
	return fmt.Sprintf("%d all-topics answers of %d partitions each", answers.Load(), per)
}

// --- requests that must be refused, and a bad frame (findings 7 and 8) ---

// attackBadRequests loops over: CreateTopics with configs a partition
// cannot use (INVALID_CONFIG) and of the coordinators' topics
// (INVALID_REQUEST); a replica fetch from a broker that is no replica
// (NOT_LEADER_OR_FOLLOWER naming no leader, or UNKNOWN_LEADER_EPOCH with
// the leader's epoch); and a valid request followed by a frame that does
// not parse on the same connection (the valid one's answer must arrive,
// then the connection closes).
func attackBadRequests(ctx context.Context, r *run) string {
	var counts [3]atomic.Int64
	brokerWorkers(ctx, r, 2, fromBad, 0, func(ctx context.Context, w int, conn net.Conn) {
		for ctx.Err() == nil {
			if !badCreateTopics(r, conn) || !unknownReplicaFetch(r, conn) {
				return
			}
			counts[0].Add(1)
			counts[1].Add(1)
			if validThenBadFrame(r) {
				counts[2].Add(1)
			}
		}
	})
	return fmt.Sprintf("%d CreateTopics refused, %d replica fetches refused, %d answers before a bad frame", counts[0].Load(), counts[1].Load(), counts[2].Load())
}

func badCreateTopics(r *run, conn net.Conn) bool {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 5, 5000
	want := map[string]int16{}
	add := func(name, key, value string, code int16) {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, 1, 1
		if key != "" {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = key, kmsg.StringPtr(value)
			t.Configs = []kmsg.CreateTopicsRequestTopicConfig{c}
		}
		req.Topics = append(req.Topics, t)
		want[name] = code
	}
	add("bad-segment-bytes", "segment.bytes", "14", kerr.InvalidConfig.Code)
	add("bad-max-message-bytes", "max.message.bytes", "0", kerr.InvalidConfig.Code)
	add("bad-segment-index-bytes", "segment.index.bytes", "4", kerr.InvalidConfig.Code)
	add("__consumer_offsets", "", "", kerr.InvalidRequest.Code)
	add("__transaction_state", "", "", kerr.InvalidRequest.Code)
	resp, err := roundTrip(conn, req, 10*time.Second)
	if err != nil {
		r.finding("CreateTopics: %v", err)
		return false
	}
	for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
		if t.ErrorCode != want[t.Topic] {
			r.finding("CreateTopics %s answered %v (%s), want %v", t.Topic, kerr.ErrorForCode(t.ErrorCode), deref(t.ErrorMessage), kerr.ErrorForCode(want[t.Topic]))
		}
	}
	return true
}

func unknownReplicaFetch(r *run, conn net.Conn) bool {
	md, err := roundTrip(conn, metadataRequest(12, deleteTopic), 5*time.Second)
	if err != nil {
		r.finding("Metadata v12: %v", err)
		return false
	}
	mt := md.(*kmsg.MetadataResponse).Topics
	if len(mt) != 1 || len(mt[0].Partitions) != 1 {
		r.finding("Metadata v12 of %s: %d topics", deleteTopic, len(mt))
		return false
	}
	epoch := mt[0].Partitions[0].LeaderEpoch
	for _, v := range []int16{12, 15} {
		for _, current := range []int32{-1, epoch} {
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = v, 0, 1<<20, -1
			req.ReplicaID = nonVoter
			req.ReplicaState.ID, req.ReplicaState.Epoch = nonVoter, 1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = deleteTopic, mt[0].TopicID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = 0, 1<<20, current, -1
			rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
			req.Topics = []kmsg.FetchRequestTopic{rt}
			resp, err := roundTrip(conn, req, 5*time.Second)
			if err != nil {
				r.finding("replica fetch v%d from an unknown replica: %v", v, err)
				return false
			}
			ft := resp.(*kmsg.FetchResponse).Topics
			if len(ft) != 1 || len(ft[0].Partitions) != 1 {
				r.finding("replica fetch v%d: %d topics answered", v, len(ft))
				continue
			}
			p := ft[0].Partitions[0]
			switch {
			case current == -1 && (p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != -1):
				r.finding("replica fetch v%d from an unknown replica without an epoch: %v, leader %d (want NOT_LEADER_OR_FOLLOWER naming none)", v, kerr.ErrorForCode(p.ErrorCode), p.CurrentLeader.LeaderID)
			case current != -1 && p.ErrorCode != kerr.UnknownLeaderEpoch.Code:
				r.finding("replica fetch v%d from an unknown replica at the leader's epoch: %v (want UNKNOWN_LEADER_EPOCH)", v, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	return true
}

// validThenBadFrame sends a Metadata request and, in the same write, a
// frame too short to hold a request header: the Metadata answer must
// arrive, then the node closes the connection.
func validThenBadFrame(r *run) bool {
	conn, err := dialFrom(fromBad, r.node.BrokerAddr)
	if err != nil {
		r.finding("dial: %v", err)
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := metadataRequest(1, victimTopic)
	out := append(encode(req, 42, "bad-frame"), withSize([]byte{0x00, 0x03, 0x00})...)
	if _, err := conn.Write(out); err != nil {
		r.finding("write: %v", err)
		return false
	}
	frame, err := readFrame(conn)
	if err != nil {
		r.finding("the answer before a bad frame was lost: %v", err)
		return false
	}
	if corr := int32(binary.BigEndian.Uint32(frame)); corr != 42 {
		r.finding("the answer before a bad frame has correlation id %d", corr)
	}
	if _, err := io.ReadFull(conn, make([]byte, 1)); err == nil {
		r.finding("the node answered a frame too short for a header")
	} else {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			r.finding("the connection was not closed after a bad frame")
		}
	}
	return true
}
