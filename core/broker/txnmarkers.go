package broker

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/txn"
)

// txnMarkers is the broker's txn.MarkerSender: it groups a transaction's
// partitions by their leader in the current image and sends each leader a
// WriteTxnMarkers (API 27) over the broker's kept inter-broker
// connections (peers.go; this broker included: its own listener serves the
// markers of partitions led here, through the same handler). A partition without a leader gets no result
// (the shard sends it again after its backoff); one whose topic is gone
// gets UNKNOWN_TOPIC_ID, which ends its marker.
type txnMarkers struct {
	b *Broker
}

// markerRequestTimeout bounds how long a leader's answer is awaited
// before its partitions are left unanswered (and so sent again).
const markerRequestTimeout = 30 * time.Second

// writeTxnMarkersVersion is the version sent: v1 (flexible, Kafka 2.8+);
// v2 when the marker carries KIP-890's transaction version.
const writeTxnMarkersVersion = 1

func newTxnMarkers(b *Broker) *txnMarkers {
	return &txnMarkers{b: b}
}

// SendMarkers implements txn.MarkerSender.
func (tm *txnMarkers) SendMarkers(m txn.Markers, done func([]txn.MarkerResult)) {
	b := tm.b
	img := b.image()
	var results []txn.MarkerResult
	byLeader := map[int32][]txn.TopicPartition{}
	var leaders []int32
	for _, tp := range m.Partitions {
		if img == nil {
			continue
		}
		ti, ok := img.TopicByName(tp.Topic)
		if !ok {
			results = append(results, txn.MarkerResult{TopicPartition: tp, Err: kerr.UnknownTopicID})
			continue
		}
		p, ok := ti.Partition(tp.Partition)
		if !ok {
			results = append(results, txn.MarkerResult{TopicPartition: tp, Err: kerr.UnknownTopicID})
			continue
		}
		if p.Leader < 0 {
			continue
		}
		if _, seen := byLeader[p.Leader]; !seen {
			leaders = append(leaders, p.Leader)
		}
		byLeader[p.Leader] = append(byLeader[p.Leader], tp)
	}
	slices.Sort(leaders)
	waiting := len(leaders)
	finished := false
	finish := func() {
		if !finished && waiting == 0 {
			finished = true
			done(results)
		}
	}
	if waiting == 0 {
		b.e.Post(finish)
		return
	}
	for _, leader := range leaders {
		parts := byLeader[leader]
		b.peers().ask(img.Broker, leader, markerRequest(m, parts), markerRequestTimeout, func(r kmsg.Response, timedOut bool) {
			if finished {
				return
			}
			if !timedOut {
				resp, _ := r.(*kmsg.WriteTxnMarkersResponse)
				results = append(results, markerResults(resp, parts)...)
			}
			waiting--
			finish()
		})
	}
}

// markerRequest is one leader's WriteTxnMarkers.
func markerRequest(m txn.Markers, parts []txn.TopicPartition) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = writeTxnMarkersVersion
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	if m.TransactionVersion > 0 {
		req.Version, mk.TransactionVersion = 2, m.TransactionVersion
	}
	for topic, partitions := range txn.ByTopic(parts) {
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = topic, partitions
		mk.Topics = append(mk.Topics, t)
	}
	req.Markers = append(req.Markers, mk)
	return req
}

// markerResults reads a leader's answer for the partitions asked (nil
// resp: none answered).
func markerResults(resp *kmsg.WriteTxnMarkersResponse, asked []txn.TopicPartition) []txn.MarkerResult {
	if resp == nil || len(resp.Markers) != 1 {
		return nil
	}
	var out []txn.MarkerResult
	for _, t := range resp.Markers[0].Topics {
		for _, p := range t.Partitions {
			tp := txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if !slices.Contains(asked, tp) {
				continue
			}
			var err *kerr.Error
			if p.ErrorCode != 0 {
				err, _ = kerr.ErrorForCode(p.ErrorCode).(*kerr.Error)
				if err == nil {
					err = kerr.UnknownServerError
				}
			}
			out = append(out, txn.MarkerResult{TopicPartition: tp, Err: err})
		}
	}
	return out
}

// brokerLookup finds a broker's registration (meta.Image.Broker).
type brokerLookup func(id int32) (meta.BrokerRegistration, bool)

// brokerClientAddr is a registered, unfenced broker's address on the
// named listener.
func brokerClientAddr(lookup brokerLookup, listener string, id int32) (string, bool) {
	reg, ok := lookup(id)
	if !ok || reg.Fenced {
		return "", false
	}
	ep, ok := reg.Endpoint(listener)
	if !ok {
		return "", false
	}
	return joinHostPort(ep.Host, int32(ep.Port)), true
}
