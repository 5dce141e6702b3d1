package scenario

// This file is the simulator's hostile client (issue 22): two processes of
// their own, outside the nemesis, that attack the brokers' client
// listeners during the fault phase as a buggy client or an attacker would,
// in the scenarios built on runLog (log, replicated, replicated5, groups,
// txn), in one seed in two drawn from their own stream
// ("hostile-client"), so that no other draw, and no pinned seed's fault
// mix, moves.
//
// "hostile-client" sends, to the leaders of the scenario's topics,
// batches the broker must refuse: every record/recordtest malformed shape,
// decompression bombs of each codec, a partition named several times in
// one Produce, valid batches with a byte flipped under their CRC, batches
// past max.message.bytes, batches to the internal topics (groups, txn);
// pipelined floods of large compressed valid batches; Produce, Fetch,
// ListOffsets, Metadata and ApiVersions requests with seeded byte flips;
// connections that stay silent, that stop reading their answers, and that
// close in the middle of their requests. "hostile-slow" reaches the
// brokers over links of a few hundred bytes per second (a slow socket: the
// simulated network moves whole frames, and a frame on a link with a
// bandwidth arrives over time, partly received meanwhile, under the node
// transport's progress rule; sim.NetConfig) and sends requests there.
//
// Every value of a batch that must be refused starts with
// hostileRefusedMark; every value of a valid batch is recorded in the
// history (Produced, then the send's outcome) as a producer's are, so
// that valid hostile records are checked like any others and not counted
// as phantoms. Checks, (x) hostile input:
//   - a request that must be refused is never answered with success, and
//     answered with its error (INVALID_RECORD, with the record's index
//     from Produce v8; CORRUPT_MESSAGE; MESSAGE_TOO_LARGE;
//     INVALID_REQUEST; INVALID_TOPIC_EXCEPTION) or with an error that
//     comes before validation (not the leader, no such partition, a
//     storage error, not enough replicas);
//   - no reader ever reads a value that starts with hostileRefusedMark
//     (before the history's own checks, which would call it a phantom);
//   - no broker ever holds more connections from a hostile host than its
//     max.connections.per.ip override;
//   - by the end of the healed phase every connection the brokers' bounds
//     must close (silent ones by connections.max.idle.ms, ones whose
//     answers go unread, slow uploads) is closed, unless its broker
//     restarted, and no broker counts any connection from a hostile host.
//
// A panic anywhere already fails the seed, and the scenario's liveness
// checks (f), (g), (i) hold after the heal, when the hostile client stops.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/record/recordtest"
	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/linearizability"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/kclient"
)

// The hostile client's hosts and marks.
const (
	hostileClientHost = "hostile-client"
	hostileSlowHost   = "hostile-slow"
	// hostileRefusedMark starts every value of a batch the broker must
	// refuse.
	hostileRefusedMark = "hostile-refused "
)

// Bounds of the hostile client, per seed.
const (
	// hostileMaxFloodBytes bounds the uncompressed bytes of the valid
	// batches of one seed's floods: every reader reads them, every
	// replica stores them, and what makes a flood is its count of
	// requests (past the 32 in flight per connection), not its bytes.
	// At 12 MiB of 0.25-8 KiB values the floods doubled the real time
	// of make test's seeds (every reader and replica copying them) for
	// no more requests than 3 MiB of 64 B-2 KiB values send.
	hostileMaxFloodBytes = 3 << 20
	// hostileBombBytes is what a bomb decompresses to: past the 16 MiB
	// bound of the default max.message.bytes (record.MaxDecompressedBytes).
	hostileBombBytes = 17 << 20
	// hostileOversizeBytes is an incompressible batch's size, past the
	// default max.message.bytes (1 MiB).
	hostileOversizeBytes = 1<<20 + 64<<10
	// hostileRawTimeout bounds how long a raw connection waits for its
	// answers before the hostile client closes it.
	hostileRawTimeout = 3 * time.Second
	// hostileLeakWait is how long after the last hostile connection
	// closed on the client's side the brokers may still count it.
	hostileLeakWait = 200 * time.Millisecond
)

// hostileKind is one kind of attack.
type hostileKind uint8

const (
	hkMalformed hostileKind = iota // a recordtest malformed shape
	hkBomb                         // a decompression bomb
	hkDuplicate                    // one partition named several times
	hkFlood                        // pipelined large valid batches
	hkCorrupt                      // a valid batch with a byte flipped under its CRC
	hkOversize                     // a batch past max.message.bytes
	hkInternal                     // a batch to an internal topic
	hkMutate                       // requests with seeded byte flips
	hkIdle                         // connections that send nothing
	hkMidClose                     // connections closed in the middle of their requests
	hkSlowRead                     // connections that stop reading their answers
	hkSlowSend                     // requests over a link of a few hundred bytes a second
	hkKinds
)

var hostileKindNames = [hkKinds]string{"malformed", "bomb", "duplicate", "flood", "corrupt", "oversize", "internal",
	"mutate", "idle", "mid-close", "slow-read", "slow-send"}

func (k hostileKind) String() string { return hostileKindNames[k] }

// hostilePlan is what a seed draws for its hostile client.
type hostilePlan struct {
	r *rand.Rand
	// idle is the brokers' connections.max.idle.ms, low so that silent
	// connections close within the run.
	idle time.Duration
	// perIP and slowPerIP are the brokers' max.connections.per.ip
	// overrides for hostileClientHost and hostileSlowHost.
	perIP, slowPerIP int
	// interval is the mean wait between attacks.
	interval time.Duration
	// kinds are the attacks the seed runs.
	kinds []hostileKind
	// slowRate is the bandwidth of hostileSlowHost's links, bytes/s.
	slowRate int64
	// maxBombs and maxOversize bound the bombs and the oversized
	// batches of the seed (each costs real CPU or memory).
	maxBombs, maxOversize int
}

func (p *hostilePlan) String() string {
	kinds := make([]string, len(p.kinds))
	for i, k := range p.kinds {
		kinds[i] = k.String()
	}
	return fmt.Sprintf("kinds=[%s] every~%v idle=%v per-ip=%d/%d slow=%dB/s", strings.Join(kinds, ","), p.interval, p.idle, p.perIP, p.slowPerIP, p.slowRate)
}

// drawHostilePlan draws the seed's hostile client from its own stream:
// none in one seed in two (and never without faults).
func drawHostilePlan(s *sim.Sim, o Options, shape logShape) *hostilePlan {
	r := s.Rand("hostile-client")
	if o.NoFaults || r.IntN(2) != 0 {
		return nil
	}
	p := &hostilePlan{r: r,
		idle:     time.Duration(1000+r.IntN(4000)) * time.Millisecond,
		perIP:    6 + r.IntN(10),
		interval: time.Duration(10+r.IntN(140)) * time.Millisecond,
		slowRate: int64(100 + r.IntN(2900)), slowPerIP: 1 + r.IntN(4),
		maxBombs: 1 + r.IntN(3), maxOversize: 1 + r.IntN(2)}
	// Swarm: each kind in three seeds of four, at least one.
	for k := hostileKind(0); k < hkKinds; k++ {
		if k == hkInternal && !shape.groups() && !shape.txn() {
			continue // no internal topic to aim at
		}
		if r.IntN(4) != 0 {
			p.kinds = append(p.kinds, k)
		}
	}
	if len(p.kinds) == 0 {
		p.kinds = []hostileKind{hkMalformed}
	}
	return p
}

// hostileCount is what one kind of attack did.
type hostileCount struct {
	sent, answered, refused, transient int
}

// hostileClient is one run's hostile client.
type hostileClient struct {
	h     *logHarness
	plan  *hostilePlan
	r     *rand.Rand
	until time.Duration
	e     env.Env
	c     *kclient.Client
	slowE env.Env
	// seq numbers the attacks, for marks and build names.
	seq    int
	counts [hkKinds]hostileCount
	// conns are the raw connections, in order of dialing.
	conns []*hostileConn
	// floodBytes, bombs and oversize count what the bounds above limit.
	floodBytes, bombs, oversize int
	bombCache                   map[string][]byte
	// comp is the client's one compressor: a zstd encoder is costly
	// to set up, and the client builds batches at every attack.
	comp      *record.Compressor
	formatter *kmsg.RequestFormatter
	table     protocol.Table
	stopped   bool
	// settledAt is when the final check first found every connection
	// closed on the client's side (-1 before).
	settledAt time.Duration
	why       string
}

// startHostileClient starts the seed's hostile client, which attacks
// until until (the heal).
func startHostileClient(h *logHarness, until time.Duration) *hostileClient {
	plan := h.hostilePlan
	hc := &hostileClient{h: h, plan: plan, r: plan.r, until: until, bombCache: map[string][]byte{}, comp: record.NewCompressor(),
		formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(hostileClientHost)), table: broker.APIs(), settledAt: -1}
	h.s.AddProcess(hostileClientHost, func(e env.Env) {
		hc.e = e
		hc.c = kclient.New(e, kclient.Config{ClientID: hostileClientHost, Bootstrap: h.bootstrap()})
		for _, t := range h.swarm.topics {
			hc.c.AddTopics(t.name)
		}
		if slices.Contains(plan.kinds, hkInternal) {
			hc.c.AddTopics(broker.OffsetsTopic)
		}
		hc.next()
	}).Start()
	if slices.Contains(plan.kinds, hkSlowSend) {
		h.s.AddProcess(hostileSlowHost, func(e env.Env) {
			hc.slowE = e
			for _, n := range h.names {
				h.s.Network().SetLinkLatency(hostileSlowHost, n, sim.LinkConfig{Latency: 100 * time.Microsecond, BytesPerSecond: plan.slowRate})
			}
		}).Start()
	}
	return hc
}

// String describes the hostile client for the run's describe line.
func (hc *hostileClient) String() string {
	var parts []string
	for k := hostileKind(0); k < hkKinds; k++ {
		if c := hc.counts[k]; c.sent > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d/%d/%d/%d", k, c.sent, c.answered, c.refused, c.transient))
		}
	}
	open := 0
	for _, c := range hc.conns {
		if !c.closed {
			open++
		}
	}
	return fmt.Sprintf("%s sent/answered/refused/transient: %s conns=%d open=%d", hc.plan, strings.Join(parts, " "), len(hc.conns), open)
}

// next schedules the next attack; at the heal the client stops.
func (hc *hostileClient) next() {
	wait := time.Duration(hc.r.ExpFloat64()*float64(hc.plan.interval)) + time.Millisecond
	hc.e.AfterFunc(wait, func() {
		if hc.h.s.Now() >= hc.until {
			hc.stop()
			return
		}
		hc.attack(hc.plan.kinds[hc.r.IntN(len(hc.plan.kinds))])
		hc.next()
	})
}

// stop ends the attacks: the client's own connections close; the raw
// ones are left to the brokers' bounds (or to their own timers).
func (hc *hostileClient) stop() {
	if hc.stopped {
		return
	}
	hc.stopped = true
	hc.c.Close()
}

func (hc *hostileClient) attack(k hostileKind) {
	hc.seq++
	switch k {
	case hkMalformed:
		hc.sendMalformed()
	case hkBomb:
		hc.sendBomb()
	case hkDuplicate:
		hc.sendDuplicate()
	case hkFlood:
		hc.sendFlood()
	case hkCorrupt:
		hc.sendCorrupt()
	case hkOversize:
		hc.sendOversize()
	case hkInternal:
		hc.sendInternal()
	case hkMutate:
		hc.sendMutated()
	case hkIdle:
		hc.openIdle()
	case hkMidClose:
		hc.sendMidClose()
	case hkSlowRead:
		hc.openSlowReader()
	case hkSlowSend:
		hc.sendSlow()
	}
}

// hostilePart is a partition to aim at and its leader as the client
// knows it (-1: unknown; the request goes to any broker).
type hostilePart struct {
	topic     string
	id        [16]byte
	partition int32
	leader    int32
}

// target picks a partition of the scenario's topics.
func (hc *hostileClient) target() hostilePart {
	parts := hc.h.partitions()
	p := parts[hc.r.IntN(len(parts))]
	return hc.targetOf(p.Topic, p.Partition)
}

func (hc *hostileClient) targetOf(topic string, partition int32) hostilePart {
	t := hostilePart{topic: topic, partition: partition, leader: -1}
	if tm, ok := hc.c.Topic(topic); ok {
		t.id = tm.ID
	}
	if leader, _, ok := hc.c.Leader(topic, partition); ok {
		t.leader = leader
	}
	return t
}

// node is the broker index (0-based) of a target, drawn when its leader
// is unknown.
func (hc *hostileClient) node(t hostilePart) int {
	if t.leader >= 1 && int(t.leader) <= len(hc.h.names) {
		return int(t.leader) - 1
	}
	return hc.r.IntN(len(hc.h.names))
}

// produceEntry is one partition entry of a Produce request.
type produceEntry struct {
	t       hostilePart
	payload []byte
}

// produceRequest is a Produce of entries, each in its own topic entry
// (so a repeated partition may repeat in either form), naming topics by
// name and by id so that any version the client picks resolves them.
func produceRequest(acks int16, entries []produceEntry, sameTopicEntry bool) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 2000
	for _, en := range entries {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = en.t.partition, en.payload
		if sameTopicEntry && len(req.Topics) > 0 && req.Topics[len(req.Topics)-1].Topic == en.t.topic {
			req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, rp)
			continue
		}
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = en.t.topic, en.t.id
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// hostileRefusal is what a refused Produce must be answered with.
type hostileRefusal struct {
	kind   hostileKind
	what   string
	want   *kerr.Error
	record int32 // the record at fault (INVALID_RECORD from v8), -1 for none
	// also is another error that is right: a flip of the attributes'
	// transactional bit is TRANSACTIONAL_ID_AUTHORIZATION_FAILED in a
	// request without a transactional id, before the CRC is read, as in
	// Kafka's KafkaApis.handleProduceRequest.
	also *kerr.Error
}

// hostileTransient are the errors a refused batch may get before it is
// validated: the partition is not served here now.
var hostileTransient = []int16{kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.LeaderNotAvailable.Code,
	kerr.KafkaStorageError.Code, kerr.NotEnoughReplicas.Code, kerr.UnknownTopicID.Code}

// sendRefused sends a Produce whose every partition must be refused
// through the client (the leader, at a version it negotiates) and judges
// the answer.
func (hc *hostileClient) sendRefused(ref hostileRefusal, node int, req *kmsg.ProduceRequest) {
	hc.counts[ref.kind].sent++
	hc.h.s.Fault("hostile-client", fmt.Sprintf("%s:%s->%s", ref.kind, ref.what, hc.h.names[node]))
	hc.c.Do(int32(node+1), req, 0, func(resp kmsg.Response, err error) {
		if err != nil {
			return // not sent, or no answer: nothing to judge
		}
		hc.judge(ref, req, resp.(*kmsg.ProduceResponse))
	})
}

// judge checks a refused Produce's answer: every partition entry answered,
// none with success, each with ref's error or a transient one.
func (hc *hostileClient) judge(ref hostileRefusal, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
	c := &hc.counts[ref.kind]
	c.answered++
	asked, answered := 0, 0
	for _, t := range req.Topics {
		asked += len(t.Partitions)
	}
	if hc.h.bugs.hostileBlind {
		return
	}
	for i, t := range resp.Topics {
		if t.Topic == "" && i < len(req.Topics) {
			t.Topic = req.Topics[i].Topic // answered by id (v13)
		}
		for _, p := range t.Partitions {
			answered++
			switch {
			case p.ErrorCode == 0:
				hc.fail("%s (%s) to %s-%d accepted at offset %d (Produce v%d): the broker must refuse it with %s",
					ref.kind, ref.what, t.Topic, p.Partition, p.BaseOffset, req.Version, ref.want.Message)
			case p.ErrorCode == ref.want.Code || ref.also != nil && p.ErrorCode == ref.also.Code:
				c.refused++
				if ref.want == kerr.InvalidRecord && ref.record >= 0 && req.Version >= 8 &&
					!slices.ContainsFunc(p.ErrorRecords, func(e kmsg.ProduceResponseTopicPartitionErrorRecord) bool { return e.RelativeOffset == ref.record }) {
					hc.fail("%s (%s) to %s-%d refused INVALID_RECORD without record %d among its record errors %+v (Produce v%d)",
						ref.kind, ref.what, t.Topic, p.Partition, ref.record, p.ErrorRecords, req.Version)
				}
			case slices.Contains(hostileTransient, p.ErrorCode):
				c.transient++
				hc.h.s.Trace(fmt.Sprintf("hostile-client: %s %s-%d transient %s", ref.kind, t.Topic, p.Partition, kerrName(p.ErrorCode)))
				hc.c.RefreshMetadata()
			default:
				hc.fail("%s (%s) to %s-%d answered %s, want %s (Produce v%d): %s", ref.kind, ref.what, t.Topic, p.Partition,
					kerrName(p.ErrorCode), ref.want.Message, req.Version, deref(p.ErrorMessage))
			}
		}
	}
	if answered != asked {
		hc.fail("%s (%s): a Produce of %d partition entries answered with %d (Produce v%d)", ref.kind, ref.what, asked, answered, req.Version)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// fail fails the run with an (x) finding.
func (hc *hostileClient) fail(format string, args ...any) {
	hc.h.fail(fmt.Errorf("(x) hostile input: at %v: %s", hc.h.s.Now(), fmt.Sprintf(format, args...)))
}

// mark is the refused mark of the current attack.
func (hc *hostileClient) mark() string { return fmt.Sprintf("%sn%d ", hostileRefusedMark, hc.seq) }

// nowMs is the client's clock, for record timestamps.
func (hc *hostileClient) nowMs() int64 { return hc.e.Now().UnixMilli() }

func (hc *hostileClient) acks() int16 {
	if hc.r.IntN(3) == 0 {
		return 1
	}
	return -1
}

func (hc *hostileClient) sendMalformed() {
	shapes := recordtest.MalformedWith(hc.comp, hc.nowMs(), hc.mark())
	sh := shapes[hc.r.IntN(len(shapes))]
	t := hc.target()
	hc.sendRefused(hostileRefusal{kind: hkMalformed, what: sh.Name, want: kerr.InvalidRecord, record: sh.Record},
		hc.node(t), produceRequest(hc.acks(), []produceEntry{{t, sh.Payload}}, false))
}

// bombCodecs are the bombs, by name: each codec streamed, and zstd's
// smallest (RLE blocks).
var bombCodecs = []string{"gzip", "snappy", "lz4", "zstd", "zstd-rle"}

func (hc *hostileClient) bomb(name string) []byte {
	if b, ok := hc.bombCache[name]; ok {
		return b
	}
	var b []byte
	switch name {
	case "gzip":
		b = recordtest.Bomb(record.CodecGzip, hostileBombBytes, 0)
	case "snappy":
		// Past 256 MiB recordtest writes a block that claims its size:
		// snappy states it first, so the bound refuses it unread.
		b = recordtest.Bomb(record.CodecSnappy, 1<<30, 0)
	case "lz4":
		b = recordtest.Bomb(record.CodecLZ4, hostileBombBytes, 0)
	case "zstd":
		b = recordtest.Bomb(record.CodecZstd, hostileBombBytes, 0)
	default:
		b = recordtest.ZstdRLEBomb(2<<30, 0)
	}
	hc.bombCache[name] = b
	return b
}

func (hc *hostileClient) sendBomb() {
	if hc.bombs >= hc.plan.maxBombs {
		hc.sendMalformed()
		return
	}
	hc.bombs++
	name := bombCodecs[hc.r.IntN(len(bombCodecs))]
	// A fresh copy: the payload's timestamps are the bomb's, and the
	// network owns what is sent.
	payload := bytes.Clone(hc.bomb(name))
	t := hc.target()
	hc.sendRefused(hostileRefusal{kind: hkBomb, what: name, want: kerr.MessageTooLarge, record: -1},
		hc.node(t), produceRequest(hc.acks(), []produceEntry{{t, payload}}, false))
}

// validBatch builds a valid batch of values with codec.
func (hc *hostileClient) validBatch(codec record.Codec, values []string) []byte {
	b := record.NewBuilder(record.WithCompression(codec), record.WithCompressor(hc.comp))
	ts := hc.nowMs()
	for _, v := range values {
		b.Append(ts, nil, []byte(v))
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(fmt.Sprintf("hostile client: build a batch: %v", err))
	}
	return out
}

// refusedValues are n values with the attack's refused mark.
func (hc *hostileClient) refusedValues(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%sr%d", hc.mark(), i)
	}
	return out
}

func (hc *hostileClient) sendDuplicate() {
	t := hc.target()
	copies := 2 + hc.r.IntN(2)
	entries := make([]produceEntry, copies)
	for i := range entries {
		entries[i] = produceEntry{t, hc.validBatch(logCodecs[hc.r.IntN(len(logCodecs))], hc.refusedValues(1+hc.r.IntN(4)))}
	}
	same := hc.r.IntN(2) == 0
	what := "repeated-topic-entries"
	if same {
		what = "repeated-partition-entries"
	}
	hc.sendRefused(hostileRefusal{kind: hkDuplicate, what: what, want: kerr.InvalidRequest, record: -1},
		hc.node(t), produceRequest(hc.acks(), entries, same))
}

func (hc *hostileClient) sendCorrupt() {
	t := hc.target()
	batch := hc.validBatch(logCodecs[hc.r.IntN(len(logCodecs))], hc.refusedValues(1+hc.r.IntN(8)))
	// From the CRC field on, every byte is covered by the CRC: one byte
	// flipped there is always a mismatch.
	i := batchCRCOffset + hc.r.IntN(len(batch)-batchCRCOffset)
	batch[i] ^= byte(1 + hc.r.IntN(255))
	hc.sendRefused(hostileRefusal{kind: hkCorrupt, what: fmt.Sprintf("byte-%d", i), want: kerr.CorruptMessage, record: -1, also: flipAlso(i)},
		hc.node(t), produceRequest(hc.acks(), []produceEntry{{t, batch}}, false))
}

// A batch's CRC field, and its attributes, by byte offset: every byte from
// the CRC field on is under the CRC.
const (
	batchCRCOffset        = 17
	batchAttributesOffset = 21
)

// flipAlso is the other right answer to a batch with byte i flipped
// under its CRC (hostileRefusal.also).
func flipAlso(i int) *kerr.Error {
	if i == batchAttributesOffset+1 {
		return kerr.TransactionalIDAuthorizationFailed
	}
	return nil
}

// noise fills n bytes from the client's stream: incompressible.
func (hc *hostileClient) noise(n int) []byte {
	out := make([]byte, 0, n+8)
	for len(out) < n {
		v := hc.r.Uint64()
		out = append(out, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
	}
	return out[:n]
}

func (hc *hostileClient) sendOversize() {
	if hc.oversize >= hc.plan.maxOversize {
		hc.sendCorrupt()
		return
	}
	hc.oversize++
	t := hc.target()
	value := hc.mark() + string(hc.noise(hostileOversizeBytes))
	hc.sendRefused(hostileRefusal{kind: hkOversize, what: fmt.Sprintf("%d-bytes", len(value)), want: kerr.MessageTooLarge, record: -1},
		hc.node(t), produceRequest(hc.acks(), []produceEntry{{t, hc.validBatch(record.CodecNone, []string{value})}}, false))
}

func (hc *hostileClient) sendInternal() {
	n := 0
	switch {
	case hc.h.group != nil:
		n = groupOffsetsPartitions
	case hc.h.txn != nil:
		n = txnOffsetsPartitions
	}
	if n == 0 {
		hc.sendMalformed()
		return
	}
	t := hc.targetOf(broker.OffsetsTopic, int32(hc.r.IntN(n)))
	hc.sendRefused(hostileRefusal{kind: hkInternal, what: broker.OffsetsTopic, want: kerr.InvalidTopicException, record: -1},
		hc.node(t), produceRequest(hc.acks(), []produceEntry{{t, hc.validBatch(record.CodecNone, hc.refusedValues(1+hc.r.IntN(3)))}}, false))
}

// validValues are n unique values of the attack, each about size bytes,
// compressible or not.
func (hc *hostileClient) validValues(n, size int, noisy bool) []string {
	out := make([]string, n)
	for i := range out {
		head := fmt.Sprintf("hostile n%d r%d ", hc.seq, i)
		var filler string
		if noisy {
			filler = string(hc.noise(max(0, size-len(head))))
		} else {
			filler = strings.Repeat("flood ", max(0, size-len(head))/6)
		}
		out[i] = head + filler
	}
	return out
}

// hostileBuild is a valid batch the hostile client sends, recorded in
// the history as a producer's build is.
type hostileBuild struct {
	part   linearizability.LogPartition
	name   string
	values []string
}

// built records a valid batch before it is sent.
func (hc *hostileClient) built(t hostilePart, values []string) hostileBuild {
	h := hc.h
	b := hostileBuild{part: linearizability.LogPartition{Topic: t.topic, Partition: t.partition},
		name: fmt.Sprintf("%s/n%d", hostileClientHost, hc.seq), values: values}
	if err := h.hist.Produced(b.part, b.name, values); err != nil {
		h.fail(err)
	}
	h.model.built(hostileClientHost, b.part, b.name, values, h.s.Now())
	for _, v := range values {
		hc.floodBytes += len(v)
	}
	return b
}

// outcome records a valid batch's send: acknowledged at base (code 0),
// refused (code), or unknown (err, or no answer expected).
func (hc *hostileClient) outcome(b hostileBuild, acks int16, resp *kmsg.ProduceResponse, err error) {
	h := hc.h
	kind, base, code := kclient.Unknown, int64(-1), int16(0)
	detail := "no answer"
	if err != nil {
		detail = err.Error()
	}
	if resp != nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
		p := resp.Topics[0].Partitions[0]
		kind, base, code = kclient.Acked, p.BaseOffset, p.ErrorCode
		if code != 0 {
			kind, base, detail = kclient.Rejected, -1, kerrName(code)
		}
	}
	leaderOnly := acks == 1 && h.shape.rf() > 1
	h.model.sent(b.name, kind, base, !leaderOnly, h.s.Now())
	h.s.Trace(fmt.Sprintf("log:%s %s %s %s off=%d code=%d", hostileClientHost, kind, b.part, b.name, base, code))
	a := linearizability.LogAttempt{Producer: hostileClientHost, Partition: b.part, Build: b.name, Send: 1, Offset: base}
	switch kind {
	case kclient.Acked:
		a.Outcome = linearizability.LogAcked
		if leaderOnly {
			a.Outcome, a.Detail = linearizability.LogUnknown, "acks=1 (the leader only)"
		}
	case kclient.Rejected:
		a.Outcome, a.Detail = linearizability.LogRejected, detail
	default:
		a.Outcome, a.Detail = linearizability.LogUnknown, detail
	}
	h.fail(h.hist.Attempt(a, b.values))
}

// sendFlood pipelines a burst of large valid batches to one leader.
func (hc *hostileClient) sendFlood() {
	t := hc.target()
	node := hc.node(t)
	burst := 5 + hc.r.IntN(36)
	hc.h.s.Fault("hostile-client", fmt.Sprintf("flood:%d->%s", burst, hc.h.names[node]))
	for i := 0; i < burst && hc.floodBytes < hostileMaxFloodBytes; i++ {
		hc.seq++
		hc.counts[hkFlood].sent++
		noisy := hc.r.IntN(4) == 0
		values := hc.validValues(4+hc.r.IntN(29), 64+hc.r.IntN(2<<10), noisy)
		codec := logCodecs[1+hc.r.IntN(len(logCodecs)-1)]
		b := hc.built(t, values)
		acks := hc.acks()
		req := produceRequest(acks, []produceEntry{{t, hc.validBatch(codec, values)}}, false)
		hc.c.Do(int32(node+1), req, 0, func(resp kmsg.Response, err error) {
			pr, _ := resp.(*kmsg.ProduceResponse)
			if pr != nil {
				hc.counts[hkFlood].answered++
			}
			hc.outcome(b, acks, pr, err)
		})
	}
}

// hostileConn is one raw connection of the hostile client or of
// hostileSlowHost: requests encoded (and maybe mutated) by hand.
type hostileConn struct {
	hc   *hostileClient
	kind hostileKind
	host string
	// node is the broker (0-based) and inc its incarnation when the
	// connection was made: a connection to an incarnation that ended is
	// exempt from the closing check.
	node int
	inc  uint64
	// mustClose: the broker's bounds must close it (idle, unread
	// answers, a slow upload).
	mustClose bool
	conn      env.Conn
	opened    time.Duration
	closed    bool
	closedErr error
	// closedAt is when it closed on the client's side; byUs says the
	// client closed it.
	closedAt time.Duration
	byUs     bool
	nextCorr int32
	pending  []*hostileCall
}

type hostileCall struct {
	corr int32
	req  kmsg.Request
	done func(kmsg.Response)
}

// dial opens a raw connection from e (the client's or the slow host's)
// to broker node and calls ready with it once connected.
func (hc *hostileClient) dial(e env.Env, host string, kind hostileKind, node int, mustClose bool, ready func(*hostileConn)) {
	h := hc.h
	hc.counts[kind].sent++
	h.s.Fault("hostile-client", fmt.Sprintf("%s->%s", kind, h.names[node]))
	inc := h.procs[node].Incarnation()
	e.Net().Dial(h.names[node]+logBrokerPort, func(conn env.Conn, err error) {
		if err != nil {
			return
		}
		c := &hostileConn{hc: hc, kind: kind, host: host, node: node, inc: inc, mustClose: mustClose,
			conn: conn, opened: h.s.Now()}
		if h.procs[node].Incarnation() != inc {
			// The broker restarted between the dial and its answer:
			// which incarnation accepted is unknown, so the
			// connection is never the bounds' to close.
			c.inc = 0
		}
		hc.conns = append(hc.conns, c)
		conn.OnFrame(c.onFrame)
		conn.OnClose(c.onClose)
		hc.checkPerIP()
		ready(c)
	})
}

// checkPerIP checks every running broker's count of the hostile hosts'
// connections against its max.connections.per.ip override.
func (hc *hostileClient) checkPerIP() {
	h := hc.h
	for i := range h.procs {
		srv := h.server(i)
		if srv == nil {
			continue
		}
		for _, lim := range []struct {
			host string
			max  int
		}{{hostileClientHost, hc.plan.perIP}, {hostileSlowHost, hc.plan.slowPerIP}} {
			if n := srv.Broker().ConnectionsFrom(lim.host); n > lim.max {
				hc.fail("%s holds %d connections from %s, max.connections.per.ip is %d for it", h.names[i], n, lim.host, lim.max)
			}
		}
	}
}

// send sends req on c (flipped by mutate, which may be nil) and calls
// done with its answer, or nil if none comes.
func (c *hostileConn) send(req kmsg.Request, mutate func([]byte), done func(kmsg.Response)) {
	if c.closed {
		if done != nil {
			done(nil)
		}
		return
	}
	corr := c.nextCorr
	c.nextCorr++
	frame := wire.EncodeRequest(c.hc.formatter, req, corr)
	if mutate != nil {
		mutate(frame)
	}
	if err := c.conn.Send(frame); err != nil {
		if done != nil {
			done(nil)
		}
		return
	}
	if done != nil {
		c.pending = append(c.pending, &hostileCall{corr: corr, req: req, done: done})
	}
}

func (c *hostileConn) onFrame(frame []byte) {
	corr, ok := wire.ResponseCorrelationID(frame)
	i := slices.IndexFunc(c.pending, func(p *hostileCall) bool { return p.corr == corr })
	if !ok || i < 0 {
		return // an answer to a request sent without done, or to a flipped correlation id
	}
	p := c.pending[i]
	c.pending = slices.Delete(c.pending, i, i+1)
	resp, err := wire.ParseResponse(frame, p.req)
	if err != nil {
		c.hc.fail("%s: %s answered a %s v%d with a frame that does not parse: %v", c.kind, c.hc.h.names[c.node], kmsg.NameForKey(p.req.Key()), p.req.GetVersion(), err)
	}
	p.done(resp)
}

func (c *hostileConn) onClose(err error) {
	c.closed, c.closedErr, c.closedAt = true, err, c.hc.h.s.Now()
	pending := c.pending
	c.pending = nil
	for _, p := range pending {
		p.done(nil)
	}
}

// close closes c from the client's side.
func (c *hostileConn) close() {
	if !c.closed {
		c.byUs = true
		c.conn.Close()
	}
}

// closeLater closes c after d, or once every answer came.
func (c *hostileConn) closeLater(d time.Duration) {
	c.hc.e.AfterFunc(d, c.close)
}

// version picks a version of key the brokers serve, at least minV.
func (hc *hostileClient) version(key kmsg.Key, minV int16) int16 {
	a, ok := hc.table.Lookup(key.Int16())
	if !ok {
		panic("hostile client: the brokers do not serve " + key.Name())
	}
	lo := max(a.MinVersion, minV)
	return lo + int16(hc.r.IntN(int(a.MaxVersion-lo)+1))
}

// readRequest is a request that reads (or asks for nothing): ApiVersions,
// Metadata of every topic, a Fetch or a ListOffsets of t. None can create
// anything, whatever bytes are flipped in it: Metadata asks for no topic
// by name.
func (hc *hostileClient) readRequest(t hostilePart, maxWait time.Duration) kmsg.Request {
	switch hc.r.IntN(4) {
	case 0:
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = hc.version(kmsg.ApiVersions, 0)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "hostile", "1"
		return req
	case 1:
		req := kmsg.NewPtrMetadataRequest()
		req.Version = hc.version(kmsg.Metadata, 1)
		req.Topics, req.AllowAutoTopicCreation = nil, false
		return req
	case 2:
		req := kmsg.NewPtrFetchRequest()
		req.Version = hc.version(kmsg.Fetch, 4)
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, int32(maxWait/time.Millisecond), 1<<20, 4<<20
		req.SessionEpoch = -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = t.topic, t.id
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = t.partition, 0, 1<<20, -1
		ft.Partitions = []kmsg.FetchRequestTopicPartition{fp}
		req.Topics = []kmsg.FetchRequestTopic{ft}
		return req
	default:
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = hc.version(kmsg.ListOffsets, 1)
		req.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = t.topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = t.partition, []int64{-1, -2}[hc.r.IntN(2)], -1
		lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{lp}
		req.Topics = []kmsg.ListOffsetsRequestTopic{lt}
		return req
	}
}

// rawProduce is a Produce of one valid batch of values to t at a
// version the brokers serve, recorded in the history; done records its
// outcome. It returns the request and the batch's bytes within it.
func (hc *hostileClient) rawProduce(t hostilePart, acks int16, values []string) (*kmsg.ProduceRequest, []byte, func(kmsg.Response)) {
	b := hc.built(t, values)
	batch := hc.validBatch(logCodecs[hc.r.IntN(len(logCodecs))], values)
	req := produceRequest(acks, []produceEntry{{t, batch}}, false)
	req.Version = hc.version(kmsg.Produce, 3)
	done := func(resp kmsg.Response) {
		pr, _ := resp.(*kmsg.ProduceResponse)
		hc.outcome(b, acks, pr, nil)
	}
	return req, batch, done
}

// sendMutated sends one to four requests with seeded byte flips on a new
// connection and closes it once answered (a bad frame closes it sooner).
func (hc *hostileClient) sendMutated() {
	t := hc.target()
	hc.dial(hc.e, hostileClientHost, hkMutate, hc.node(t), false, func(c *hostileConn) {
		n := 1 + hc.r.IntN(4)
		left := n
		answered := func() {
			left--
			if left == 0 {
				c.close()
			}
		}
		for range n {
			if hc.r.IntN(3) == 0 {
				hc.sendMutatedProduce(c, t, answered)
				continue
			}
			req := hc.readRequest(t, time.Duration(hc.r.IntN(300))*time.Millisecond)
			flips := 1 + hc.r.IntN(3)
			if req.Key() == kmsg.Metadata.Int16() {
				flips = 1 // one flip cannot make a topic list, so nothing is created
			}
			c.send(req, hc.flipper(0, -1, flips), func(resp kmsg.Response) {
				if resp != nil {
					hc.counts[hkMutate].answered++
				}
				answered()
			})
		}
		c.closeLater(hostileRawTimeout)
	})
}

// flipper flips n bytes of a frame at random positions in [from, to)
// (to -1: the end), never the header's key, version and correlation id.
func (hc *hostileClient) flipper(from, to, n int) func([]byte) {
	return func(frame []byte) {
		lo, hi := max(from, 8), to
		if hi < 0 || hi > len(frame) {
			hi = len(frame)
		}
		if hi <= lo {
			return
		}
		for range n {
			frame[lo+hc.r.IntN(hi-lo)] ^= byte(1 + hc.r.IntN(255))
		}
	}
}

// sendMutatedProduce sends a valid batch (recorded in the history) with
// one byte flipped within its batch: under the CRC the answer must be an
// error, before it (base offset, length, leader epoch, magic) anything may
// come, and values that arrive are the history's.
func (hc *hostileClient) sendMutatedProduce(c *hostileConn, t hostilePart, answered func()) {
	hc.seq++
	acks := []int16{-1, 1, 0}[hc.r.IntN(3)]
	req, batch, record := hc.rawProduce(t, acks, hc.validValues(1+hc.r.IntN(6), 16+hc.r.IntN(200), false))
	frame := wire.EncodeRequest(hc.formatter, req, 0)
	start := bytes.Index(frame, batch)
	if start < 0 {
		panic("hostile client: the batch is not in its request")
	}
	pos := start + hc.r.IntN(len(batch))
	underCRC := pos-start >= batchCRCOffset
	also := flipAlso(pos - start)
	flip := func(f []byte) { f[pos] ^= byte(1 + hc.r.IntN(255)) }
	if acks == 0 {
		c.send(req, flip, nil)
		record(nil)
		answered()
		return
	}
	c.send(req, flip, func(resp kmsg.Response) {
		pr, _ := resp.(*kmsg.ProduceResponse)
		if pr != nil {
			hc.counts[hkMutate].answered++
			if underCRC && !hc.h.bugs.hostileBlind && len(pr.Topics) == 1 && len(pr.Topics[0].Partitions) == 1 {
				p := pr.Topics[0].Partitions[0]
				switch {
				case p.ErrorCode == 0:
					hc.fail("a Produce v%d with byte %d of its batch flipped (under the CRC) to %s-%d accepted at %d", req.Version, pos-start, t.topic, t.partition, p.BaseOffset)
				case p.ErrorCode != kerr.CorruptMessage.Code && (also == nil || p.ErrorCode != also.Code) && !slices.Contains(hostileTransient, p.ErrorCode):
					hc.fail("a Produce v%d with byte %d of its batch flipped (under the CRC) to %s-%d answered %s, want CORRUPT_MESSAGE", req.Version, pos-start, t.topic, t.partition, kerrName(p.ErrorCode))
				}
			}
		}
		record(resp)
		answered()
	})
}

// openIdle opens connections to one broker that send nothing: the
// broker closes each after connections.max.idle.ms (or at once past its
// max.connections.per.ip).
func (hc *hostileClient) openIdle() {
	node := hc.r.IntN(len(hc.h.names))
	n := 1 + hc.r.IntN(hc.plan.perIP+2)
	for range n {
		hc.dial(hc.e, hostileClientHost, hkIdle, node, true, func(*hostileConn) {})
	}
}

// sendMidClose sends one to three requests (reads, a long-polling
// Fetch, a valid Produce) and closes the connection a moment later, at
// its first answer or before its requests arrive.
func (hc *hostileClient) sendMidClose() {
	t := hc.target()
	hc.dial(hc.e, hostileClientHost, hkMidClose, hc.node(t), false, func(c *hostileConn) {
		atFirst := hc.r.IntN(2) == 0
		first := func(kmsg.Response) {
			if atFirst {
				c.close()
			}
		}
		for range 1 + hc.r.IntN(3) {
			if hc.r.IntN(3) == 0 {
				hc.seq++
				req, _, record := hc.rawProduce(t, hc.acks(), hc.validValues(1+hc.r.IntN(4), 16+hc.r.IntN(100), false))
				c.send(req, nil, func(resp kmsg.Response) { record(resp); first(resp) })
				continue
			}
			c.send(hc.readRequest(t, time.Duration(500+hc.r.IntN(2500))*time.Millisecond), nil, first)
		}
		// Within a link's latency (50-500 µs) or a little after.
		c.closeLater(time.Duration(hc.r.Int64N(int64(3 * time.Millisecond))))
	})
}

// openSlowReader sends requests on a connection that stops reading its
// answers, for ever or for a while: the broker's bounds must close it.
func (hc *hostileClient) openSlowReader() {
	t := hc.target()
	hc.dial(hc.e, hostileClientHost, hkSlowRead, hc.node(t), true, func(c *hostileConn) {
		c.conn.Pause()
		for range 1 + hc.r.IntN(20) {
			c.send(hc.readRequest(t, 0), nil, nil)
		}
		if hc.r.IntN(2) == 0 {
			c.hc.e.AfterFunc(time.Duration(500+hc.r.IntN(3000))*time.Millisecond, c.conn.Resume)
		}
	})
}

// sendSlow sends one request from hostileSlowHost, whose links carry
// plan.slowRate bytes a second: below the node transport's progress rule
// (1 KiB/s) a large frame is closed after its first window (20 s), above
// it the frame arrives over seconds, longer than connections.max.idle.ms,
// which must not close a connection receiving a frame.
func (hc *hostileClient) sendSlow() {
	if hc.slowE == nil {
		return
	}
	t := hc.target()
	hc.dial(hc.slowE, hostileSlowHost, hkSlowSend, hc.node(t), true, func(c *hostileConn) {
		if hc.r.IntN(2) == 0 {
			c.send(hc.readRequest(t, 0), nil, func(resp kmsg.Response) {
				if resp != nil {
					hc.counts[hkSlowSend].answered++
				}
			})
			return
		}
		hc.seq++ // the dial answered later: other attacks numbered values meanwhile
		req, _, record := hc.rawProduce(t, -1, hc.validValues(1+hc.r.IntN(4), 256+hc.r.IntN(6<<10), true))
		c.send(req, nil, func(resp kmsg.Response) {
			if resp != nil {
				hc.counts[hkSlowSend].answered++
			}
			record(resp)
		})
	})
}

// settle is the final check of the connections, asked at every step of
// the final phase: it reports whether it is done; a failure is in why.
func (hc *hostileClient) settle() bool {
	h := hc.h
	var open []string
	for _, c := range hc.conns {
		if c.closed {
			continue
		}
		if !c.mustClose || h.server(c.node) == nil || h.procs[c.node].Incarnation() != c.inc {
			// Ours to close: not the broker's to bound, or its
			// broker's incarnation ended (a machine that lost power
			// leaves the connection half-open on this side).
			c.close()
			continue
		}
		open = append(open, fmt.Sprintf("%s to %s from %v", c.kind, h.names[c.node], c.opened))
	}
	if len(open) > 0 {
		hc.settledAt = -1
		hc.why = fmt.Sprintf("%d connections the brokers' bounds must close are open: %s", len(open), strings.Join(open, "; "))
		return false
	}
	if hc.settledAt < 0 {
		hc.settledAt = h.s.Now()
	}
	if h.s.Now() < hc.settledAt+hostileLeakWait {
		hc.why = "waiting for the brokers to see the last connections close"
		return false
	}
	for i := range h.procs {
		srv := h.server(i)
		if srv == nil {
			continue
		}
		for _, host := range []string{hostileClientHost, hostileSlowHost} {
			if n := srv.Broker().ConnectionsFrom(host); n > 0 {
				hc.why = fmt.Sprintf("%s still counts %d connections from %s, all closed", h.names[i], n, host)
				return false
			}
		}
	}
	return true
}

// hostileTally sums what hostile clients did over seeds, for the tests'
// figures and their proof that the checks bite.
type hostileTally struct {
	seeds  int
	counts [hkKinds]hostileCount
	// closedAtOnce and expired count the connections the brokers'
	// bounds had to close: closed within hostileAtOnce of opening (past
	// max.connections.per.ip), or later (idle, unread answers, slow
	// uploads); slowFrames the uploads the progress rule closed.
	closedAtOnce, expired [hkKinds]int
	slowFrames            uint64
}

// hostileAtOnce separates a connection refused at its accept from one
// closed by a timeout.
const hostileAtOnce = 50 * time.Millisecond

// add sums one run's hostile client, if it ran.
func (t *hostileTally) add(h *logHarness) {
	hc := h.hostileClient
	if hc == nil {
		return
	}
	t.seeds++
	for k := range hc.counts {
		c := hc.counts[k]
		t.counts[k].sent += c.sent
		t.counts[k].answered += c.answered
		t.counts[k].refused += c.refused
		t.counts[k].transient += c.transient
	}
	for _, c := range hc.conns {
		if !c.mustClose || !c.closed || c.byUs {
			continue
		}
		if c.closedAt-c.opened < hostileAtOnce {
			t.closedAtOnce[c.kind]++
		} else {
			t.expired[c.kind]++
		}
	}
	t.slowFrames += h.s.Network().Stats().SlowFrames
}

// merge adds o's figures to t's.
func (t *hostileTally) merge(o hostileTally) {
	t.seeds += o.seeds
	for k := range t.counts {
		t.counts[k].sent += o.counts[k].sent
		t.counts[k].answered += o.counts[k].answered
		t.counts[k].refused += o.counts[k].refused
		t.counts[k].transient += o.counts[k].transient
		t.closedAtOnce[k] += o.closedAtOnce[k]
		t.expired[k] += o.expired[k]
	}
	t.slowFrames += o.slowFrames
}

func (t *hostileTally) String() string {
	var parts []string
	for k := hostileKind(0); k < hkKinds; k++ {
		c := t.counts[k]
		part := fmt.Sprintf("%s sent=%d answered=%d", k, c.sent, c.answered)
		if c.refused+c.transient > 0 {
			part += fmt.Sprintf(" refused=%d transient=%d", c.refused, c.transient)
		}
		if t.closedAtOnce[k]+t.expired[k] > 0 {
			part += fmt.Sprintf(" closed-at-once=%d expired=%d", t.closedAtOnce[k], t.expired[k])
		}
		parts = append(parts, part)
	}
	return fmt.Sprintf("%d seeds with the hostile client: %s; %d slow uploads closed by the progress rule", t.seeds, strings.Join(parts, "; "), t.slowFrames)
}

// bites reports what the runs did not show: every kind sent, each
// refusal answered with its error at least once, each bound closing
// connections (empty: all shown).
func (t *hostileTally) bites(internal bool) []string {
	var missing []string
	for k := hostileKind(0); k < hkKinds; k++ {
		if k == hkInternal && !internal {
			continue
		}
		c := t.counts[k]
		switch {
		case c.sent == 0:
			missing = append(missing, k.String()+" never sent")
		case k <= hkInternal && k != hkFlood && c.refused == 0:
			missing = append(missing, k.String()+" never refused with its error")
		case k == hkFlood && c.answered == 0:
			missing = append(missing, "flood never answered")
		}
	}
	for _, k := range []hostileKind{hkIdle, hkSlowRead, hkSlowSend} {
		if t.expired[k] == 0 {
			missing = append(missing, k.String()+" never closed by a broker's bound")
		}
	}
	if t.closedAtOnce[hkIdle] == 0 {
		missing = append(missing, "no connection refused by max.connections.per.ip")
	}
	if t.slowFrames == 0 {
		missing = append(missing, "no upload closed by the progress rule")
	}
	return missing
}

// checkRead fails the run if a reader read a value of a batch the broker
// had to refuse.
func (h *logHarness) checkHostileRead(reader string, p linearizability.LogPartition, recs []linearizability.LogRecord) {
	for _, r := range recs {
		if strings.HasPrefix(r.Value, hostileRefusedMark) {
			v := r.Value
			if len(v) > 64 {
				v = v[:64] + "..."
			}
			h.fail(fmt.Errorf("(x) hostile input: at %v: %s read %q at %s offset %d: a value of a batch the broker had to refuse", h.s.Now(), reader, v, p, r.Offset))
		}
	}
}
