package broker

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxDeleteRecordsWait bounds how long a DeleteRecords waits for its
// partitions, whatever timeout the client gives: a waiting request holds
// its connection's later responses.
const maxDeleteRecordsWait = 5 * time.Minute

// handleDeleteRecords moves each partition's log start offset
// (replica.Partition.DeleteRecords: -1 means the high watermark, an offset
// beyond it is OFFSET_OUT_OF_RANGE) and answers once every new log start
// offset is durable. A partition not done within the request's timeout
// is answered REQUEST_TIMED_OUT (its deletion may still complete, as in
// Kafka). A timeout of zero or less waits for the outcome: Kafka answers
// at once because it acknowledges from memory, while the log start offset
// here is acknowledged only once durable, so an immediate answer would
// always be a time-out.
func handleDeleteRecords(b *Broker, r *request) {
	req := r.body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	pa := newPartsAnswer(func() { r.respond(resp) })
	timedOut := fmt.Errorf("%w: the records may still be deleted", errRequestTimedOut)
	resp.Topics = make([]kmsg.DeleteRecordsResponseTopic, len(req.Topics))
	canDelete := b.topicAuth(r, kmsg.ACLOperationDelete)
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(t.Partitions))
		for j := range t.Partitions {
			tp := &t.Partitions[j]
			rp := &rt.Partitions[j]
			*rp = kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = tp.Partition, -1
			part, err := b.lookup(t.Topic, canDelete(t.Topic), tp.Partition)
			if err != nil {
				rp.ErrorCode = b.code(err)
				continue
			}
			rp.ErrorCode = b.code(timedOut) // until the partition answers
			pa.add()
			part.DeleteRecords(tp.Offset, func(low int64, err error) {
				if pa.answered {
					return
				}
				rp.ErrorCode, rp.LowWatermark = b.code(err), low
				if err != nil {
					rp.LowWatermark = -1
					b.log.Debug("DeleteRecords failed", "topic", t.Topic, "partition", tp.Partition, "err", err)
				}
				pa.done()
			})
		}
	}
	if pa.pending > 1 && req.TimeoutMillis > 0 {
		pa.timeoutAfter(b.e, min(time.Duration(req.TimeoutMillis)*time.Millisecond, maxDeleteRecordsWait), nil)
	}
	pa.done()
}
