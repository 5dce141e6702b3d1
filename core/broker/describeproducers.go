package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDescribeProducers lists each partition's active producers as its
// leader holds them (KIP-664): producer id and epoch, last sequence and
// timestamp, the epoch of the coordinator that wrote its last marker, and
// the first offset of its ongoing transaction (-1 without one). A partition
// not led here answers NOT_LEADER_OR_FOLLOWER, as Kafka's leader-targeted
// default does. This is how an operator finds a hanging transaction's
// producer to abort (`strata txn producers`, `strata txn abort`).
func handleDescribeProducers(b *Broker, r *request) {
	req := r.body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	canRead := b.topicAuth(r, kmsg.ACLOperationRead)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, id := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = id
			part, err := b.lookup(t.Topic, canRead(t.Topic), id)
			if err == nil {
				producers, perr := part.Producers()
				err = perr
				for _, p := range producers {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch = p.ID, int32(p.Epoch)
					ap.LastSequence, ap.LastTimestamp = p.LastSeq(), p.LastTimestamp
					ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = p.CoordinatorEpoch, p.CurrentTxnFirstOffset
					rp.ActiveProducers = append(rp.ActiveProducers, ap)
				}
			}
			rp.ErrorCode = b.code(err)
			if err != nil {
				msg := err.Error()
				rp.ErrorMessage = &msg
				rp.ActiveProducers = nil
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	r.respond(resp)
}
