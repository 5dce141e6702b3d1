package broker

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/producer"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/replica"
)

// handleProduce appends each partition's batch through its Partition and
// answers once every partition has its result: for acks=1 and acks=all
// once the batches are durable (the partitions' group commits run in
// parallel), for acks=0 with no response at all. As Kafka does, an acks=0
// request with any failed partition closes the connection, the only way
// to tell such a client to refresh its metadata.
//
// A transactional batch in a request without a transactional id is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as in Kafka (which answers the
// whole request so). In a request with a transactional id, the
// partitions where the producer has no transaction ongoing yet are first
// verified with the transaction coordinator (KIP-890 part 1,
// txnverify.go) and each such batch waits for its partition's answer,
// while the request's other batches are appended at once (a pipelined
// producer's next request must not overtake them); each partition keeps
// its producer's transaction (core/producer). The request is answered
// once every partition has its result. Authorization (WRITE on each
// topic, on the transactional id) is authorize.go's.
func handleProduce(b *Broker, r *request) {
	req := r.body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	now := b.e.Now()
	img := b.image()
	failed := false
	pa := newPartsAnswer(func() {
		countProduceErrors(r, resp)
		if req.Acks == 0 {
			r.noResponse()
			if failed {
				b.log.Debug("closing an acks=0 connection after a failed produce", "remote", r.cn.remote)
				b.closeConn(r.cn)
			}
			return
		}
		r.respond(resp)
	})
	var appends []produceAppend // the partitions passed to their Partition, in request order
	repeated := repeatedPartitions(req)
	canWrite := b.topicAuth(r, kmsg.ACLOperationWrite)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name, nameErr := topicName(img, req.Version >= 13, t.Topic, t.TopicID)
		if nameErr == nil {
			nameErr = canWrite(name)
		}
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for j := range t.Partitions {
			tp := &t.Partitions[j]
			rp := &rt.Partitions[j]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = tp.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			setErr := func(err error, recs ...replica.RecordError) {
				failed = true
				code := b.errorCode(err)
				rp.ErrorCode = code.Code
				msg := err.Error()
				rp.ErrorMessage = &msg // encoded from v8, as record errors are
				rp.ErrorRecords = recordErrors(recs)
				if code == kerr.NotLeaderForPartition {
					b.fillCurrentLeader(img, r.cn.l.Name, name, tp.Partition, &rp.CurrentLeader, &resp.Brokers)
				}
			}
			part, err := b.lookup(name, nameErr, tp.Partition)
			if err == nil && repeated[produceKey(req.Version, t, tp.Partition)] {
				// Kafka keeps the last copy and drops the others
				// unanswered; every copy is refused here, and nothing
				// of them is appended or even decompressed.
				err = fmt.Errorf("%w: partition %d of topic %q appears more than once in the request", errInvalidRequest, tp.Partition, name)
			}
			if err == nil && req.TransactionID == nil && transactional(tp.Records) {
				err = fmt.Errorf("%w: a transactional batch in a produce request without a transactional id", errTransactionalIDAuthorization)
			}
			if err == nil && (name == OffsetsTopic || name == TxnStateTopic) {
				// Only the coordinators write their topics (Kafka:
				// "Cannot append to internal topic").
				err = fmt.Errorf("%w: clients cannot append to the internal topic %s", errInvalidTopic, name)
			}
			if err != nil {
				setErr(err)
				continue
			}
			pa.add()
			rp.ErrorCode = kerr.RequestTimedOut.Code // until the partition answers
			appends = append(appends, produceAppend{part: part, payload: tp.Records, rp: rp, setErr: setErr})
		}
	}
	if len(appends) == 0 {
		pa.done()
		return
	}
	// Every batch is validated record by record (decompressed and
	// parsed) off the loop, on a worker, in turn with the other
	// connections' work; the partitions' rules (keys of compacted
	// topics, timestamps) and the appends run on the loop once the
	// request's batches are checked, in the order the connection's
	// requests arrived.
	limits := make([]replica.ProduceLimits, len(appends))
	var cost time.Duration
	for i, a := range appends {
		limits[i] = a.part.ProduceLimits()
		cost += validationCost(a.payload)
	}
	v := b.takeValidator()
	r.offloadCharged(cost, func() {
		for i := range appends {
			appends[i].vb = replica.ValidateProduce(v, appends[i].payload, limits[i])
		}
	}, func() time.Duration { return validationCharge(cost, appends, limits) }, func() {
		b.putValidator(v, appends)
		b.appendProduced(r, req, resp, now, appends, pa)
	})
}

// appendProduced is the loop's part of a Produce request once its batches
// are validated: invalid batches are answered, the others appended (after
// the transaction coordinator's answer where KIP-890 asks one), and the
// request waits for durability at most its timeout. pa is done once per
// append and once more at the end.
func (b *Broker) appendProduced(r *request, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, now time.Time,
	appends []produceAppend, pa *partsAnswer) {
	appendOne := func(a produceAppend, now time.Time, verify bool, v *producer.Verification) {
		tm := a.part.Metrics()
		tm.Produces.Inc()
		answer := func(res replica.ProduceResult) {
			if res.Err != nil {
				tm.FailedProduces.Inc()
			}
			if pa.answered {
				return // timed out: the client was told, and retries
			}
			a.rp.ErrorCode = 0
			if res.Err != nil {
				a.setErr(res.Err, res.RecordErrors...)
			} else {
				a.rp.BaseOffset, a.rp.LogAppendTime, a.rp.LogStartOffset = res.BaseOffset, res.LogAppendTime, res.LogStartOffset
			}
			pa.done()
		}
		if verify {
			a.part.ProduceValidatedVerified(a.vb, req.Acks, now, v, answer)
			return
		}
		a.part.ProduceValidated(a.vb, req.Acks, now, answer)
	}
	// A batch that failed validation is answered by its partition at
	// once (with its record errors), before any coordinator is asked
	// about it.
	valid := appends[:0:0]
	for _, a := range appends {
		if a.vb.Err != nil {
			appendOne(a, now, false, nil)
			continue
		}
		valid = append(valid, a)
	}
	appends = valid
	pending := len(appends)
	if req.TransactionID != nil && len(appends) > 0 && (!b.cfg.Txns.NoPartitionVerification || b.implicitAdds(req.Version, produceImplicitAddVersion)) {
		// KIP-890 part 1 (txnverify.go): a batch whose partition is
		// verified waits for the coordinator's answer (part 2: for its
		// add); the others are appended at once.
		parts := make([]*replica.Partition, len(appends))
		payloads := make([][]byte, len(appends))
		for i, a := range appends {
			parts[i], payloads[i] = a.part, a.payload
		}
		b.verifyTxnBatches(*req.TransactionID, req.Version, parts, payloads, now, func(i int, res txnVerification) {
			a := appends[i]
			if pa.answered {
				return // timed out while verifying: nothing is appended
			}
			if res.err != nil {
				a.rp.ErrorCode = 0
				a.setErr(res.err)
				pa.done()
				return
			}
			appendOne(a, b.e.Now(), true, res.v) // the broker's time of the append, as for any batch
		})
	} else {
		for _, a := range appends {
			appendOne(a, now, false, nil)
		}
	}
	if pending > 0 && req.Acks != 0 {
		// Kafka's produce purgatory: partitions that are not durable
		// within the request's timeout answer REQUEST_TIMED_OUT (their
		// batches may still become durable; an idempotent retry is then
		// answered as a duplicate).
		wait := time.Duration(req.TimeoutMillis) * time.Millisecond
		if wait <= 0 {
			// Not Kafka's: there, acks=1 never waits, and a zero timeout
			// with acks=all expires at once. Here acks=1 waits for the
			// fsync too, so a client sending no timeout gets
			// request.timeout.ms's default rather than a certain
			// failure.
			wait = defaultProduceTimeout
		}
		pa.timeoutAfter(b.e, wait, func() {
			b.log.Debug("produce timed out waiting for durability", "remote", r.cn.remote, "timeout", wait)
		})
	}
	pa.done()
}

// produceAppend is one partition of a produce request to append.
type produceAppend struct {
	part    *replica.Partition
	payload []byte
	rp      *kmsg.ProduceResponseTopicPartition
	setErr  func(error, ...replica.RecordError)
	// vb is the batch as validated off the loop.
	vb replica.ValidatedBatch
}

// topicPartition names a partition of a Produce request as the request
// does (by name, or by id from v13).
type topicPartition struct {
	topic     string
	id        [16]byte
	partition int32
}

// produceKey is how a request of version names a partition of topic t:
// by name before v13, by id from v13.
func produceKey(version int16, t *kmsg.ProduceRequestTopic, partition int32) topicPartition {
	if version < 13 {
		return topicPartition{topic: t.Topic, partition: partition}
	}
	return topicPartition{id: t.TopicID, partition: partition}
}

// repeatedPartitions returns the partitions named more than once in req,
// nil when none is (the common case costs no map).
func repeatedPartitions(req *kmsg.ProduceRequest) map[topicPartition]bool {
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	if n < 2 {
		return nil
	}
	seen := make(map[topicPartition]bool, n)
	var repeated map[topicPartition]bool
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			k := produceKey(req.Version, t, t.Partitions[j].Partition)
			if seen[k] {
				if repeated == nil {
					repeated = map[topicPartition]bool{}
				}
				repeated[k] = true
			}
			seen[k] = true
		}
	}
	return repeated
}

// recordErrors are a partition's per-record errors as Produce v8+ answers
// them (batch_index and message; older versions do not encode them).
func recordErrors(recs []replica.RecordError) []kmsg.ProduceResponseTopicPartitionErrorRecord {
	var out []kmsg.ProduceResponseTopicPartitionErrorRecord
	for _, r := range recs {
		e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		e.RelativeOffset, e.ErrorMessage = r.Index, kmsg.StringPtr(r.Message)
		out = append(out, e)
	}
	return out
}

// transactional reports whether a produce payload's first batch has the
// transactional flag; a payload too short to tell is left to the
// partition's validation.
func transactional(payload []byte) bool {
	b, err := record.ReadBatch(payload, len(payload)+1) // the bound must be positive; the partition checks sizes
	return err == nil && b.Attributes().IsTransactional()
}

// countProduceErrors counts the partition errors of a produce response
// (with metrics on).
func countProduceErrors(r *request, resp *kmsg.ProduceResponse) {
	if r.m == nil {
		return
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			r.m.countError(resp.Topics[i].Partitions[j].ErrorCode)
		}
	}
}

// defaultProduceTimeout bounds the wait for durability of a produce
// request that names no timeout: Kafka's request.timeout.ms default.
const defaultProduceTimeout = 30 * time.Second

// lookup finds a hosted partition of a named topic; nameErr is the error
// of resolving the topic's name (v13+ name topics by id).
func (b *Broker) lookup(name string, nameErr error, partition int32) (*replica.Partition, error) {
	if nameErr != nil {
		return nil, nameErr
	}
	if b.cfg.Partitions == nil {
		return nil, fmt.Errorf("%w: this node hosts no partitions", replica.ErrUnknownTopicOrPartition)
	}
	return b.cfg.Partitions.Lookup(name, partition)
}

// topicName resolves a request's topic: by name, or (byID, in versions
// that name topics by id) through the image.
func topicName(img *meta.Image, byID bool, name string, id [16]byte) (string, error) {
	if !byID {
		return name, nil
	}
	if img != nil {
		if ti, ok := img.TopicByID(meta.UUID(id)); ok {
			return ti.Name(), nil
		}
	}
	return "", fmt.Errorf("%w: topic id %s", errUnknownTopicID, meta.UUID(id))
}

// image is the metadata image, or nil without a quorum member.
func (b *Broker) image() *meta.Image {
	if b.cfg.Metadata == nil {
		return nil
	}
	return b.cfg.Metadata.Image()
}

// fillCurrentLeader fills a NOT_LEADER_OR_FOLLOWER answer's current leader
// (KIP-951, Produce v10+ and Fetch v12+, tagged) and adds the leader's
// endpoint to the response's node endpoints, so the client can go there
// without a metadata round trip.
func (b *Broker) fillCurrentLeader(img *meta.Image, listener, topic string, partition int32, cur *kmsg.ProduceResponseTopicPartitionCurrentLeader, brokers *[]kmsg.ProduceResponseBroker) {
	leader, epoch, ok := currentLeader(img, topic, partition)
	if !ok {
		return
	}
	cur.LeaderID, cur.LeaderEpoch = leader, epoch
	for _, br := range *brokers {
		if br.NodeID == leader {
			return
		}
	}
	if ep, ok := leaderEndpoint(img, listener, leader); ok {
		nb := kmsg.NewProduceResponseBroker()
		nb.NodeID, nb.Host, nb.Port, nb.Rack = ep.id, ep.host, ep.port, ep.rack
		*brokers = append(*brokers, nb)
	}
}

// leaderEndpoint is the endpoint of a partition's leader that a
// NOT_LEADER_OR_FOLLOWER answer names (KIP-951), false if img has none.
func leaderEndpoint(img *meta.Image, listener string, leader int32) (brokerEndpoint, bool) {
	reg, ok := img.Broker(leader)
	if !ok {
		return brokerEndpoint{}, false
	}
	return endpointOf(reg, listener)
}

// currentLeader is a partition's leader and leader epoch in img.
func currentLeader(img *meta.Image, topic string, partition int32) (int32, int32, bool) {
	if img == nil {
		return 0, 0, false
	}
	ti, ok := img.TopicByName(topic)
	if !ok {
		return 0, 0, false
	}
	p, ok := ti.Partition(partition)
	if !ok || !p.HasLeader() {
		return 0, 0, false
	}
	return p.Leader, p.LeaderEpoch, true
}
