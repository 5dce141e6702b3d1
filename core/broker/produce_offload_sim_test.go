package broker_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/wire"
)

// TestProduceRepeatedPartitionIsRefused: a partition named twice in one
// Produce request gets INVALID_REQUEST for every copy and nothing of them
// is appended (Kafka keeps the last copy and drops the others
// unanswered); the request's other partitions append.
func TestProduceRepeatedPartitionIsRefused(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("r", 2, nil)
	resp := h.Do(produceBatches(9,
		producePart{"r", 0, h.Batch(nil, "a")},
		producePart{"r", 1, h.Batch(nil, "b")},
		producePart{"r", 0, h.Batch(nil, "c")},
	)).(*kmsg.ProduceResponse)
	parts := resp.Topics[0].Partitions
	require.Len(t, parts, 3)
	require.Equal(t, kerr.InvalidRequest.Code, parts[0].ErrorCode)
	require.Contains(t, *parts[0].ErrorMessage, "more than once")
	require.Zero(t, parts[1].ErrorCode)
	require.Equal(t, kerr.InvalidRequest.Code, parts[2].ErrorCode)
	_, values := h.Fetch("r", 0, 0)
	require.Empty(t, values)
	_, values = h.Fetch("r", 1, 0)
	require.Equal(t, []string{"b"}, values)
}

// TestHeavyProduceIsSharedFairly: a connection that pipelines many
// large compressed batches (each validated on a worker for a couple of
// milliseconds) does not make another connection's produce wait behind
// all of them: the workers take the connections' jobs in turn, so the
// other's batch is validated after at most the flood's jobs already
// running, and its answer comes long before the flood's last.
func TestHeavyProduceIsSharedFairly(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("flood", 1, nil)
	h.CreateTopic("small", 1, nil)
	h.Produce("small", 0, "warm") // opens the default connection

	rng := rand.New(rand.NewPCG(1, 2))
	big := func() []byte {
		b := record.NewBuilder(record.WithCompression(record.CodecZstd))
		for range 200 {
			v := make([]byte, 1024)
			for i := range v {
				v[i] = byte(rng.Uint32())
			}
			b.Append(h.ClientEnv().Now().UnixMilli(), nil, v)
		}
		out, err := b.AppendTo(nil)
		require.NoError(t, err)
		return out
	}
	const floods = 24
	var floodAnswers, floodAnsweredBeforeOther int
	otherDone := false
	for range floods {
		h.Send(produceBatches(9, producePart{"flood", 0, big()}), func(r kmsg.Response, err error) {
			require.NoError(t, err)
			require.Zero(t, r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode)
			floodAnswers++
		})
	}
	// A second client on its own connection.
	var other *wire.Client
	h.ClientEnv().Net().Dial("n1:9092", func(c env.Conn, err error) {
		require.NoError(t, err)
		other = wire.NewClient(c, wire.ClientConfig{ClientID: "other"})
	})
	h.RunUntil("the second connection", func() bool { return other != nil })
	require.Less(t, floodAnswers, 4, "the flood must still be in progress when the other client sends")
	batch := h.Batch([]record.BuilderOption{record.WithCompression(record.CodecZstd)}, "small")
	require.NoError(t, other.Do(produceBatches(9, producePart{"small", 0, batch}), func(r kmsg.Response, err error) {
		require.NoError(t, err)
		require.Zero(t, r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode)
		otherDone, floodAnsweredBeforeOther = true, floodAnswers
	}))
	h.RunUntil("every answer", func() bool { return otherDone && floodAnswers == floods })
	require.LessOrEqual(t, floodAnsweredBeforeOther, floods/3,
		"the other connection's produce waited behind %d of the flood's %d requests", floodAnsweredBeforeOther, floods)
}

// TestProduceOfAClosedConnectionAppends: an acks=0 producer may close its
// connection right after sending; the broker has received the request and
// appends its records (as Kafka does), though its batch was still waiting
// for a worker when the connection closed (franz-go's and kafka-go's
// acks=0 interop tests lost every compressed batch when closing the
// connection dropped the jobs).
func TestProduceOfAClosedConnectionAppends(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("z", 1, nil)
	var c *wire.Client
	h.ClientEnv().Net().Dial("n1:9092", func(conn env.Conn, err error) {
		require.NoError(t, err)
		c = wire.NewClient(conn, wire.ClientConfig{ClientID: "acks0"})
	})
	h.RunUntil("a connection", func() bool { return c != nil })
	received := func() float64 {
		v, _ := h.Metrics.Value(metrics.Requests, "Produce")
		return v
	}
	before := received()
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 4
	for i := range n {
		// 512 KiB of incompressible records: about 5 ms of validation
		// each, so the jobs are still queued when the client hangs up.
		b := record.NewBuilder(record.WithCompression(record.CodecZstd))
		for range 512 {
			v := make([]byte, 1024)
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			copy(v, fmt.Sprintf("v%d", i))
			b.Append(h.ClientEnv().Now().UnixMilli(), nil, v)
		}
		batch, err := b.AppendTo(nil)
		require.NoError(t, err)
		req := produceBatches(9, producePart{"z", 0, batch})
		req.Acks = 0
		require.NoError(t, c.Send(req))
	}
	h.RunUntil("the requests received", func() bool { return received() == before+n })
	c.Close()
	require.NoError(t, h.Sim.RunFor(time.Second))
	end := h.ListOffset("z", 0, -1)
	require.Equal(t, int64(n*512), end.Offset, "every received batch appended")
}
