package broker

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/plant"
	"github.com/strata-log/strata/core/replica"
)

// maxFetchWait bounds a fetch's max.wait.ms, whatever the client asks:
// a parked fetch holds its connection's later responses.
const maxFetchWait = 5 * time.Minute

// fetchOp is one Fetch request being answered: evaluated at once, and
// when it cannot answer yet (fewer than min.bytes ready, within
// max.wait.ms) parked on its partitions and evaluated again when one of
// them changes (an append moved its high watermark, its leader changed,
// it failed or went) or when the wait ends.
type fetchOp struct {
	b           *Broker
	r           *request
	req         *kmsg.FetchRequest
	parts       []*fetchPart
	session     *fetchSession
	incremental bool
	timer       env.Timer
	// watching holds the partitions the op waits on (each watched once);
	// a set, as a replica fetch may name thousands (membership only, never
	// walked).
	watching map[*replica.Partition]struct{}
	done     bool
	// canRead checks a consumer's topics (a follower's fetch is
	// authorized whole, authorize.go).
	canRead func(topic string) error
}

// fetched is one partition's outcome in an evaluation.
type fetched struct {
	fp     *fetchPart
	part   *replica.Partition // nil when the partition is not hosted here
	name   string             // the topic's name (resolved from its id from v13)
	err    error
	res    log.ReadResult
	hw     int64
	lso    int64 // the last stable offset, every fetch's (Kafka reports it to all)
	start  int64
	region fetchRegion
	// aborted are a read_committed fetch's aborted transactions.
	aborted []replica.AbortedTxn
	// diverging is a replica fetch's diverging epoch (Fetch v12+).
	diverging *replica.DivergingEpoch
}

// fetchReplica is the broker id of a follower's fetch, or -1 for a
// consumer's (ReplicaID before Fetch v15, ReplicaState from v15).
func fetchReplica(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

func handleFetch(b *Broker, r *request) {
	req := r.body.(*kmsg.FetchRequest)
	parts, s, incremental, serr := b.openFetch(req)
	if serr != nil {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = serr.code.Code
		r.m.countError(resp.ErrorCode)
		b.log.Debug("fetch session refused", "remote", r.cn.remote, "reason", serr.msg)
		r.respond(resp)
		return
	}
	op := &fetchOp{b: b, r: r, req: req, parts: parts, session: s, incremental: incremental,
		canRead: b.topicAuth(r, kmsg.ACLOperationRead)}
	if fetchReplica(req) >= 0 {
		op.canRead = func(string) error { return nil }
	}
	wait := min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, maxFetchWait)
	if b.e.Buggify("broker/fetch-early") {
		wait = 0 // a long poll answered at once, maybe empty
	}
	if op.evaluate(wait <= 0) {
		return
	}
	op.timer = b.e.AfterFunc(wait, func() {
		op.timer = nil
		if !op.done {
			op.evaluate(true)
		}
	})
}

// evaluate reads every partition of the fetch and answers when final,
// when any partition has an error, or when min.bytes are ready; otherwise
// it releases what it read, watches the partitions and reports false.
func (op *fetchOp) evaluate(final bool) bool {
	b, req := op.b, op.req
	img := b.image()
	budget := int64(req.MaxBytes)
	if req.Version < 3 || budget <= 0 {
		budget = 1 << 31 // no response bound before v3
	}
	// Under a consumer_byte_rate, a fetch reads at most what the quota
	// allows in a window, each partition within what is left of it
	// (Kafka's maxQuotaWindowBytes).
	quotaBudget := b.fetchQuotaBytes(op.r, budget)
	quotaCapped := quotaBudget < budget
	budget = quotaBudget
	results := make([]fetched, 0, len(op.parts))
	var bytes int64
	anyErr, opening := false, false
	for _, fp := range op.parts {
		f := fetched{fp: fp, hw: -1, lso: -1, start: -1}
		name, err := topicName(img, req.Version >= 13, fp.key.topic, fp.key.topicID)
		f.name = name
		if err == nil {
			readErr := op.canRead(name)
			if readErr != nil && req.Version >= 13 {
				// By id, a topic the principal may not READ gets the
				// answer of an unknown id, so that an id does not tell
				// whether its topic exists (issue 24; Kafka answers
				// TOPIC_AUTHORIZATION_FAILED for a known id).
				readErr = fmt.Errorf("%w: topic id %s", errUnknownTopicID, meta.UUID(fp.key.topicID))
			}
			f.part, err = b.lookup(name, readErr, fp.key.partition)
		}
		if err == nil {
			maxBytes := int(max(fp.maxBytes, 0))
			if quotaCapped {
				maxBytes = int(min(int64(maxBytes), max(budget-bytes, 1))) // at least one batch
			}
			if b.e.Buggify("broker/fetch-short") {
				maxBytes = 1 // one batch: a short read the client must continue
			}
			offset := fp.fetchOffset
			if plant.Is(plant.FetchSkipsAhead) && offset < f.part.HighWatermark() {
				offset++ // planted: a record the consumer never sees
			}
			if replicaID := fetchReplica(req); replicaID >= 0 {
				var rf replica.ReplicaFetchResult
				lastEpoch := fp.lastFetchedEpoch
				if req.Version < 12 {
					lastEpoch = -1
				}
				rf, err = f.part.ReplicaFetch(replicaID, offset, lastEpoch, fp.currentLeaderEpoch, maxBytes)
				f.res, f.hw, f.start, f.diverging = rf.Read, rf.HighWatermark, rf.LogStartOffset, rf.Diverging
				if f.diverging != nil {
					anyErr = true // answer at once: the follower truncates first
				}
			} else if req.IsolationLevel == 1 && !plant.Is(plant.TxnReadPastLSO) {
				var cr replica.CommittedRead
				cr, err = f.part.ReadCommitted(offset, maxBytes, fp.currentLeaderEpoch)
				f.res, f.aborted = cr.Read, cr.Aborted
				f.hw, f.start = f.part.HighWatermark(), f.part.LogStartOffset()
			} else {
				f.res, err = f.part.Read(offset, maxBytes, fp.currentLeaderEpoch)
				f.hw, f.start = f.part.HighWatermark(), f.part.LogStartOffset()
			}
			if err == nil {
				f.lso = f.part.LastStableOffset()
			}
		}
		switch {
		case errors.Is(err, replica.ErrOpening):
			// Led here, its log still opening: there is no high
			// watermark to report yet, so the fetch waits for it, and
			// answers NOT_LEADER_OR_FOLLOWER (with none) only if it
			// must answer first.
			f.err, f.hw, f.lso, f.start = err, -1, -1, -1
			opening = true
		case err != nil:
			f.err = err
			anyErr = true
		case f.res.Size > 0:
			// The first partition with records always gets them (so a
			// batch larger than every bound still makes progress);
			// later ones only within the response's budget.
			if bytes > 0 && f.res.Size > budget-bytes {
				f.res.Release()
				f.res, f.aborted = log.ReadResult{}, nil
			} else {
				f.region = fetchRegion{file: f.res.File, offset: f.res.Position, length: f.res.Size}
				bytes += f.res.Size
			}
		}
		results = append(results, f)
	}
	// Kafka answers at once when the wait is over, a partition has an
	// error, or min.bytes are ready (so min.bytes 0 never waits).
	if !final && !anyErr && len(op.parts) > 0 && (opening || bytes < int64(req.MinBytes)) {
		for i := range results {
			results[i].res.Release()
		}
		op.watch(results)
		return false
	}
	op.respond(img, results)
	return true
}

// watch parks the op on the partitions it read (or could not find yet).
func (op *fetchOp) watch(results []fetched) {
	for _, f := range results {
		p := f.part
		if _, ok := op.watching[p]; p == nil || ok {
			continue
		}
		if op.watching == nil {
			op.watching = map[*replica.Partition]struct{}{}
		}
		op.watching[p] = struct{}{}
		p.Watch(func() {
			delete(op.watching, p)
			if !op.done {
				op.evaluate(false)
			}
		})
	}
}

// respond builds and sends the response: every partition for a full
// fetch, the changed ones for an incremental one.
func (op *fetchOp) respond(img *meta.Image, results []fetched) {
	op.done = true
	if op.timer != nil {
		op.timer.Stop()
		op.timer = nil
	}
	b, req := op.b, op.req
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if op.session != nil {
		resp.SessionID = op.session.id
	}
	if op.r.q != nil && op.respondThrottled(results, resp) {
		return
	}
	var regions [][]fetchRegion
	var pins []log.ReadResult
	var returned []*fetchPart
	for i := range results {
		f := &results[i]
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = f.fp.key.partition
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = f.hw, f.lso, f.start
		if req.IsolationLevel == 1 {
			rp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(f.aborted))
			if f.region.length > 0 && !plant.Is(plant.TxnAbortedNotListed) {
				for _, a := range f.aborted {
					at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
					rp.AbortedTransactions = append(rp.AbortedTransactions, at)
				}
			}
		}
		if f.part != nil {
			tm := f.part.Metrics()
			tm.Fetches.Inc()
			if f.err != nil {
				tm.FailedFetches.Inc()
			}
			if f.region.length > 0 {
				tm.BytesOut.Add(float64(f.region.length))
			}
		}
		if f.diverging != nil {
			rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = f.diverging.Epoch, f.diverging.EndOffset
		}
		if f.err != nil {
			code := b.errorCode(f.err)
			rp.ErrorCode = code.Code
			op.r.m.countError(code.Code)
			// A replica fetch from a broker that is not a replica here
			// gets NOT_LEADER_OR_FOLLOWER from the leader itself
			// (ReplicaFetch): naming the current leader would name
			// this broker, and send the fetcher straight back.
			if code == kerr.NotLeaderForPartition && req.Version >= 12 && !errors.Is(f.err, replica.ErrNotReplica) {
				b.fetchCurrentLeader(img, op.r.cn.l.Name, f.name, f.fp.key.partition, &rp, resp)
			}
		}
		sent := sentValues{highWatermark: rp.HighWatermark, lastStableOffset: rp.LastStableOffset, logStartOffset: rp.LogStartOffset, errorCode: rp.ErrorCode}
		// As in Kafka (CachedPartition.maybeUpdateResponseData), a
		// partition with an error is always included: an incremental
		// fetch that answered at once for an error and left the error
		// out would come back empty, and its client would fetch again
		// at once, forever, never learning why (log seeds 23, 234).
		if op.incremental && f.region.length == 0 && f.fp.sentOnce && sent == f.fp.sent && f.err == nil && f.diverging == nil {
			continue // nothing new for this partition
		}
		f.fp.sent, f.fp.sentOnce = sent, true
		if f.region.length > 0 {
			pins = append(pins, f.res)
			returned = append(returned, f.fp)
		}
		n := len(resp.Topics)
		if n == 0 || resp.Topics[n-1].Topic != f.fp.key.topic || resp.Topics[n-1].TopicID != f.fp.key.topicID {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = f.fp.key.topic, f.fp.key.topicID
			resp.Topics = append(resp.Topics, rt)
			regions = append(regions, nil)
			n++
		}
		resp.Topics[n-1].Partitions = append(resp.Topics[n-1].Partitions, rp)
		regions[n-1] = append(regions[n-1], f.region)
	}
	// Round robin within a session: partitions that returned records go
	// to the back, so a busy one cannot starve the rest of the budget.
	if op.session != nil && len(returned) > 0 {
		s := op.session
		kept := s.parts[:0:0]
		for _, p := range s.parts {
			if !slices.Contains(returned, p) {
				kept = append(kept, p)
			}
		}
		s.parts = append(kept, returned...)
	}
	parts := encodeFetchResponse(op.r.hdr.CorrelationID, resp, regions)
	op.r.respondParts(parts, func() {
		for i := range pins {
			pins[i].Release()
		}
	})
}

// fetchCurrentLeader fills a NOT_LEADER_OR_FOLLOWER partition's current
// leader (Fetch v12+, KIP-951) and the leader's endpoint (v16+).
func (b *Broker) fetchCurrentLeader(img *meta.Image, listener, topic string, partition int32, rp *kmsg.FetchResponseTopicPartition, resp *kmsg.FetchResponse) {
	leader, epoch, ok := currentLeader(img, topic, partition)
	if !ok {
		return
	}
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
	if resp.Version < 16 || slices.ContainsFunc(resp.Brokers, func(br kmsg.FetchResponseBroker) bool { return br.NodeID == leader }) {
		return
	}
	if ep, ok := leaderEndpoint(img, listener, leader); ok {
		nb := kmsg.NewFetchResponseBroker()
		nb.NodeID, nb.Host, nb.Port, nb.Rack = ep.id, ep.host, ep.port, ep.rack
		resp.Brokers = append(resp.Brokers, nb)
	}
}

// respondThrottled charges a consumer fetch to its quotas and, when it is
// throttled, answers it empty with the throttle, as Kafka does
// (FetchContext.getThrottledResponse: an incremental fetch keeps its
// session, a full one is answered without one), releasing what it read.
func (op *fetchOp) respondThrottled(results []fetched, resp *kmsg.FetchResponse) bool {
	var bytes int64
	for i := range results {
		bytes += results[i].region.length
	}
	d := op.b.fetchQuota(op.r, bytes)
	if d <= 0 {
		return false
	}
	for i := range results {
		results[i].res.Release()
	}
	if !op.incremental {
		resp.SessionID = 0
	}
	op.r.respond(resp)
	return true
}
