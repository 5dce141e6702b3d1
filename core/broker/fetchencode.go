package broker

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/wire"
)

// A fetch response is encoded here rather than by kmsg, so that each
// partition's record bytes stay a region of its segment file, which the
// transport sends with sendfile: the response is a list of env.Parts,
// encoded bytes around file regions. Everything else follows kmsg's
// FetchResponse encoding byte for byte (TestFetchEncodingMatchesKmsg
// decodes and compares with kmsg for every version).

// fetchRegion is a partition's records as a file region; a zero Length is
// no records (an empty records field, not null, as Kafka sends).
type fetchRegion struct {
	file           env.File
	offset, length int64
}

// partsWriter accumulates a frame's bytes and regions.
type partsWriter struct {
	parts []env.Part
	buf   []byte
}

func (w *partsWriter) region(r fetchRegion) {
	if r.length == 0 {
		return
	}
	w.parts = append(w.parts, env.Part{Bytes: w.buf})
	w.buf = nil
	w.parts = append(w.parts, env.Part{File: r.file, Offset: r.offset, Length: r.length})
}

func (w *partsWriter) finish() []env.Part {
	if len(w.buf) > 0 || len(w.parts) == 0 {
		w.parts = append(w.parts, env.Part{Bytes: w.buf})
	}
	return w.parts
}

// encodeFetchResponse renders resp (whose partitions' RecordBatches are
// ignored) as a response frame in which partition j of topic i carries
// regions[i][j] as its records.
func encodeFetchResponse(correlationID int32, resp *kmsg.FetchResponse, regions [][]fetchRegion) []env.Part {
	v := resp.Version
	flexible := v >= 12
	w := &partsWriter{buf: make([]byte, 0, 256)}
	w.buf = wire.AppendResponseHeader(w.buf, correlationID, resp.Key(), flexible)
	if v >= 1 {
		w.buf = kbin.AppendInt32(w.buf, resp.ThrottleMillis)
	}
	if v >= 7 {
		w.buf = kbin.AppendInt16(w.buf, resp.ErrorCode)
		w.buf = kbin.AppendInt32(w.buf, resp.SessionID)
	}
	w.buf = appendArrayLen(w.buf, len(resp.Topics), flexible)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if v <= 12 {
			w.buf = appendString(w.buf, t.Topic, flexible)
		} else {
			w.buf = append(w.buf, t.TopicID[:]...)
		}
		w.buf = appendArrayLen(w.buf, len(t.Partitions), flexible)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			w.buf = kbin.AppendInt32(w.buf, p.Partition)
			w.buf = kbin.AppendInt16(w.buf, p.ErrorCode)
			w.buf = kbin.AppendInt64(w.buf, p.HighWatermark)
			if v >= 4 {
				w.buf = kbin.AppendInt64(w.buf, p.LastStableOffset)
			}
			if v >= 5 {
				w.buf = kbin.AppendInt64(w.buf, p.LogStartOffset)
			}
			if v >= 4 {
				w.buf = appendAborted(w.buf, p.AbortedTransactions, flexible)
			}
			if v >= 11 {
				w.buf = kbin.AppendInt32(w.buf, p.PreferredReadReplica)
			}
			r := regions[i][j]
			if flexible {
				w.buf = kbin.AppendUvarint(w.buf, uint32(r.length)+1)
			} else {
				w.buf = kbin.AppendInt32(w.buf, int32(r.length))
			}
			w.region(r)
			if flexible {
				w.buf = appendPartitionTags(w.buf, p)
			}
		}
		if flexible {
			w.buf = append(w.buf, 0) // no topic tags
		}
	}
	if flexible {
		w.buf = appendNodeEndpoints(w.buf, resp.Brokers)
	}
	return w.finish()
}

func appendArrayLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return kbin.AppendUvarint(dst, uint32(n)+1)
	}
	return kbin.AppendInt32(dst, int32(n))
}

func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactString(dst, s)
	}
	return kbin.AppendString(dst, s)
}

func appendNullableString(dst []byte, s *string, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactNullableString(dst, s)
	}
	return kbin.AppendNullableString(dst, s)
}

func appendAborted(dst []byte, txns []kmsg.FetchResponseTopicPartitionAbortedTransaction, flexible bool) []byte {
	switch {
	case txns == nil && flexible:
		dst = kbin.AppendUvarint(dst, 0)
	case txns == nil:
		dst = kbin.AppendInt32(dst, -1)
	default:
		dst = appendArrayLen(dst, len(txns), flexible)
	}
	for _, t := range txns {
		dst = kbin.AppendInt64(dst, t.ProducerID)
		dst = kbin.AppendInt64(dst, t.FirstOffset)
		if flexible {
			dst = append(dst, 0)
		}
	}
	return dst
}

// appendPartitionTags writes a partition's tagged fields as kmsg does:
// DivergingEpoch (0), CurrentLeader (1) and SnapshotID (2), each only
// when it differs from its default.
func appendPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	diverging := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1
	leader := p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1
	snapshot := p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	n := 0
	for _, set := range []bool{diverging, leader, snapshot} {
		if set {
			n++
		}
	}
	dst = kbin.AppendUvarint(dst, uint32(n))
	if diverging {
		dst = append(dst, 0, 13) // tag 0, 13 bytes: int32, int64, no tags
		dst = kbin.AppendInt32(dst, p.DivergingEpoch.Epoch)
		dst = kbin.AppendInt64(dst, p.DivergingEpoch.EndOffset)
		dst = append(dst, 0)
	}
	if leader {
		dst = append(dst, 1, 9) // tag 1, 9 bytes: int32, int32, no tags
		dst = kbin.AppendInt32(dst, p.CurrentLeader.LeaderID)
		dst = kbin.AppendInt32(dst, p.CurrentLeader.LeaderEpoch)
		dst = append(dst, 0)
	}
	if snapshot {
		dst = append(dst, 2, 13) // tag 2, 13 bytes: int64, int32, no tags
		dst = kbin.AppendInt64(dst, p.SnapshotID.EndOffset)
		dst = kbin.AppendInt32(dst, p.SnapshotID.Epoch)
		dst = append(dst, 0)
	}
	return dst
}

// appendNodeEndpoints writes the response's tagged fields: the leaders'
// endpoints (tag 0, v16+ NodeEndpoints) when there are any.
func appendNodeEndpoints(dst []byte, brokers []kmsg.FetchResponseBroker) []byte {
	if len(brokers) == 0 {
		return append(dst, 0)
	}
	var body []byte
	body = appendArrayLen(body, len(brokers), true)
	for _, b := range brokers {
		body = kbin.AppendInt32(body, b.NodeID)
		body = appendString(body, b.Host, true)
		body = kbin.AppendInt32(body, b.Port)
		body = appendNullableString(body, b.Rack, true)
		body = append(body, 0)
	}
	dst = kbin.AppendUvarint(dst, 1)
	dst = kbin.AppendUvarint(dst, 0)
	dst = kbin.AppendUvarint(dst, uint32(len(body)))
	return append(dst, body...)
}
