package interop

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/internal/proccluster"
)

// Bounds of the multi-process cluster test.
const (
	// clusterReadyTimeout bounds the first election and every broker's
	// registration.
	clusterReadyTimeout = 30 * time.Second
	// rejoinTimeout bounds a SIGKILLed node's return: its new
	// incarnation registers only once the old one's session (9 s) has
	// expired, and then leads its partitions again.
	rejoinTimeout = 45 * time.Second
)

// startProcessCluster starts n combined broker+controller nodes as
// processes of the strata binary (internal/proccluster), as the README's
// recipe does, with extraProps added to each server.properties, and
// waits until every broker's Metadata lists all n brokers.
func startProcessCluster(t *testing.T, n int, extraProps ...string) *proccluster.Cluster {
	t.Helper()
	c := proccluster.StartCombined(t, n, extraProps...)
	require.Eventually(t, func() bool {
		for _, p := range c.Nodes {
			md, err := newAdmin(t, p.BrokerAddr).BrokerMetadata(ctxFor(t, 2*time.Second))
			if err != nil || len(md.Brokers) != n {
				return false
			}
		}
		return true
	}, clusterReadyTimeout, 50*time.Millisecond, "not every broker's Metadata lists the %d brokers", n)
	return c
}

// produceHook records which brokers a client sent Produce requests to.
type produceHook struct {
	mu      sync.Mutex
	brokers map[int32]bool
}

func (h *produceHook) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == kmsg.Produce.Int16() && err == nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.brokers[meta.NodeID] = true
	}
}

// TestThreeNodeCluster runs the README's three-node cluster as real
// processes. Partitions spread over the three brokers and kgo routes each
// produce and fetch to the partition's leader (a non-leader answers
// NOT_LEADER_OR_FOLLOWER naming the leader). After a SIGKILL of the node
// that leads the metadata quorum, the two others keep serving their
// partitions, for reads and writes; the killed node, restarted, leads its
// partitions again with every acknowledged record.
func TestThreeNodeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three node processes")
	}
	c := startProcessCluster(t, 3)
	nodes := c.Nodes
	adm := newAdmin(t, c.BrokerAddrs()...)

	const topic, partitions = "spread", 6
	createTopic(t, adm, topic, partitions, nil)
	td := waitLeaders(t, adm, topic, partitions)
	leaders := map[int32]int32{} // partition → leader
	led := map[int32][]int32{}   // broker → partitions
	for p, pd := range td.Partitions {
		require.Equal(t, []int32{pd.Leader}, pd.Replicas, "replication factor 1: the leader is the replica")
		leaders[p] = pd.Leader
		led[pd.Leader] = append(led[pd.Leader], p)
	}
	for _, p := range nodes {
		require.NotEmpty(t, led[p.ID], "broker %d leads none of %v", p.ID, leaders)
	}

	// kgo, seeded with one broker, routes every partition's batches to
	// its leader.
	hook := &produceHook{brokers: map[int32]bool{}}
	rs := genRecords(700, 120, genOpts{partitions: partitions, nulls: true, timestamps: true})
	produceKgo(t, []string{nodes[0].BrokerAddr}, topic, rs, kgo.WithHooks(hook), kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	require.Equal(t, map[int32]bool{1: true, 2: true, 3: true}, hook.brokers, "Produce requests went to every leader")
	got := consumeKgo(t, []string{nodes[1].BrokerAddr}, topic, atStart(partitions), len(rs))
	requireSameRecords(t, rs, got, zeros(partitions), checkOpts{nullsDistinct: true, offsetsKnown: true})

	// A broker that does not lead a partition says so, and names the
	// leader (KIP-951).
	var notLed int32 = -1
	for p, l := range leaders {
		if l != nodes[0].ID {
			notLed = p
			break
		}
	}
	direct := newClient(t, []string{nodes[0].BrokerAddr})
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, td.ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = notLed
	rp.Records = oneBatch(t)
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	presp, err := req.RequestWith(ctxFor(t, opTimeout), direct.SeedBrokers()[0])
	require.NoError(t, err)
	ppart := presp.Topics[0].Partitions[0]
	require.ErrorIs(t, kerr.ErrorForCode(ppart.ErrorCode), kerr.NotLeaderForPartition)
	if presp.Version >= 10 {
		require.Equal(t, leaders[notLed], ppart.CurrentLeader.LeaderID, "the current leader named in the answer")
	}

	// SIGKILL the node leading the metadata quorum (its controller is the
	// active one): the data path of the others does not need it.
	var quorumLeader int32
	require.Eventually(t, func() bool {
		var err error
		quorumLeader, _, err = proccluster.QuorumState(ctxFor(t, 2*time.Second), nodes[0].BrokerAddr)
		return err == nil && quorumLeader > 0
	}, clusterReadyTimeout, 50*time.Millisecond, "no quorum leader")
	victim := c.Node(quorumLeader)
	victim.Kill()
	t.Logf("killed node %d (the metadata quorum's leader), which led partitions %v", victim.ID, led[victim.ID])

	var survivingParts []int32
	for _, p := range nodes {
		if p != victim {
			survivingParts = append(survivingParts, led[p.ID]...)
		}
	}
	slices.Sort(survivingParts)
	// The survivors' partitions: everything written before the kill,
	// and new writes (with a new producer, seeded with the survivors).
	keep := func(rs []rec) []rec {
		var out []rec
		for _, r := range rs {
			if slices.Contains(survivingParts, r.Partition) {
				out = append(out, r)
			}
		}
		return out
	}
	more := keep(genRecords(701, 90, genOpts{partitions: partitions, nulls: true, timestamps: true}))
	produceKgo(t, c.BrokerAddrs(victim.ID), topic, more)
	wantSurvivors := append(keep(rs), more...)
	offsets := map[int32]kgo.Offset{}
	for _, p := range survivingParts {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	got = consumeKgo(t, c.BrokerAddrs(victim.ID), topic, offsets, len(wantSurvivors))
	requireSameRecords(t, wantSurvivors, got, zeros(partitions), checkOpts{nullsDistinct: true, offsetsKnown: true})

	// The killed node comes back and leads its partitions again, with
	// every record it acknowledged (acks=all: fsynced before the ack).
	// The survivors' Metadata (the controller's view, not the restarted
	// node's replay of its own log) must show it leading them in a new
	// leader epoch: fenced after its session expired, then re-elected.
	c.Restart(victim.ID)
	require.Eventually(t, func() bool {
		md, err := newAdmin(t, c.BrokerAddrs(victim.ID)...).Metadata(ctxFor(t, 2*time.Second), topic)
		if err != nil {
			return false
		}
		for _, p := range led[victim.ID] {
			pd := md.Topics[topic].Partitions[p]
			if pd.Leader != victim.ID || pd.LeaderEpoch <= td.Partitions[p].LeaderEpoch {
				return false
			}
		}
		return true
	}, rejoinTimeout, 100*time.Millisecond, "node %d never led its partitions %v again", victim.ID, led[victim.ID])
	offsets = map[int32]kgo.Offset{}
	var wantVictim []rec
	for _, p := range led[victim.ID] {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	for _, r := range rs {
		if leaders[r.Partition] == victim.ID {
			wantVictim = append(wantVictim, r)
		}
	}
	got = consumeKgo(t, []string{victim.BrokerAddr}, topic, offsets, len(wantVictim))
	requireSameRecords(t, wantVictim, got, zeros(partitions), checkOpts{nullsDistinct: true, offsetsKnown: true})
}

// oneBatch is a valid one-record RecordBatch (uncompressed, no producer
// id), built with Strata's own encoder: the request is for the broker's
// leadership check, not for a client's encoding.
func oneBatch(t *testing.T) []byte {
	t.Helper()
	b := record.NewBuilder()
	b.Append(time.Now().UnixMilli(), nil, []byte("not the leader"))
	raw, err := b.AppendTo(nil)
	require.NoError(t, err)
	return raw
}
