package broker

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/wire"
)

// largeImage is an image of three brokers and topics×partitions partitions
// at replication factor 3.
func largeImage(tb testing.TB, topics, partitions int) *meta.Image {
	tb.Helper()
	d := meta.Empty().NewDelta()
	for id := int32(1); id <= 3; id++ {
		require.NoError(tb, d.Replay(&meta.RegisterBrokerRecord{BrokerID: id, BrokerEpoch: int64(id),
			Endpoints: []meta.Endpoint{{Name: "PLAINTEXT", Host: fmt.Sprintf("b%d", id), Port: 9092}}}))
	}
	for t := range topics {
		id := meta.UUID{0: byte(t >> 8), 1: byte(t), 15: 1}
		require.NoError(tb, d.Replay(&meta.TopicRecord{Name: fmt.Sprintf("topic-%04d", t), TopicID: id}))
		for p := range partitions {
			r := []int32{int32(p%3 + 1), int32((p+1)%3 + 1), int32((p+2)%3 + 1)}
			require.NoError(tb, d.Replay(&meta.PartitionRecord{TopicID: id, Partition: int32(p), Replicas: r, ISR: r, Leader: r[0]}))
		}
	}
	return d.Apply(meta.Position{Offset: 1, Epoch: 1})
}

// BenchmarkMetadataAllTopics measures the work of one all-topics Metadata
// answer over 5,000 partitions (the shape of issue 22's flood): the plan
// on the loop, and the build and encoding that run off it.
func BenchmarkMetadataAllTopics(b *testing.B) {
	img := largeImage(b, 100, 50)
	br, _ := newTestBroker(b, func(c *Config) { c.Metadata = &fakeMetadata{img: img} })
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 1
	req.Topics = nil
	r := &request{cn: &conn{l: br.listeners[0], principal: principal.Anonymous}, body: req}
	var size int
	b.Run("plan", func(b *testing.B) {
		for range b.N {
			_ = br.planMetadata(r, req)
		}
	})
	b.Run("build+encode", func(b *testing.B) {
		plan := br.planMetadata(r, req)
		b.ReportMetric(float64(plan.cost().Microseconds()), "cost-µs")
		for range b.N {
			frame := wire.EncodeResponse(1, plan.build())
			size = len(frame)
		}
		b.SetBytes(int64(size))
	})
}
