package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The rules OffsetCommit (offsets.go) and TxnOffsetCommit (txnoffsets.go)
// share, once their member checks passed:
//
//  C1. Each partition is checked on its own (checkCommit): metadata past
//      offset.metadata.max.bytes, OFFSET_METADATA_TOO_LARGE; a partition
//      that does not exist, UNKNOWN_TOPIC_OR_PARTITION; a negative offset,
//      INVALID_COMMIT_OFFSET_SIZE. The others are written, in one write,
//      in request order.
//  C2. A failed write answers every partition written with the
//      coordinator's code for the failure (writeErrorCode); the others
//      keep theirs. Nothing changes in memory.
//  C3. Once written, the offsets are applied in request order (numbered
//      in log order, nextSeq), unless the group was deleted meanwhile (its
//      tombstone came after).

// commitTopic is one topic of an offset commit, with its partitions'
// answers.
type commitTopic struct {
	topic string
	parts []commitPart
}

// commitPart is one partition of an offset commit: what was asked, and
// the answer (code) or the offset to write (c).
type commitPart struct {
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    *string
	code        int16
	c           *committed
}

// readCommit reads a commit request's partitions (of OffsetCommit or
// TxnOffsetCommit: topic and part read one topic and one partition).
func readCommit[T, P any](topics []T, topic func(T) (string, []P), part func(P) commitPart) []commitTopic {
	out := make([]commitTopic, 0, len(topics))
	for _, t := range topics {
		name, parts := topic(t)
		ct := commitTopic{topic: name, parts: make([]commitPart, 0, len(parts))}
		for _, p := range parts {
			ct.parts = append(ct.parts, part(p))
		}
		out = append(out, ct)
	}
	return out
}

// answerCommit writes the partitions' codes as a commit response's topics
// (topic and part make one topic and one partition of the response).
func answerCommit[T, P any](topics []commitTopic, topic func(string, []P) T, part func(int32, int16) P) []T {
	var out []T
	for _, t := range topics {
		var parts []P
		for _, p := range t.parts {
			parts = append(parts, part(p.partition, p.code))
		}
		out = append(out, topic(t.topic, parts))
	}
	return out
}

// The views of OffsetCommit and TxnOffsetCommit for readCommit and
// answerCommit, by role: a topic read, a partition read, a topic answered,
// a partition answered.

func offsetCommitTopic(t kmsg.OffsetCommitRequestTopic) (string, []kmsg.OffsetCommitRequestTopicPartition) {
	return t.Topic, t.Partitions
}

func txnOffsetCommitTopic(t kmsg.TxnOffsetCommitRequestTopic) (string, []kmsg.TxnOffsetCommitRequestTopicPartition) {
	return t.Topic, t.Partitions
}

func offsetCommitPart(p kmsg.OffsetCommitRequestTopicPartition) commitPart {
	return commitPart{partition: p.Partition, offset: p.Offset, leaderEpoch: p.LeaderEpoch, metadata: p.Metadata}
}

func txnOffsetCommitPart(p kmsg.TxnOffsetCommitRequestTopicPartition) commitPart {
	return commitPart{partition: p.Partition, offset: p.Offset, leaderEpoch: p.LeaderEpoch, metadata: p.Metadata}
}

func offsetCommitAnswer(name string, ps []kmsg.OffsetCommitResponseTopicPartition) kmsg.OffsetCommitResponseTopic {
	return kmsg.OffsetCommitResponseTopic{Topic: name, Partitions: ps}
}

func txnOffsetCommitAnswer(name string, ps []kmsg.TxnOffsetCommitResponseTopicPartition) kmsg.TxnOffsetCommitResponseTopic {
	return kmsg.TxnOffsetCommitResponseTopic{Topic: name, Partitions: ps}
}

func offsetCommitCode(p int32, code int16) kmsg.OffsetCommitResponseTopicPartition {
	return kmsg.OffsetCommitResponseTopicPartition{Partition: p, ErrorCode: code}
}

func txnOffsetCommitCode(p int32, code int16) kmsg.TxnOffsetCommitResponseTopicPartition {
	return kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p, ErrorCode: code}
}

// offsetCommit is one offset commit's request-specific steps.
type offsetCommit struct {
	group  string
	topics []commitTopic
	// hasEpoch: the request version carries leader epochs.
	hasEpoch bool
	// member checks the request against its group (nil when there is
	// none yet) and returns the group to commit to, or the code that
	// refuses the whole request.
	member func(g *Group) (*Group, *kerr.Error)
	// write writes the records; apply applies one written offset.
	write func(recs []Record, done func(error))
	apply func(g *Group, tp topicPartition, c *committed)
	// answer replies with the partitions' codes.
	answer func()
}

// commit runs an offset commit: the shard's and the group id's checks,
// the request's member checks, then rules C1-C3.
func (s *Shard) commit(oc *offsetCommit, exists PartitionExists) {
	refuse := func(e *kerr.Error) {
		for i := range oc.topics {
			for j := range oc.topics[i].parts {
				oc.topics[i].parts[j].code = e.Code
			}
		}
		oc.answer()
	}
	if e := s.status.Err(); e != nil {
		refuse(e)
		return
	}
	if oc.group == "" {
		refuse(kerr.InvalidGroupID)
		return
	}
	g, e := oc.member(s.group(oc.group, false))
	if e != nil {
		refuse(e)
		return
	}
	recs := s.checkCommits(g, oc.topics, oc.hasEpoch, exists)
	if len(recs) == 0 {
		oc.answer()
		return
	}
	oc.write(recs, func(err error) {
		s.commitWritten(g, oc.topics, err, oc.apply)
		oc.answer()
	})
}

// checkCommits checks each partition (rule C1) and returns the records
// of the offsets to write to g; hasEpoch: the request version carries
// leader epochs.
func (s *Shard) checkCommits(g *Group, topics []commitTopic, hasEpoch bool, exists PartitionExists) []Record {
	now := s.e.Now().UnixMilli()
	var recs []Record
	for i := range topics {
		t := &topics[i]
		for j := range t.parts {
			p := &t.parts[j]
			if p.code, p.c = checkCommit(exists, t.topic, p.partition, p.offset, p.leaderEpoch, hasEpoch, p.metadata, now); p.c != nil {
				recs = append(recs, offsetRecord(g.name, t.topic, p.partition, p.c))
			}
		}
	}
	return recs
}

// commitWritten applies the outcome of the write of checkCommits' records:
// a failure answers the written partitions (rule C2); a success applies
// each offset written (apply, rule C3) unless g was deleted meanwhile.
func (s *Shard) commitWritten(g *Group, topics []commitTopic, err error, apply func(g *Group, tp topicPartition, c *committed)) {
	if err != nil {
		code := writeErrorCode(err).Code
		for i := range topics {
			for j := range topics[i].parts {
				if p := &topics[i].parts[j]; p.code == 0 {
					p.code = code
				}
			}
		}
		return
	}
	if g.deleted {
		return
	}
	for _, t := range topics {
		for _, p := range t.parts {
			if p.c != nil {
				p.c.seq = s.nextSeq()
				apply(g, topicPartition{t.topic, p.partition}, p.c)
			}
		}
	}
}

// checkCommit validates one partition's committed offset (rule C1) and
// returns the error code for it, or the offset to write (its leader
// epoch -1 when the request version has none).
func checkCommit(exists PartitionExists, topic string, partition int32, offset int64, leaderEpoch int32, hasEpoch bool, metadata *string, now int64) (int16, *committed) {
	switch {
	case metadata != nil && len(*metadata) > MaxOffsetMetadataBytes:
		return kerr.OffsetMetadataTooLarge.Code, nil
	case exists != nil && !exists(topic, partition):
		return kerr.UnknownTopicOrPartition.Code, nil
	case offset < 0:
		return kerr.InvalidCommitOffsetSize.Code, nil
	}
	c := &committed{offset: offset, leaderEpoch: leaderEpoch, timestamp: now}
	if metadata != nil {
		c.metadata = *metadata
	}
	if !hasEpoch {
		c.leaderEpoch = -1
	}
	return 0, c
}
