package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/sim/servertest"
)

// simCluster is a servertest cluster whose topics may have three
// replicas, with the broker tests' own helpers.
type simCluster struct {
	*servertest.Cluster
	t *testing.T
}

// newSimCluster starts n nodes; tweak, if not nil, edits each one's
// config further.
func newSimCluster(t *testing.T, seed uint64, n int, tweak func(*server.Config)) *simCluster {
	t.Helper()
	return &simCluster{servertest.StartCluster(t, seed, n, func(c *server.Config) {
		c.Quorum.Controller.MaxReplicationFactor = 3
		if tweak != nil {
			tweak(c)
		}
	}), t}
}

// do sends req to node and fails the test on a transport error.
func (x *simCluster) do(node int, req kmsg.Request) kmsg.Response {
	x.t.Helper()
	resp, err := x.Do(node, req)
	require.NoError(x.t, err)
	return resp
}

// batch builds one batch of values (nil keys) stamped with the client's
// clock.
func (x *simCluster) batch(opts []record.BuilderOption, values ...string) []byte {
	x.t.Helper()
	b := record.NewBuilder(opts...)
	for _, v := range values {
		b.Append(x.ClientEnv().Now().UnixMilli(), nil, []byte(v))
	}
	out, err := b.AppendTo(nil)
	require.NoError(x.t, err)
	return out
}

// produceTo sends values as one batch to partition 0 of topic at node and
// returns the partition's answer.
func (x *simCluster) produceTo(node int, topic string, values ...string) kmsg.ProduceResponseTopicPartition {
	x.t.Helper()
	return x.do(node, servertest.ProduceRequest(topic, 0, x.batch(nil, values...))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// fetchAll reads partition 0 of topic at node from the start to its end.
func (x *simCluster) fetchAll(node int, topic string) []string {
	x.t.Helper()
	var values []string
	for off := int64(0); ; {
		p := x.do(node, fetchRequest(11, 0, topic, 0, off)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		require.Zero(x.t, p.ErrorCode, "fetch: %v", kerr.ErrorForCode(p.ErrorCode))
		sp := record.NewSplitter(p.RecordBatches, len(p.RecordBatches)+1, record.CheckStored)
		n := 0
		for sp.Next() {
			rd := record.NewRecordReader(record.NewDecompressor(1 << 20))
			require.NoError(x.t, rd.Reset(sp.Batch()))
			for rd.Next() {
				if rd.Record().Offset >= off {
					values = append(values, string(rd.Record().Value))
					off = rd.Record().Offset + 1
					n++
				}
			}
		}
		require.NoError(x.t, sp.Err())
		if n == 0 {
			return values
		}
	}
}

// replicatedTopic creates topic, one partition of three replicas and
// min.insync.replicas=2, and returns its leader.
func (x *simCluster) replicatedTopic(topic string) int {
	x.t.Helper()
	x.CreateTopic(1, topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	return x.LeaderOf(topic, 0)
}

// partitionNotLedBy is the first of topic's partitions whose leader is
// not node, and its leader.
func (x *simCluster) partitionNotLedBy(node int, topic string, partitions int32) (int32, int) {
	x.t.Helper()
	for p := range partitions {
		if l := x.LeaderOf(topic, p); l != node {
			return p, l
		}
	}
	require.FailNow(x.t, "every partition led by node", "%d", node)
	return -1, 0
}
