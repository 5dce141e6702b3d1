package meta_test

import (
	"fmt"

	"github.com/strata-log/strata/core/meta"
)

// A broker's life with the metadata log: decode committed record values,
// replay them into a delta, apply it at the position of the last record,
// and later load a snapshot that recreates the same image.
func Example() {
	orders := meta.UUID{0: 0x0a}
	log := [][]byte{
		meta.EncodeRecord(nil, &meta.RegisterBrokerRecord{BrokerID: 1, BrokerEpoch: 1}),
		meta.EncodeRecord(nil, &meta.RegisterBrokerRecord{BrokerID: 2, BrokerEpoch: 2}),
		meta.EncodeRecord(nil, &meta.TopicRecord{Name: "orders", TopicID: orders}),
		meta.EncodeRecord(nil, &meta.PartitionRecord{TopicID: orders, Partition: 0,
			Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}),
		// Broker 1 fails: broker 2 takes over, leader epoch 0 -> 1.
		meta.EncodeRecord(nil, &meta.FenceBrokerRecord{BrokerID: 1, BrokerEpoch: 1}),
		meta.EncodeRecord(nil, &meta.PartitionChangeRecord{TopicID: orders, Partition: 0,
			Leader: new(int32(2)), ISR: []int32{2}}),
	}

	img := meta.Empty()
	d := img.NewDelta()
	for _, value := range log {
		rec, err := meta.DecodeRecord(value)
		if err != nil {
			panic(err)
		}
		if err := d.Replay(rec); err != nil {
			panic(err) // a committed record that does not replay is fatal
		}
	}
	img = d.Apply(meta.Position{Offset: int64(len(log) - 1), Epoch: 1})

	p, _ := img.Partition(orders, 0)
	fmt.Printf("leader %d, isr %v, leader epoch %d, partition epoch %d\n", p.Leader, p.ISR, p.LeaderEpoch, p.PartitionEpoch)

	// A stale record is refused and names itself.
	err := img.NewDelta().Replay(&meta.PartitionChangeRecord{TopicID: orders, Partition: 0, Leader: new(int32(1))})
	fmt.Println(err)

	snapshot := meta.EncodeSnapshot(img)
	loaded, err := meta.DecodeSnapshot(img.Position(), snapshot)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(snapshot), "snapshot records; equal:", meta.Equal(img, loaded), "same digest:", img.Digest() == loaded.Digest())
	// Output:
	// leader 2, isr [2], leader epoch 1, partition epoch 1
	// meta: cannot replay PartitionChangeRecord{topic=CgAAAAAAAAAAAAAAAAAAAA partition=0 leader=1}: meta: invalid record: invalid partition state: leader 1 not in isr [2]
	// 4 snapshot records; equal: true same digest: true
}
