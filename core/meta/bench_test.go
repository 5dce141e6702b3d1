package meta

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The metadata scale benchmarks: a cluster of 5 brokers and topics of 100
// partitions at replication factor 3, 1,000 topics (100,000 partitions) for
// the headline figures and 10 topics (1,000 partitions) as the baseline that
// shows which costs grow with the cluster and which do not.
//
//	go test ./core/meta -run '^$' -bench . -benchmem

const (
	benchBrokers            = 5
	benchPartitionsPerTopic = 100
	benchReplicationFactor  = 3
)

// benchTopicID is topic i's id.
func benchTopicID(i int) UUID {
	var u UUID
	u[0], u[1], u[2], u[15] = byte(i>>16), byte(i>>8), byte(i), 1
	return u
}

// creationRecords are the records a controller writes to build the cluster:
// broker registrations, then per topic a TopicRecord, its PartitionRecords
// (round-robin placement, full ISR, first replica leads) and one config.
func creationRecords(topics int) [][]Record {
	batches := [][]Record{{&FeatureLevelRecord{Name: "metadata.version", Level: 7}}}
	for b := range int32(benchBrokers) {
		batches[0] = append(batches[0], &RegisterBrokerRecord{BrokerID: b, IncarnationID: UUID{byte(b + 1)}, BrokerEpoch: int64(b + 1),
			Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: fmt.Sprintf("broker-%d.strata.internal", b), Port: 9092}},
			Features:  []FeatureRange{{Name: "metadata.version", MinVersion: 1, MaxVersion: 7}}, Rack: fmt.Sprintf("rack-%d", b%3)})
	}
	for t := range topics {
		id := benchTopicID(t)
		batch := []Record{&TopicRecord{Name: fmt.Sprintf("topic-%05d", t), TopicID: id}}
		for p := range int32(benchPartitionsPerTopic) {
			replicas := make([]int32, benchReplicationFactor)
			for r := range replicas {
				replicas[r] = (int32(t)*benchPartitionsPerTopic + p + int32(r)) % benchBrokers
			}
			batch = append(batch, &PartitionRecord{TopicID: id, Partition: p, Replicas: replicas, ISR: replicas,
				RemovingReplicas: []int32{}, AddingReplicas: []int32{}, Leader: replicas[0]})
		}
		batch = append(batch, &ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: fmt.Sprintf("topic-%05d", t),
			Key: "retention.ms", Value: new("604800000")})
		batches = append(batches, batch)
	}
	return batches
}

// buildImage applies each batch as one delta, as a broker would apply the
// committed records of each CreateTopics.
func buildImage(tb testing.TB, batches [][]Record) *Image {
	img := Empty()
	offset := int64(-1)
	for _, batch := range batches {
		d := img.NewDelta()
		for _, r := range batch {
			if err := d.Replay(r); err != nil {
				tb.Fatal(err)
			}
		}
		offset += int64(len(batch))
		img = d.Apply(Position{Offset: offset, Epoch: 1})
	}
	return img
}

var benchSizes = []struct {
	name   string
	topics int
}{{"partitions=1k", 10}, {"partitions=100k", 1000}}

// BenchmarkCreate: replaying the creation records, one delta per topic.
func BenchmarkCreate(b *testing.B) {
	for _, size := range benchSizes {
		batches := creationRecords(size.topics)
		b.Run(size.name, func(b *testing.B) {
			for b.Loop() {
				buildImage(b, batches)
			}
		})
	}
}

// BenchmarkCreateOneDelta: the same records in a single delta (a snapshot
// load without the decoding).
func BenchmarkCreateOneDelta(b *testing.B) {
	for _, size := range benchSizes {
		var all []Record
		for _, batch := range creationRecords(size.topics) {
			all = append(all, batch...)
		}
		b.Run(size.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := LoadSnapshot(Position{Offset: int64(len(all)), Epoch: 1}, all); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSnapshotEncode: image to snapshot record values; reports the
// snapshot's size.
func BenchmarkSnapshotEncode(b *testing.B) {
	for _, size := range benchSizes {
		img := buildImage(b, creationRecords(size.topics))
		b.Run(size.name, func(b *testing.B) {
			var total int
			for b.Loop() {
				total = 0
				for _, v := range EncodeSnapshot(img) {
					total += len(v)
				}
			}
			b.ReportMetric(float64(total), "snapshot-bytes")
			b.ReportMetric(float64(len(img.SnapshotRecords())), "records")
		})
	}
}

// BenchmarkSnapshotDecode: decoding the record values only.
func BenchmarkSnapshotDecode(b *testing.B) {
	for _, size := range benchSizes {
		values := EncodeSnapshot(buildImage(b, creationRecords(size.topics)))
		b.Run(size.name, func(b *testing.B) {
			for b.Loop() {
				for _, v := range values {
					if _, err := DecodeRecord(v); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkSnapshotLoad: what a restarted broker does: decode and replay a
// snapshot into an image.
func BenchmarkSnapshotLoad(b *testing.B) {
	for _, size := range benchSizes {
		img := buildImage(b, creationRecords(size.topics))
		values := EncodeSnapshot(img)
		b.Run(size.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := DecodeSnapshot(img.Position(), values); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// partitionChanges alternates a leader change and an ISR change on one
// partition, so every change is valid on the image the previous one built.
func partitionChanges(topic UUID) [2]*PartitionChangeRecord {
	return [2]*PartitionChangeRecord{
		{TopicID: topic, Partition: 42, Leader: new(int32(3)), ISR: []int32{3, 4}},
		{TopicID: topic, Partition: 42, Leader: new(int32(2)), ISR: []int32{2, 3, 4}},
	}
}

// BenchmarkPartitionChange: one PartitionChangeRecord replayed and applied
// to a large image. Its cost is O(log topics + partitions of the topic): the
// 100k and 1k figures should be close.
func BenchmarkPartitionChange(b *testing.B) {
	for _, size := range benchSizes {
		img := buildImage(b, creationRecords(size.topics))
		topic := benchTopicID(size.topics / 2)
		changes := partitionChanges(topic)
		b.Run(size.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				d := img.NewDelta()
				if err := d.Replay(changes[i%2]); err != nil {
					b.Fatal(err)
				}
				img = d.Apply(Position{Offset: img.position.Offset + 1, Epoch: 1})
				i++
			}
		})
	}
}

// BenchmarkDigest: comparing nodes' images.
func BenchmarkDigest(b *testing.B) {
	img := buildImage(b, creationRecords(1000))
	for b.Loop() {
		img.Digest()
	}
}

// BenchmarkEqual: a full comparison of two 100k-partition images that share
// nothing (the worst case; images derived from one another share and skip).
func BenchmarkEqual(b *testing.B) {
	img := buildImage(b, creationRecords(1000))
	loaded, err := DecodeSnapshot(img.Position(), EncodeSnapshot(img))
	require.NoError(b, err)
	for b.Loop() {
		if !Equal(img, loaded) {
			b.Fatal("differ")
		}
	}
}

// TestPartitionChangeCostIndependentOfClusterSize checks the O() claim with
// allocation counts, which unlike timings are exact: applying one
// PartitionChangeRecord to a 100,000-partition image allocates only a few
// more objects than on a 1,000-partition one (deeper tree paths).
func TestPartitionChangeCostIndependentOfClusterSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100k-partition image")
	}
	allocs := func(topics int) float64 {
		img := buildImage(t, creationRecords(topics))
		changes := partitionChanges(benchTopicID(topics / 2))
		i := 0
		return testing.AllocsPerRun(20, func() {
			d := img.NewDelta()
			require.NoError(t, d.Replay(changes[i%2]))
			img = d.Apply(Position{Offset: img.position.Offset + 1, Epoch: 1})
			i++
		})
	}
	small, large := allocs(10), allocs(1000)
	t.Logf("allocations per PartitionChange apply: %.0f at 1k partitions, %.0f at 100k", small, large)
	require.Less(t, large-small, 20.0, "a partition change must not allocate per topic or per partition of the cluster")
}
