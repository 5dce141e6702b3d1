package meta

import "fmt"

// A KRaft snapshot is the records that recreate an image, replayed onto the
// empty image. SnapshotRecords lists them in a fixed order that keeps every
// record valid when replayed in sequence:
//
//  1. FeatureLevelRecords, by name (Kafka puts metadata.version first for
//     the same reason: it tells readers how to read the rest);
//  2. RegisterBrokerRecords, by broker id, carrying the current flags;
//  3. per topic, by name: its TopicRecord, then its PartitionRecords by
//     partition id, carrying the current epochs;
//  4. ConfigRecords, by resource then key (topic configs after their
//     topics);
//  5. the ProducerIDsRecord, if ids were ever allocated;
//  6. AccessControlEntryRecords by id, UserScramCredentialRecords by user
//     and mechanism, ClientQuotaRecords by entity then key.
//
// The same image always gives the same records, so two nodes' snapshots of
// equal images are byte-identical.

// SnapshotRecords returns the records that recreate img from the empty
// image. They share slices with img; do not modify them.
func (img *Image) SnapshotRecords() []Record {
	n := img.features.len() + img.brokers.len() + img.topics.len() + img.partitions + 1 +
		img.aclIDs.len() + img.scram.len() + img.quotas.len()
	out := make([]Record, 0, n)
	img.eachSnapshotRecord(nil, func(r Record) { out = append(out, r) })
	return out
}

// eachSnapshotRecord calls yield with every snapshot record in order. With a
// non-nil scratch, partition records (most of a snapshot) are written into
// it instead of allocated, and are valid only during the call.
func (img *Image) eachSnapshotRecord(scratch *PartitionRecord, yield func(Record)) {
	img.features.all(func(name string, level int16) bool {
		yield(&FeatureLevelRecord{Name: name, Level: level})
		return true
	})
	img.brokers.all(func(_ int32, b *BrokerRegistration) bool {
		yield(b.record())
		return true
	})
	for t := range img.Topics() {
		yield(&TopicRecord{Name: t.name, TopicID: t.id})
		for _, p := range t.partitions {
			if scratch == nil {
				yield(p.record(t.id))
				continue
			}
			*scratch = *p.record(t.id)
			yield(scratch)
		}
	}
	img.configs.all(func(r ConfigResource, c *configImage) bool {
		for _, e := range c.entries {
			yield(configRecord(r, e))
		}
		return true
	})
	if img.producerIDs.NextProducerID != 0 {
		yield(producerIDsRecord(img.producerIDs))
	}
	img.eachSecurityRecord(yield)
}

// EncodeSnapshot returns the encoded values of img's snapshot records, each
// one Kafka record value, in SnapshotRecords order.
func EncodeSnapshot(img *Image) [][]byte {
	// One buffer for all values, sliced once it stops growing, so that the
	// values do not pin every buffer the appends outgrew.
	var (
		buf     []byte
		ends    []int
		scratch PartitionRecord
	)
	img.eachSnapshotRecord(&scratch, func(rec Record) {
		buf = EncodeRecord(buf, rec)
		ends = append(ends, len(buf))
	})
	values := make([][]byte, len(ends))
	start := 0
	for i, end := range ends {
		values[i] = buf[start:end:end]
		start = end
	}
	return values
}

// LoadSnapshot replays a snapshot's records onto the empty image and returns
// the image at pos: the position of the last record the snapshot covers
// (for a KRaft snapshot id, its end offset minus one, and its epoch). A
// record that does not replay fails the load with its *ReplayError.
func LoadSnapshot(pos Position, records []Record) (*Image, error) {
	d := Empty().NewDelta()
	for _, rec := range records {
		if err := d.Replay(rec); err != nil {
			return nil, err
		}
	}
	return d.Apply(pos), nil
}

// DecodeSnapshot decodes a snapshot's record values and loads them (see
// LoadSnapshot). A value that does not decode fails with its index.
func DecodeSnapshot(pos Position, values [][]byte) (*Image, error) {
	d := Empty().NewDelta()
	for i, v := range values {
		rec, err := DecodeRecord(v)
		if err != nil {
			return nil, fmt.Errorf("meta: snapshot record %d: %w", i, err)
		}
		if err := d.Replay(rec); err != nil {
			return nil, fmt.Errorf("meta: snapshot record %d: %w", i, err)
		}
	}
	return d.Apply(pos), nil
}
