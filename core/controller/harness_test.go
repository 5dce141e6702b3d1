package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// harness drives a Controller the way the quorum driver will: a log that
// proposals are appended to (one entry per record, leader-change entries in
// between), commits that decode the entries back into records, and
// leadership changes. Responses are collected by ticket.
type harness struct {
	tb  tester
	c   *Controller
	now time.Duration
	// log holds one entry per offset.
	log []logEntry
	// committed is the last offset reported through Committed.
	committed int64
	epoch     int32
	// responses collects responses in delivery order.
	responses []Response
	// proposals collects proposals in order since the last take.
	proposals []Proposal
	// names maps a topic id to its name, learned from TopicRecords, for
	// readable output.
	names map[meta.UUID]string
	// epochs maps a broker id to the epoch its last registration got.
	epochs map[int32]int64
	// autoCommit commits every proposal as soon as it is made.
	autoCommit bool
	// repairedAt is the last offset of the repair a new leader proposed,
	// -1 if it proposed none: until it commits, the committed image is the
	// inherited one.
	repairedAt int64
}

// tester is what the harness needs of a test: testing.TB or *rapid.T.
type tester interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// logEntry is one offset of the metadata log: a record value, or nil for a
// leader-change control entry.
type logEntry struct {
	epoch int32
	value []byte
}

func newHarness(tb tester, cfg Config, seed uint64) *harness {
	if cfg.MaxReplicationFactor == 0 {
		// The harness tests the controller's replica placement, ISR and
		// election logic, which are ready for replication: lift the
		// bound that holds until the data plane replicates
		// (TestMaxReplicationFactor tests the bound itself).
		cfg.MaxReplicationFactor = maxReplicasPerPartition
	}
	h := &harness{
		tb:        tb,
		c:         New(cfg, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))),
		committed: -1,
		names:     map[meta.UUID]string{},
		epochs:    map[int32]int64{},
	}
	h.becomeLeader()
	return h
}

// becomeLeader starts the next epoch: the new leader appends its
// leader-change entry, commits everything in its log (which applies the
// older entries through the follower path) and then activates the
// controller, as KRaft does.
// It returns the offset of the leadership's first proposal.
func (h *harness) becomeLeader() int64 {
	h.tb.Helper()
	h.epoch++
	h.log = append(h.log, logEntry{epoch: h.epoch})
	h.commit(int64(len(h.log) - 1))
	next := int64(len(h.log))
	h.c.BecomeLeader(h.now, h.epoch, h.c.CommittedImage(), next)
	h.drain()
	h.repairedAt = int64(len(h.log)) - 1
	return next
}

// resign makes the controller inactive; with truncate the uncommitted tail
// of the log is lost (the next leader did not have it), otherwise the next
// leader commits it.
func (h *harness) resign(truncate bool) {
	h.tb.Helper()
	h.c.Resign()
	h.drain()
	if truncate {
		h.log = h.log[:h.committed+1]
	}
}

// drain takes the controller's output: proposals are appended to the log
// where the controller said they would land.
func (h *harness) drain() {
	h.tb.Helper()
	for h.c.HasReady() {
		rd := h.c.Ready()
		for _, p := range rd.Proposals {
			if p.FirstOffset != int64(len(h.log)) || p.Epoch != h.epoch {
				h.tb.Fatalf("proposal at %d..%d epoch %d, log end %d epoch %d", p.FirstOffset, p.LastOffset, p.Epoch, len(h.log), h.epoch)
			}
			if int64(len(p.Records)) != p.LastOffset-p.FirstOffset+1 || len(p.Values) != len(p.Records) {
				h.tb.Fatalf("proposal %d..%d has %d records, %d values", p.FirstOffset, p.LastOffset, len(p.Records), len(p.Values))
			}
			for _, v := range p.Values {
				h.log = append(h.log, logEntry{epoch: p.Epoch, value: v})
			}
			for _, r := range p.Records {
				if t, ok := r.(*meta.TopicRecord); ok {
					h.names[t.TopicID] = t.Name
				}
			}
			h.proposals = append(h.proposals, p)
		}
		h.responses = append(h.responses, rd.Responses...)
		if h.autoCommit && h.c.IsLeader() && h.committed < int64(len(h.log)-1) {
			h.commit(int64(len(h.log) - 1))
		}
	}
}

// commit reports the log committed up to offset, decoding the records.
func (h *harness) commit(offset int64) {
	h.tb.Helper()
	if offset <= h.committed {
		return
	}
	if offset >= int64(len(h.log)) {
		h.tb.Fatalf("commit to %d beyond log end %d", offset, len(h.log))
	}
	var recs []meta.Record
	for o := h.committed + 1; o <= offset; o++ {
		if v := h.log[o].value; v != nil {
			r, err := meta.DecodeRecord(v)
			if err != nil {
				h.tb.Fatalf("offset %d: %v", o, err)
			}
			recs = append(recs, r)
		}
	}
	pos := meta.Position{Offset: offset, Epoch: h.log[offset].epoch}
	if err := h.c.Committed(pos, recs); err != nil {
		h.tb.Fatalf("Committed(%v): %v", pos, err)
	}
	h.committed = offset
	h.drain()
}

// commitAll commits the whole log.
func (h *harness) commitAll() { h.commit(int64(len(h.log) - 1)) }

// handle sends a request and returns its ticket.
func (h *harness) handle(req kmsg.Request) Ticket {
	h.tb.Helper()
	t, err := h.c.Handle(h.now, req)
	if err != nil {
		h.tb.Fatalf("Handle(%T): %v", req, err)
	}
	h.drain()
	return t
}

// tick advances the clock by d.
func (h *harness) tick(d time.Duration) {
	h.tb.Helper()
	h.now += d
	h.c.Tick(h.now)
	h.drain()
}

// response returns the response of a ticket, if delivered.
func (h *harness) response(t Ticket) (kmsg.Response, bool) {
	for _, r := range h.responses {
		if r.Ticket == t {
			return r.Msg, true
		}
	}
	return nil, false
}

// do sends a request, commits everything and returns its response.
func (h *harness) do(req kmsg.Request) kmsg.Response {
	h.tb.Helper()
	t := h.handle(req)
	h.commitAll()
	resp, ok := h.response(t)
	if !ok {
		h.tb.Fatalf("no response to %T after commit", req)
	}
	return resp
}

// takeProposals returns the proposals since the last call.
func (h *harness) takeProposals() []Proposal {
	p := h.proposals
	h.proposals = nil
	return p
}

// replayCommitted replays the committed log up to offset onto the empty
// image, as a broker would.
func (h *harness) replayCommitted(offset int64) *meta.Image {
	h.tb.Helper()
	d := meta.Empty().NewDelta()
	for o := int64(0); o <= offset; o++ {
		if v := h.log[o].value; v != nil {
			r, err := meta.DecodeRecord(v)
			if err != nil {
				h.tb.Fatal(err)
			}
			if err := d.Replay(r); err != nil {
				h.tb.Fatalf("offset %d: %v", o, err)
			}
		}
	}
	if offset < 0 {
		return meta.Empty()
	}
	return d.Apply(meta.Position{Offset: offset, Epoch: h.log[offset].epoch})
}

// Request builders.

func incarnation(tag string) [16]byte {
	var u [16]byte
	copy(u[:], "inc-"+tag)
	u[15] = 1
	return u
}

func registration(id int32, inc string) *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 3
	req.BrokerID = id
	req.IncarnationID = incarnation(inc)
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", fmt.Sprintf("broker-%d", id), 9092
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{l}
	return req
}

func heartbeatReq(id int32, epoch, offset int64, wantFence, wantShutdown bool) *kmsg.BrokerHeartbeatRequest {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = id, epoch, offset
	req.WantFence, req.WantShutdown = wantFence, wantShutdown
	return req
}

// registerAndUnfence registers brokers and heartbeats them unfenced,
// committing as it goes.
func (h *harness) registerAndUnfence(ids ...int32) {
	h.tb.Helper()
	for _, id := range ids {
		resp := h.do(registration(id, "a")).(*kmsg.BrokerRegistrationResponse)
		if resp.ErrorCode != 0 {
			h.tb.Fatalf("register %d: %v", id, kerr.ErrorForCode(resp.ErrorCode))
		}
		h.epochs[id] = resp.BrokerEpoch
	}
	for _, id := range ids {
		hb := h.do(heartbeatReq(id, h.epochs[id], h.committed, false, false)).(*kmsg.BrokerHeartbeatResponse)
		if hb.ErrorCode != 0 || hb.IsFenced {
			h.tb.Fatalf("heartbeat %d: %v fenced=%v", id, kerr.ErrorForCode(hb.ErrorCode), hb.IsFenced)
		}
	}
}

// heartbeatAll keeps every registered broker's session alive.
func (h *harness) heartbeatAll() {
	h.tb.Helper()
	for b := range h.c.SpeculativeImage().Brokers() {
		h.handle(heartbeatReq(b.ID, b.Epoch, h.committed, false, false))
	}
}

type topicSpec struct {
	name       string
	partitions int32
	rf         int16
	configs    map[string]string
	assignment [][]int32
}

func createTopicsReq(validateOnly bool, topics ...topicSpec) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.ValidateOnly = validateOnly
	for _, ts := range topics {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = ts.name, ts.partitions, ts.rf
		for i, replicas := range ts.assignment {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(i), replicas
			t.ReplicaAssignment = append(t.ReplicaAssignment, a)
		}
		keys := make([]string, 0, len(ts.configs))
		for k := range ts.configs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			cfg := kmsg.NewCreateTopicsRequestTopicConfig()
			v := ts.configs[k]
			cfg.Name, cfg.Value = k, &v
			t.Configs = append(t.Configs, cfg)
		}
		req.Topics = append(req.Topics, t)
	}
	return req
}

// Output formatting for scripts and failures.

// errName names a Kafka error code ("NONE" for 0).
func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

// topicName returns a topic id's name, or the id.
func (h *harness) topicName(id meta.UUID) string {
	if n, ok := h.names[id]; ok {
		return n
	}
	return id.String()
}

func ids(l []int32) string {
	s := make([]string, len(l))
	for i, x := range l {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// formatRecord describes a record with topic names instead of ids.
func (h *harness) formatRecord(r meta.Record) string {
	if s, ok := h.formatSecurityRecord(r); ok {
		return s
	}
	switch r := r.(type) {
	case *meta.RegisterBrokerRecord:
		return fmt.Sprintf("RegisterBroker id=%d epoch=%d fenced=%v", r.BrokerID, r.BrokerEpoch, r.Fenced)
	case *meta.FenceBrokerRecord:
		return fmt.Sprintf("FenceBroker id=%d epoch=%d", r.BrokerID, r.BrokerEpoch)
	case *meta.UnfenceBrokerRecord:
		return fmt.Sprintf("UnfenceBroker id=%d epoch=%d", r.BrokerID, r.BrokerEpoch)
	case *meta.BrokerRegistrationChangeRecord:
		return fmt.Sprintf("BrokerRegistrationChange id=%d epoch=%d fenced=%d shutdown=%d", r.BrokerID, r.BrokerEpoch, r.Fenced, r.InControlledShutdown)
	case *meta.TopicRecord:
		return fmt.Sprintf("Topic %s", r.Name)
	case *meta.PartitionRecord:
		return fmt.Sprintf("Partition %s-%d replicas=%s isr=%s leader=%d", h.topicName(r.TopicID), r.Partition, ids(r.Replicas), ids(r.ISR), r.Leader)
	case *meta.PartitionChangeRecord:
		s := fmt.Sprintf("PartitionChange %s-%d", h.topicName(r.TopicID), r.Partition)
		if r.Leader != nil {
			s += fmt.Sprintf(" leader=%d", *r.Leader)
		}
		if r.ISR != nil {
			s += " isr=" + ids(r.ISR)
		}
		if r.ELR != nil {
			s += " elr=" + ids(r.ELR)
		}
		if r.LastKnownELR != nil {
			s += " last-known-elr=" + ids(r.LastKnownELR)
		}
		return s
	case *meta.ConfigRecord:
		if r.Value == nil {
			return fmt.Sprintf("Config %s delete %s", r.ResourceName, r.Key)
		}
		return fmt.Sprintf("Config %s %s=%s", r.ResourceName, r.Key, *r.Value)
	case *meta.RemoveTopicRecord:
		return fmt.Sprintf("RemoveTopic %s", h.topicName(r.TopicID))
	case *meta.ProducerIDsRecord:
		return fmt.Sprintf("ProducerIds broker=%d next=%d", r.BrokerID, r.NextProducerID)
	}
	return r.String()
}

// formatResponse describes a response compactly.
func (h *harness) formatResponse(msg kmsg.Response) string {
	var b strings.Builder
	if formatSecurityResponse(&b, msg) {
		return b.String()
	}
	switch r := msg.(type) {
	case *kmsg.BrokerRegistrationResponse:
		fmt.Fprintf(&b, "BrokerRegistration %s epoch=%d", errName(r.ErrorCode), r.BrokerEpoch)
	case *kmsg.BrokerHeartbeatResponse:
		fmt.Fprintf(&b, "BrokerHeartbeat %s caught-up=%v fenced=%v shutdown=%v", errName(r.ErrorCode), r.IsCaughtUp, r.IsFenced, r.ShouldShutdown)
	case *kmsg.CreateTopicsResponse:
		b.WriteString("CreateTopics")
		for _, t := range r.Topics {
			fmt.Fprintf(&b, "\n  %s: %s", t.Topic, errName(t.ErrorCode))
			if t.ErrorCode == 0 {
				fmt.Fprintf(&b, " partitions=%d rf=%d", t.NumPartitions, t.ReplicationFactor)
			} else if t.ErrorMessage != nil {
				fmt.Fprintf(&b, " %q", *t.ErrorMessage)
			}
		}
	case *kmsg.DeleteTopicsResponse:
		b.WriteString("DeleteTopics")
		for _, t := range r.Topics {
			name := "<nil>"
			if t.Topic != nil {
				name = *t.Topic
			}
			writeResult(&b, name, t.ErrorCode, nil)
		}
	case *kmsg.CreatePartitionsResponse:
		b.WriteString("CreatePartitions")
		for _, t := range r.Topics {
			writeResult(&b, t.Topic, t.ErrorCode, t.ErrorMessage)
		}
	case *kmsg.AlterPartitionResponse:
		fmt.Fprintf(&b, "AlterPartition %s", errName(r.ErrorCode))
		for _, t := range r.Topics {
			name := t.Topic
			if name == "" {
				name = h.topicName(t.TopidID)
			}
			for _, p := range t.Partitions {
				fmt.Fprintf(&b, "\n  %s-%d: %s", name, p.Partition, errName(p.ErrorCode))
				if p.ErrorCode == 0 {
					fmt.Fprintf(&b, " leader=%d leader-epoch=%d isr=%s partition-epoch=%d", p.LeaderID, p.LeaderEpoch, ids(p.ISR), p.PartitionEpoch)
				}
			}
		}
	case *kmsg.ElectLeadersResponse:
		fmt.Fprintf(&b, "ElectLeaders %s", errName(r.ErrorCode))
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				fmt.Fprintf(&b, "\n  %s-%d: %s", t.Topic, p.Partition, errName(p.ErrorCode))
			}
		}
	case *kmsg.AllocateProducerIDsResponse:
		fmt.Fprintf(&b, "AllocateProducerIDs %s start=%d len=%d", errName(r.ErrorCode), r.ProducerIDStart, r.ProducerIDLen)
	case *kmsg.IncrementalAlterConfigsResponse:
		b.WriteString("IncrementalAlterConfigs")
		for _, res := range r.Resources {
			writeResult(&b, res.ResourceName, res.ErrorCode, res.ErrorMessage)
		}
	case *kmsg.AlterConfigsResponse:
		b.WriteString("AlterConfigs")
		for _, res := range r.Resources {
			writeResult(&b, res.ResourceName, res.ErrorCode, nil)
		}
	default:
		fmt.Fprintf(&b, "%T", msg)
	}
	return b.String()
}

// writeResult writes a response's line for one resource: its name, its
// error and the error's message, if any.
func writeResult(b *strings.Builder, name string, code int16, msg *string) {
	fmt.Fprintf(b, "\n  %s: %s", name, errName(code))
	if msg != nil {
		fmt.Fprintf(b, " %q", *msg)
	}
}

// newCluster returns a harness whose brokers 1..n are registered and
// unfenced, everything committed.
func newCluster(tb tester, cfg Config, n int) *harness {
	tb.Helper()
	h := newHarness(tb, cfg, 1)
	var brokers []int32
	for id := int32(1); id <= int32(n); id++ {
		brokers = append(brokers, id)
	}
	h.registerAndUnfence(brokers...)
	return h
}

// mustCreate creates topics and fails the test on any error.
func (h *harness) mustCreate(topics ...topicSpec) {
	h.tb.Helper()
	resp := h.do(createTopicsReq(false, topics...)).(*kmsg.CreateTopicsResponse)
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 {
			h.tb.Fatalf("create %s: %s", t.Topic, errName(t.ErrorCode))
		}
	}
}

// partition returns a partition of the committed image.
func (h *harness) partition(topic string, id int32) meta.Partition {
	h.tb.Helper()
	t, ok := h.c.CommittedImage().TopicByName(topic)
	if !ok {
		h.tb.Fatalf("no topic %s", topic)
	}
	p, ok := t.Partition(id)
	if !ok {
		h.tb.Fatalf("no partition %s-%d", topic, id)
	}
	return p
}

// codeOf is the code of a Kafka error, 0 for nil (success) in tables.
func codeOf(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}
