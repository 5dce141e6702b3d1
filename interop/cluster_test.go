package interop

import (
	"bufio"
	crand "crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/node"
)

// Bounds of the multi-process cluster test.
const (
	// clusterReadyTimeout bounds the start of every process, the first
	// election and every broker's registration.
	clusterReadyTimeout = 30 * time.Second
	// rejoinTimeout bounds a SIGKILLed node's return: its new
	// incarnation registers only once the old one's session (9 s) has
	// expired, and then leads its partitions again.
	rejoinTimeout = 45 * time.Second
)

// procNode is one Strata node run as a child process of the test binary
// (see TestMain), so that SIGKILL is a real crash.
type procNode struct {
	id         int32
	brokerAddr string
	ctrlAddr   string
	props      string // its server.properties
	clusterID  string

	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	logs   []string
}

// start runs the node's process and returns once it logged its start.
func (p *procNode) start(t *testing.T) {
	t.Helper()
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), envChildConfig+"="+p.props, envChildClusterID+"="+p.clusterID)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	exited := make(chan struct{})
	p.exited = exited
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.logs = append(p.logs, sc.Text())
			p.mu.Unlock()
		}
		_ = p.cmd.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(clusterReadyTimeout)
	for !p.logged(`msg="node started"`) {
		select {
		case <-exited:
			require.FailNow(t, "node exited during start", "node %d (%v):\n%s", p.id, p.cmd.ProcessState, p.logText())
		default:
		}
		require.True(t, time.Now().Before(deadline), "node %d did not start within %v:\n%s", p.id, clusterReadyTimeout, p.logText())
		time.Sleep(pollInterval)
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (p *procNode) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

func (p *procNode) logged(substr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.logs, func(l string) bool { return strings.Contains(l, substr) })
}

func (p *procNode) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs, "\n")
}

// freeAddr is a free 127.0.0.1 port (free when asked; the node binds it
// a moment later).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// startProcessCluster starts n combined broker+controller nodes as child
// processes, as the README's three-node recipe does: one cluster id,
// every node a voter of controller.quorum.voters, its own ports and data
// directory, and extraProps added to each server.properties. Every
// process is SIGKILLed at the end of the test (and exits by itself if the
// test binary dies).
func startProcessCluster(t *testing.T, n int, extraProps ...string) []*procNode {
	t.Helper()
	clusterID, err := node.NewClusterID(crand.Reader)
	require.NoError(t, err)
	dir := t.TempDir()
	nodes := make([]*procNode, n)
	var voters []string
	for i := range nodes {
		nodes[i] = &procNode{id: int32(i + 1), brokerAddr: freeAddr(t), ctrlAddr: freeAddr(t), clusterID: clusterID}
		voters = append(voters, fmt.Sprintf("%d@%s", nodes[i].id, nodes[i].ctrlAddr))
	}
	for _, p := range nodes {
		props := []string{
			fmt.Sprintf("node.id=%d", p.id),
			"process.roles=broker,controller",
			fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s", p.brokerAddr, p.ctrlAddr),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"log.dirs=" + filepath.Join(dir, fmt.Sprintf("node-%d", p.id)),
			"metrics.listener=127.0.0.1:0",
		}
		props = append(props, extraProps...)
		p.props = filepath.Join(dir, fmt.Sprintf("node-%d.properties", p.id))
		require.NoError(t, os.WriteFile(p.props, []byte(strings.Join(props, "\n")+"\n"), 0o644))
	}
	for _, p := range nodes {
		p.start(t)
		t.Cleanup(func() {
			p.kill()
			if t.Failed() {
				t.Logf("node %d log:\n%s", p.id, p.logText())
			}
		})
	}
	return nodes
}

func brokerAddrs(nodes []*procNode) []string {
	var addrs []string
	for _, p := range nodes {
		addrs = append(addrs, p.brokerAddr)
	}
	return addrs
}

// describeQuorumLeader asks a broker (which forwards it) for the metadata
// quorum's leader.
func describeQuorumLeader(t *testing.T, addr string) (int32, error) {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(time.Second), kgo.RequestRetries(0))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	resp, err := req.RequestWith(ctxFor(t, 2*time.Second), cl)
	if err != nil {
		return -1, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("DescribeQuorum answered %d topics", len(resp.Topics))
	}
	part := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
		return -1, err
	}
	return part.LeaderID, nil
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
	nodes := startProcessCluster(t, 3)
	byID := map[int32]*procNode{}
	for _, p := range nodes {
		byID[p.id] = p
	}
	adm := newAdmin(t, brokerAddrs(nodes)...)
	require.Eventually(t, func() bool {
		for _, p := range nodes {
			md, err := newAdmin(t, p.brokerAddr).BrokerMetadata(ctxFor(t, 2*time.Second))
			if err != nil || len(md.Brokers) != 3 {
				return false
			}
		}
		return true
	}, clusterReadyTimeout, 50*time.Millisecond, "not every broker's Metadata lists the three brokers")

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
		require.NotEmpty(t, led[p.id], "broker %d leads none of %v", p.id, leaders)
	}

	// kgo, seeded with one broker, routes every partition's batches to
	// its leader.
	hook := &produceHook{brokers: map[int32]bool{}}
	rs := genRecords(700, 120, genOpts{partitions: partitions, nulls: true, timestamps: true})
	produceKgo(t, []string{nodes[0].brokerAddr}, topic, rs, kgo.WithHooks(hook), kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	require.Equal(t, map[int32]bool{1: true, 2: true, 3: true}, hook.brokers, "Produce requests went to every leader")
	got := consumeKgo(t, []string{nodes[1].brokerAddr}, topic, atStart(partitions), len(rs))
	requireSameRecords(t, rs, got, zeros(partitions), checkOpts{nullsDistinct: true, offsetsKnown: true})

	// A broker that does not lead a partition says so, and names the
	// leader (KIP-951).
	var notLed int32 = -1
	for p, l := range leaders {
		if l != nodes[0].id {
			notLed = p
			break
		}
	}
	direct := newClient(t, []string{nodes[0].brokerAddr})
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
		quorumLeader, err = describeQuorumLeader(t, nodes[0].brokerAddr)
		return err == nil && quorumLeader > 0
	}, clusterReadyTimeout, 50*time.Millisecond, "no quorum leader")
	victim := byID[quorumLeader]
	victim.kill()
	t.Logf("killed node %d (the metadata quorum's leader), which led partitions %v", victim.id, led[victim.id])

	var survivors []*procNode
	var survivingParts []int32
	for _, p := range nodes {
		if p != victim {
			survivors = append(survivors, p)
			survivingParts = append(survivingParts, led[p.id]...)
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
	produceKgo(t, brokerAddrs(survivors), topic, more)
	wantSurvivors := append(keep(rs), more...)
	offsets := map[int32]kgo.Offset{}
	for _, p := range survivingParts {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	got = consumeKgo(t, brokerAddrs(survivors), topic, offsets, len(wantSurvivors))
	requireSameRecords(t, wantSurvivors, got, zeros(partitions), checkOpts{nullsDistinct: true, offsetsKnown: true})

	// The killed node comes back and leads its partitions again, with
	// every record it acknowledged (acks=all: fsynced before the ack).
	// The survivors' Metadata (the controller's view, not the restarted
	// node's replay of its own log) must show it leading them in a new
	// leader epoch: fenced after its session expired, then re-elected.
	victim.start(t)
	require.Eventually(t, func() bool {
		md, err := newAdmin(t, brokerAddrs(survivors)...).Metadata(ctxFor(t, 2*time.Second), topic)
		if err != nil {
			return false
		}
		for _, p := range led[victim.id] {
			pd := md.Topics[topic].Partitions[p]
			if pd.Leader != victim.id || pd.LeaderEpoch <= td.Partitions[p].LeaderEpoch {
				return false
			}
		}
		return true
	}, rejoinTimeout, 100*time.Millisecond, "node %d never led its partitions %v again", victim.id, led[victim.id])
	offsets = map[int32]kgo.Offset{}
	var wantVictim []rec
	for _, p := range led[victim.id] {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	for _, r := range rs {
		if leaders[r.Partition] == victim.id {
			wantVictim = append(wantVictim, r)
		}
	}
	got = consumeKgo(t, []string{victim.brokerAddr}, topic, offsets, len(wantVictim))
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
