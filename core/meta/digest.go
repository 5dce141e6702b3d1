package meta

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Digest is a deterministic fingerprint of an image: equal images have equal
// digests, on every node and every run. The simulator compares nodes' images
// by digest.
type Digest [sha256.Size]byte

// String formats the digest in hex.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// digestDomain separates image digests from any other SHA-256 use.
const digestDomain = "strata/meta image digest v1"

// digestSum is a multiset hash of an image's snapshot records: the lane-wise
// sum (mod 2^64) of the SHA-256 of each record's encoding. Addition commutes,
// so the sum does not depend on the order entities were added, and Apply can
// keep it current in O(changed entities): subtract the old record's hash,
// add the new one. Collisions are as unlikely as for any 256-bit hash for
// the non-adversarial comparisons it serves.
type digestSum [4]uint64

// hasher turns records into digest terms, reusing one encoding buffer.
type hasher struct {
	buf []byte
}

// term is the digest term of one snapshot record.
func (h *hasher) term(rec Record) digestSum {
	h.buf = EncodeRecord(h.buf[:0], rec)
	return h.sum()
}

// partitionTerm is term(p.record(topic)) without allocating the record:
// partitions are most of an image, and a bulk load hashes every one.
func (h *hasher) partitionTerm(topic UUID, p *Partition) digestSum {
	rec := PartitionRecord{
		TopicID: topic, Partition: p.ID, Replicas: p.Replicas, ISR: p.ISR,
		RemovingReplicas: p.RemovingReplicas, AddingReplicas: p.AddingReplicas,
		Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		ELR: p.ELR, LastKnownELR: p.LastKnownELR,
	}
	version := recordSpecs[TypePartition].maxVersion
	h.buf = appendHeader(h.buf[:0], TypePartition, version)
	h.buf, _ = rec.appendBody(h.buf, version)
	return h.sum()
}

// sum hashes the encoded record in buf into a term.
func (h *hasher) sum() digestSum {
	sum := sha256.Sum256(h.buf)
	var t digestSum
	for i := range t {
		t[i] = binary.BigEndian.Uint64(sum[8*i:])
	}
	return t
}

func (s *digestSum) add(t digestSum) {
	for i := range s {
		s[i] += t[i]
	}
}

func (s *digestSum) sub(t digestSum) {
	for i := range s {
		s[i] -= t[i]
	}
}

// addTopic adds (sign > 0) or removes (sign < 0) a whole topic: its record
// and its partitions'.
func (s *digestSum) addTopic(h *hasher, t *TopicImage, sign int) {
	apply := s.add
	if sign < 0 {
		apply = s.sub
	}
	apply(h.term(&TopicRecord{Name: t.name, TopicID: t.id}))
	for _, p := range t.partitions {
		apply(h.partitionTerm(t.id, p))
	}
}

// Digest returns the image's fingerprint: a hash of its position and of the
// multiset of records its snapshot consists of. It costs O(1); the work is
// done incrementally by Delta.Apply.
func (img *Image) Digest() Digest {
	b := make([]byte, 0, len(digestDomain)+8+4+len(img.sum)*8)
	b = append(b, digestDomain...)
	b = binary.BigEndian.AppendUint64(b, uint64(img.position.Offset))
	b = binary.BigEndian.AppendUint32(b, uint32(img.position.Epoch))
	for _, lane := range img.sum {
		b = binary.BigEndian.AppendUint64(b, lane)
	}
	return sha256.Sum256(b)
}

// recomputeSum computes the digest sum from scratch from the image's
// snapshot records; tests check it against the incremental one.
func (img *Image) recomputeSum() digestSum {
	var (
		h       hasher
		s       digestSum
		scratch PartitionRecord
	)
	img.eachSnapshotRecord(&scratch, func(rec Record) { s.add(h.term(rec)) })
	return s
}
