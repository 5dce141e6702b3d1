package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/producer"
)

// handleWriteTxnMarkers appends each marker's COMMIT or ABORT control
// batch to every partition it names, through the partition leader's
// replica.Partition.WriteTxnMarker, and answers once every partition has
// its result: a partition answers when its marker is committed (the high
// watermark passed it; Kafka appends markers with acks=all), or with its
// error: UNKNOWN_TOPIC_OR_PARTITION when the partition is not hosted here,
// NOT_LEADER_OR_FOLLOWER when it is not led here, NOT_ENOUGH_REPLICAS,
// INVALID_PRODUCER_EPOCH for a stale producer epoch,
// TRANSACTION_COORDINATOR_FENCED for a stale coordinator epoch. A marker
// for a producer the partition does not know is appended, as in Kafka.
//
// A partition whose marker is not committed within defaultProduceTimeout
// answers REQUEST_TIMED_OUT (the marker may still commit; the coordinator
// retries, and a second marker of an ended transaction ends nothing).
//
// The request is inter-broker (the transaction coordinator sends it);
// Strata has no authorization to check it against.
func handleWriteTxnMarkers(b *Broker, r *request) {
	req := r.body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	now := b.e.Now()
	pa := newPartsAnswer(func() { r.respond(resp) })
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(req.Markers))
	for i := range req.Markers {
		m := &req.Markers[i]
		rm := &resp.Markers[i]
		*rm = kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		marker := producer.Marker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Committed}
		rm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(m.Topics))
		for j := range m.Topics {
			t := &m.Topics[j]
			rt := &rm.Topics[j]
			*rt = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			for k, id := range t.Partitions {
				rp := &rt.Partitions[k]
				*rp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = id
				part, err := b.lookup(t.Topic, nil, id)
				if err != nil {
					rp.ErrorCode = b.code(err)
					continue
				}
				pa.add()
				rp.ErrorCode = kerr.RequestTimedOut.Code // until the partition answers
				topic, pid, commit := t.Topic, m.ProducerID, m.Committed
				part.WriteTxnMarker(marker, now, func(err error) {
					if err == nil && topic == OffsetsTopic {
						// The group shard's pending offsets of the
						// transaction are decided by the marker
						// (core/group txnoffsets.go).
						if gs := b.groups.rt.Slot(id); gs != nil && gs.Replica == part {
							gs.Shard.TxnEnded(pid, commit)
						}
					}
					if pa.answered {
						return
					}
					rp.ErrorCode = b.code(err)
					pa.done()
				})
			}
		}
	}
	if pa.pending > 1 {
		pa.timeoutAfter(b.e, defaultProduceTimeout, nil)
	}
	pa.done()
}
