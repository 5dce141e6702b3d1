package node_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestE2EProducerByteRateQuota: a producer_byte_rate set with kadm's
// AlterClientQuotas on the producer's client id slows a kgo producer to
// about that rate (throttle_time_ms and the muted connection) and every
// record is still acknowledged.
func TestE2EProducerByteRateQuota(t *testing.T) {
	// One-second samples, the rate measured over at least one of them:
	// the burst allowed before throttling is about one second's worth.
	n := startNodeWithProperties(t, t.TempDir(), "quota.window.num=2\nquota.window.size.seconds=1\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := newAdmin(t, n.Addr())
	_, err := adm.CreateTopic(ctx, 1, 1, nil, "quota")
	require.NoError(t, err)

	const (
		clientID = "slow-producer"
		rate     = 256 << 10 // bytes per second
		records  = 192
		size     = 8 << 10 // 1.5 MiB in all
	)
	name := clientID
	entity := kadm.ClientQuotaEntity{{Type: "client-id", Name: &name}}
	altered, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: entity, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: rate}},
	}})
	require.NoError(t, err)
	require.NoError(t, altered[0].Err)
	described, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{
		{Type: "client-id", MatchName: &name, MatchType: 0},
	})
	require.NoError(t, err)
	require.Len(t, described, 1)

	// Small batches: the quota acts between requests (a request already
	// read is served), so the records must take many.
	cl := newProducer(t, n.Addr(), kgo.ClientID(clientID), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(16<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // the quota counts request bytes: keep them what the records are
	value := make([]byte, size)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	start := time.Now()
	for range records {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: "quota", Partition: 0, Value: value}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	require.Empty(t, errs, "every record is acknowledged")
	t.Logf("%d bytes at a %d B/s quota took %v", records*size, rate, took)

	// 1.5 MiB at 256 KiB/s is 6 s; the first window's burst (up to
	// two samples' worth) passes unthrottled. Unthrottled, the records
	// take well under a second on loopback.
	total := float64(records * size)
	expected := time.Duration((total/rate - 2) * float64(time.Second))
	require.GreaterOrEqual(t, took, expected*7/10, "%d bytes at a %d B/s quota took %v", records*size, rate, took)

	offsets, err := adm.ListEndOffsets(ctx, "quota")
	require.NoError(t, err)
	end, ok := offsets.Lookup("quota", 0)
	require.True(t, ok)
	require.Equal(t, int64(records), end.Offset)
}
