package main

import (
	"bytes"
	crand "crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/internal/cli"
	"github.com/strata-log/strata/internal/proccluster"
	"github.com/strata-log/strata/node"
)

// runQuorum runs `strata quorum` in process and returns its exit code,
// stdout and stderr.
func runQuorum(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := quorumCommand(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestQuorumStatusSingleNode(t *testing.T) {
	cfg := node.DefaultConfig()
	cfg.Listener, cfg.ControllerListener, cfg.LogDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	cfg.MetricsListener = "127.0.0.1:0"
	n := proccluster.StartInProcess(t, cfg)
	require.Eventually(t, n.ActiveController, proccluster.InProcessTimeout, 10*time.Millisecond)

	code, out, errOut := runQuorum("status", "--bootstrap-controller", n.ControllerAddr())
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, "1", proccluster.StatusField(t, out, "LeaderId"))
	require.Equal(t, "[1]", proccluster.StatusField(t, out, "CurrentVoters"))
	require.Equal(t, "[]", proccluster.StatusField(t, out, "CurrentObservers"))
	require.Equal(t, "0", proccluster.StatusField(t, out, "MaxFollowerLag"))
	require.Contains(t, proccluster.StatusField(t, out, "ClusterId"), "unknown")
	require.Regexp(t, `^[1-9]\d*$`, proccluster.StatusField(t, out, "LeaderEpoch"))
	require.Regexp(t, `^[1-9]\d*$`, proccluster.StatusField(t, out, "HighWatermark"))

	code, out, errOut = runQuorum("status", "--replication", "--bootstrap-controller", n.ControllerAddr())
	require.Equal(t, exitOK, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.Equal(t, []string{"NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"}, strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	require.Equal(t, "1", row[0])
	require.Equal(t, "0", row[2], "the leader has no lag")
	require.Equal(t, "Leader", row[5])

	code, out, _ = runQuorum("describe", "--status", "--bootstrap-controller", n.ControllerAddr())
	require.Equal(t, exitOK, code)
	require.Equal(t, "1", proccluster.StatusField(t, out, "LeaderId"))

	// Through the broker: it answers once core/broker forwards
	// DescribeQuorum to the controller; until then the command says why
	// it cannot, at once.
	start := time.Now()
	code, out, errOut = runQuorum("status", "--bootstrap-server", n.Addr())
	if code == exitOK {
		require.Equal(t, n.ClusterID(), proccluster.StatusField(t, out, "ClusterId"))
		require.Equal(t, "1", proccluster.StatusField(t, out, "LeaderId"))
	} else {
		require.Equal(t, exitError, code)
		require.Contains(t, errOut, "does not offer DescribeQuorum")
		require.Less(t, time.Since(start), 5*time.Second, "a final answer is not retried until the timeout")
		t.Logf("--bootstrap-server: %s (needs DescribeQuorum forwarding in core/broker)", strings.TrimSpace(errOut))
	}
}

func TestQuorumStatusUsageAndNoAnswer(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"nope"},
		{"status"},
		{"status", "--bootstrap-server", "127.0.0.1:1", "--bootstrap-controller", "127.0.0.1:2"},
		{"describe", "--bootstrap-controller", "127.0.0.1:2"},
		{"describe", "--status", "--replication", "--bootstrap-controller", "127.0.0.1:2"},
		{"status", "--bootstrap-controller", "no-port"},
		{"status", "--bootstrap-controller", "127.0.0.1:2", "extra"},
	} {
		code, _, _ := runQuorum(args...)
		require.Equal(t, exitUsage, code, "%q", args)
	}
	// Nothing listens: a clear error once the timeout passes, not a hang.
	addr := proccluster.FreePort(t)
	start := time.Now()
	code, _, errOut := runQuorum("status", "--timeout", "500ms", "--bootstrap-controller", addr)
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "no answer from the leader before the timeout")
	require.Contains(t, errOut, addr)
	// Refused at once, or (a loaded machine) the dial outlived the
	// 500 ms budget: either way the reason is named.
	require.Regexp(t, `connection refused|i/o timeout`, errOut)
	require.Less(t, time.Since(start), 5*time.Second)
}

// TestQuorumStatusFollowsLeader runs three voters and a broker-only
// observer in process: a follower alone names the leader it cannot give an
// address for; given every voter, the command finds the leader.
func TestQuorumStatusFollowsLeader(t *testing.T) {
	ctrl := []string{proccluster.FreePort(t), proccluster.FreePort(t), proccluster.FreePort(t)}
	voters := fmt.Sprintf("1@%s,2@%s,3@%s", ctrl[0], ctrl[1], ctrl[2])
	// One cluster id for every node: a voter refuses quorum requests from
	// another cluster (INCONSISTENT_CLUSTER_ID), as Kafka's do.
	clusterID, err := node.NewClusterID(crand.Reader)
	require.NoError(t, err)
	var nodes []*node.Node
	for i := range 3 {
		cfg := node.DefaultConfig()
		cfg.ClusterID = clusterID
		for _, kv := range [][2]string{
			{"node.id", fmt.Sprint(i + 1)},
			{"process.roles", "controller"},
			{"listeners", "CONTROLLER://" + ctrl[i]},
			{"controller.quorum.voters", voters},
			{"log.dirs", t.TempDir()},
		} {
			_, err := cfg.Set(kv[0], kv[1])
			require.NoError(t, err)
		}
		nodes = append(nodes, proccluster.StartInProcess(t, cfg))
		require.Empty(t, nodes[i].Addr(), "a controller-only node has no client listener")
	}
	obs := node.DefaultConfig()
	obs.ClusterID = clusterID
	for _, kv := range [][2]string{
		{"node.id", "4"}, {"process.roles", "broker"}, {"listeners", "PLAINTEXT://127.0.0.1:0"},
		{"controller.quorum.voters", voters}, {"log.dirs", t.TempDir()},
	} {
		_, err := obs.Set(kv[0], kv[1])
		require.NoError(t, err)
	}
	observer := proccluster.StartInProcess(t, obs)
	require.Empty(t, observer.ControllerAddr(), "a broker-only node has no controller listener")

	var leader *node.Node
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			if n.ActiveController() {
				leader = n
				return true
			}
		}
		return false
	}, proccluster.InProcessTimeout, 10*time.Millisecond, "no controller became active")
	require.Eventually(t, func() bool { return observer.QuorumLeader() == leader.NodeID() },
		proccluster.InProcessTimeout, 10*time.Millisecond, "the observer learns the leader from the voters")

	var follower *node.Node
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	code, _, errOut := runQuorum("status", "--timeout", "1s", "--bootstrap-controller", follower.ControllerAddr())
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, fmt.Sprintf("the leader is node %d", leader.NodeID()))
	require.Contains(t, errOut, "pass its controller listener")

	all := strings.Join(ctrl, ",")
	require.Eventually(t, func() bool {
		code, out, _ := runQuorum("status", "--bootstrap-controller", all)
		return code == exitOK && strings.Contains(out, "CurrentObservers:       [4]")
	}, proccluster.InProcessTimeout, 50*time.Millisecond, "the observer is listed once it fetches")
	code, out, errOut := runQuorum("status", "--bootstrap-controller", all)
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, fmt.Sprint(leader.NodeID()), proccluster.StatusField(t, out, "LeaderId"))
	require.Equal(t, "[1,2,3]", proccluster.StatusField(t, out, "CurrentVoters"))

	code, out, errOut = runQuorum("status", "--replication", "--bootstrap-controller", all)
	require.Equal(t, exitOK, code, errOut)
	var statuses []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(line)
		statuses = append(statuses, f[0]+":"+f[len(f)-1])
	}
	require.Len(t, statuses, 4, out)
	require.Equal(t, fmt.Sprintf("%d:Leader", leader.NodeID()), statuses[0])
	require.Equal(t, "4:Observer", statuses[3])
	require.ElementsMatch(t, []string{"Follower", "Follower"}, []string{
		strings.Split(statuses[1], ":")[1], strings.Split(statuses[2], ":")[1]})
}

func TestQuorumStatusFormat(t *testing.T) {
	rs := func(id int32, leo, fetch, caughtUp int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		r := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		r.ReplicaID, r.LogEndOffset, r.LastFetchTimestamp, r.LastCaughtUpTimestamp = id, leo, fetch, caughtUp
		return r
	}
	d := &cli.QuorumDescription{ClusterID: "abc"}
	d.LeaderID, d.LeaderEpoch, d.HighWatermark = 2, 7, 120
	d.CurrentVoters = append(d.CurrentVoters, rs(1, 100, 9_990, 9_000), rs(2, 130, 10_000, 10_000), rs(3, 130, 9_995, 9_995))
	d.Observers = append(d.Observers, rs(4, 90, 9_900, -1))
	var out bytes.Buffer
	printStatus(&out, d)
	require.Equal(t, `ClusterId:              abc
LeaderId:               2
LeaderEpoch:            7
HighWatermark:          120
MaxFollowerLag:         30
MaxFollowerLagTimeMs:   1000
CurrentVoters:          [1,2,3]
CurrentObservers:       [4]
`, out.String())

	out.Reset()
	printReplication(&out, d, time.UnixMilli(10_000), false)
	require.Equal(t, `NodeId    LogEndOffset    Lag    LastFetchTimestamp    LastCaughtUpTimestamp    Status
2         130             0      10000                 10000                    Leader
1         100             30     9990                  9000                     Follower
3         130             0      9995                  9995                     Follower
4         90              40     9900                  -1                       Observer
`, out.String())

	out.Reset()
	printReplication(&out, d, time.UnixMilli(10_000), true)
	require.Contains(t, out.String(), "10 ms ago")
	require.Contains(t, out.String(), "unknown")
}
