package node_test

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/node"
)

// e2eTimeout bounds each client call and the node's shutdown.
const e2eTimeout = 15 * time.Second

// startNode runs a node on 127.0.0.1:0 with its data in a temp dir and
// shuts it down cleanly at the end of the test.
func startNode(t *testing.T, dataDir string, nodeID int32) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.NodeID = nodeID
	cfg.Listener = "127.0.0.1:0"
	cfg.ControllerListener = "127.0.0.1:0"
	cfg.MetricsListener = "127.0.0.1:0"
	cfg.LogDir = dataDir
	n, err := node.Start(cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { shutdown(t, n) })
	return n
}

func shutdown(t *testing.T, n *node.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	require.NoError(t, n.Shutdown(ctx))
}

// testWriter sends the node's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

func newAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(5*time.Second), kgo.RequestRetries(2))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// checkMetadata asks the node for metadata with a fresh client.
func checkMetadata(t *testing.T, n *node.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	waitActive(t, n)
	md, err := newAdmin(t, n.Addr()).Metadata(ctx)
	require.NoError(t, err)
	require.Equal(t, n.ClusterID(), md.Cluster)
	require.Equal(t, n.NodeID(), md.Controller)
	require.Len(t, md.Brokers, 1)
	host, port, err := net.SplitHostPort(n.Addr())
	require.NoError(t, err)
	require.Equal(t, n.NodeID(), md.Brokers[0].NodeID)
	require.Equal(t, host, md.Brokers[0].Host)
	require.Equal(t, port, strconv.Itoa(int(md.Brokers[0].Port)))
	require.Nil(t, md.Brokers[0].Rack)
	require.Empty(t, md.Topics)
}

// waitActive waits until the node's controller is active and its broker
// registered and unfenced.
func waitActive(t *testing.T, n *node.Node) {
	t.Helper()
	require.Eventually(t, n.ActiveController, e2eTimeout, 10*time.Millisecond, "controller never became active")
}

func TestE2ECreateAndDeleteTopics(t *testing.T) {
	n := startNode(t, t.TempDir(), 1)
	waitActive(t, n)
	adm := newAdmin(t, n.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()

	created, err := adm.CreateTopics(ctx, 3, 1, nil, "t1")
	require.NoError(t, err)
	ct, err := created.On("t1", nil)
	require.NoError(t, err)
	require.NoError(t, ct.Err)
	require.NotEqual(t, kadm.TopicID{}, ct.ID)

	// The partitions answer LEADER_NOT_AVAILABLE until their logs are
	// open, a few milliseconds after the creation.
	var md kadm.Metadata
	require.Eventually(t, func() bool {
		md, err = adm.Metadata(ctx)
		if err != nil || md.Topics["t1"].Err != nil {
			return false
		}
		for _, p := range md.Topics["t1"].Partitions {
			if p.Err != nil {
				return false
			}
		}
		return true
	}, e2eTimeout, 10*time.Millisecond)
	require.Equal(t, n.NodeID(), md.Controller)
	td, ok := md.Topics["t1"]
	require.True(t, ok, "t1 listed")
	require.NoError(t, td.Err)
	require.Equal(t, ct.ID, td.ID)
	require.Len(t, td.Partitions, 3)
	for p := int32(0); p < 3; p++ {
		pd, ok := td.Partitions[p]
		require.True(t, ok, "partition %d", p)
		require.NoError(t, pd.Err)
		require.Equal(t, n.NodeID(), pd.Leader)
		require.Equal(t, []int32{n.NodeID()}, pd.Replicas)
		require.Equal(t, []int32{n.NodeID()}, pd.ISR)
		require.GreaterOrEqual(t, pd.LeaderEpoch, int32(0))
	}

	again, err := adm.CreateTopics(ctx, 3, 1, nil, "t1")
	require.NoError(t, err)
	at, err := again.On("t1", nil)
	require.NoError(t, err)
	require.ErrorIs(t, at.Err, kerr.TopicAlreadyExists)

	deleted, err := adm.DeleteTopics(ctx, "t1")
	require.NoError(t, err)
	dt, err := deleted.On("t1", nil)
	require.NoError(t, err)
	require.NoError(t, dt.Err)

	// A fresh client: kgo caches metadata for MetadataMinAge (5 s).
	md, err = newAdmin(t, n.Addr()).Metadata(ctx)
	require.NoError(t, err)
	_, ok = md.Topics["t1"]
	require.False(t, ok, "t1 deleted")
}

func TestE2EFranzGoMetadataAndApiVersions(t *testing.T) {
	n := startNode(t, t.TempDir(), 1)
	require.Len(t, n.ClusterID(), 22)
	checkMetadata(t, n)

	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	versions, err := newAdmin(t, n.Addr()).ApiVersions(ctx)
	require.NoError(t, err)
	v, ok := versions[n.NodeID()]
	require.True(t, ok)
	require.NoError(t, v.Err)
	var got []protocol.API
	v.EachKeySorted(func(key, minV, maxV int16) {
		got = append(got, protocol.API{Key: key, MinVersion: minV, MaxVersion: maxV})
	})
	require.Equal(t, broker.APIs().Listed(), got, "ApiVersions is the protocol table")

	// An unknown topic is reported as such (no auto-creation yet).
	md, err := newAdmin(t, n.Addr()).Metadata(ctx, "orders")
	require.NoError(t, err)
	require.ErrorIs(t, md.Topics["orders"].Err, kerr.UnknownTopicOrPartition)
}

// rawConn opens a plain TCP connection to the node.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	return node.DialRawWithin(t, addr, e2eTimeout)
}

// requireClosedByNode reads until the node closes the connection, failing
// if it answers anything or the deadline passes first.
func requireClosedByNode(t *testing.T, c net.Conn) {
	t.Helper()
	buf := make([]byte, 1)
	n, err := c.Read(buf)
	require.Zero(t, n, "the node answered instead of closing")
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "connection not closed: %v", err)
	require.Error(t, err)
}

func TestE2EBadInputClosesOnlyThatConnection(t *testing.T) {
	n := startNode(t, t.TempDir(), 2)
	checkMetadata(t, n)

	garbage := make([]byte, 64)
	_, _ = crand.Read(garbage)
	garbage[0], garbage[1] = 0x7f, 0x00 // an api key no Kafka has (32512)
	unknownKey := binary.BigEndian.AppendUint16(nil, 9999)
	unknownKey = binary.BigEndian.AppendUint16(unknownKey, 0)
	unknownKey = binary.BigEndian.AppendUint32(unknownKey, 1)
	unknownKey = binary.BigEndian.AppendUint16(unknownKey, 0xffff) // null client id

	// A valid Metadata v4 header whose body claims 2^31-1 topics.
	badBody := binary.BigEndian.AppendUint16(nil, uint16(kmsg.Metadata))
	badBody = binary.BigEndian.AppendUint16(badBody, 4)
	badBody = binary.BigEndian.AppendUint32(badBody, 2)
	badBody = binary.BigEndian.AppendUint16(badBody, 0xffff) // null client id
	badBody = append(badBody, 0x7f, 0xff, 0xff, 0xff, 0, 1)

	cases := []struct {
		name  string
		bytes []byte
	}{
		{"random bytes", append(binary.BigEndian.AppendUint32(nil, uint32(len(garbage))), garbage...)},
		{"malformed Metadata body", append(binary.BigEndian.AppendUint32(nil, uint32(len(badBody))), badBody...)},
		{"oversized frame (200 MiB prefix)", binary.BigEndian.AppendUint32(nil, 200<<20)},
		{"unknown API key 9999", append(binary.BigEndian.AppendUint32(nil, uint32(len(unknownKey))), unknownKey...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := rawConn(t, n.Addr())
			_, err := c.Write(tc.bytes)
			require.NoError(t, err)
			requireClosedByNode(t, c)
			checkMetadata(t, n) // the node still serves new clients
		})
	}
}

func TestE2EApiVersionsFromTheFuture(t *testing.T) {
	n := startNode(t, t.TempDir(), 3)
	c := rawConn(t, n.Addr())
	req := binary.BigEndian.AppendUint16(nil, uint16(kmsg.ApiVersions))
	req = binary.BigEndian.AppendUint16(req, 127)
	req = binary.BigEndian.AppendUint32(req, 77)
	req = append(req, 0xca, 0xfe) // a body in a format we cannot know
	_, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(req))), req...))
	require.NoError(t, err)

	var size [4]byte
	_, err = io.ReadFull(c, size[:])
	require.NoError(t, err)
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(c, frame)
	require.NoError(t, err)
	require.Equal(t, uint32(77), binary.BigEndian.Uint32(frame), "correlation id")
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0 // header v0, body v0
	require.NoError(t, resp.ReadFrom(frame[4:]))
	require.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)
	var apiVersionsMax int16 = -1
	for _, k := range resp.ApiKeys {
		if k.ApiKey == kmsg.ApiVersions.Int16() {
			apiVersionsMax = k.MaxVersion
		}
	}
	require.Equal(t, int16(4), apiVersionsMax, "the client learns which version to retry with")
}

func TestE2ERestartKeepsClusterIDAndChecksNodeID(t *testing.T) {
	dir := t.TempDir()
	cfg := node.DefaultConfig()
	cfg.Listener = "127.0.0.1:0"
	cfg.ControllerListener = "127.0.0.1:0"
	cfg.MetricsListener = "127.0.0.1:0"
	cfg.LogDir = dir
	cfg.NodeID = 5
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))

	first, err := node.Start(cfg, log)
	require.NoError(t, err)
	clusterID := first.ClusterID()
	shutdown(t, first)
	shutdown(t, first) // idempotent

	second, err := node.Start(cfg, log)
	require.NoError(t, err)
	require.Equal(t, clusterID, second.ClusterID())
	checkMetadata(t, second)
	shutdown(t, second)

	cfg.NodeID = 6
	_, err = node.Start(cfg, log)
	require.ErrorIs(t, err, node.ErrMetaMismatch)
}

func TestE2EStartFailsCleanlyWhenPortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	cfg := node.DefaultConfig()
	cfg.Listener = taken.Addr().String()
	cfg.ControllerListener = "127.0.0.1:0"
	cfg.MetricsListener = "127.0.0.1:0"
	cfg.LogDir = t.TempDir()
	_, err = node.Start(cfg, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "address already in use")
}

func TestE2ERunStopsWhenContextEnds(t *testing.T) {
	cfg := node.DefaultConfig()
	cfg.Listener = "127.0.0.1:0"
	cfg.ControllerListener = "127.0.0.1:0"
	cfg.MetricsListener = "127.0.0.1:0"
	cfg.LogDir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx, cfg, slog.New(slog.DiscardHandler)) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(e2eTimeout):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestE2EStartRejectsRoleMistakes(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   []string
		want string
	}{
		{"broker-only voter", []string{"process.roles", "broker", "node.id", "1", "controller.quorum.voters", "1@127.0.0.1:19093"},
			"node.id 1 is a voter, so its process.roles must include controller"},
		{"broker-only without voters", []string{"process.roles", "broker", "node.id", "4"},
			"needs the controller quorum's voters"},
		{"controller-only not a voter", []string{"process.roles", "controller", "node.id", "4", "controller.quorum.voters", "1@127.0.0.1:19093"},
			"node.id 4 is not a voter"},
		{"combined without a controller listener", []string{"listeners", "PLAINTEXT://127.0.0.1:0"},
			"needs the controller listener CONTROLLER://host:port in listeners"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := node.DefaultConfig()
			cfg.LogDir = t.TempDir()
			for i := 0; i < len(tc.kv); i += 2 {
				_, err := cfg.Set(tc.kv[i], tc.kv[i+1])
				require.NoError(t, err)
			}
			_, err := node.Start(cfg, slog.New(slog.DiscardHandler))
			require.ErrorIs(t, err, node.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestE2ESplitRolesInProcess runs a controller-only node and a broker-only
// node: the controller has no client listener, the broker no controller
// listener, and the broker follows the metadata log as an observer.
func TestE2ESplitRolesInProcess(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctrlAddr := l.Addr().String()
	require.NoError(t, l.Close())
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	// One cluster id for both: the controller refuses the broker's
	// metadata fetches from another cluster (INCONSISTENT_CLUSTER_ID).
	clusterID, err := node.NewClusterID(crand.Reader)
	require.NoError(t, err)
	start := func(kv ...string) *node.Node {
		cfg := node.DefaultConfig()
		cfg.LogDir = t.TempDir()
		cfg.ClusterID = clusterID
		for i := 0; i < len(kv); i += 2 {
			_, err := cfg.Set(kv[i], kv[i+1])
			require.NoError(t, err)
		}
		cfg.MetricsListener = "127.0.0.1:0"
		n, err := node.Start(cfg, log)
		require.NoError(t, err)
		t.Cleanup(func() { shutdown(t, n) })
		return n
	}
	voters := "1@" + ctrlAddr
	ctrl := start("process.roles", "controller", "node.id", "1", "listeners", "CONTROLLER://"+ctrlAddr, "controller.quorum.voters", voters)
	brk := start("process.roles", "broker", "node.id", "2", "listeners", "PLAINTEXT://127.0.0.1:0", "controller.quorum.voters", voters)
	require.Empty(t, ctrl.Addr())
	require.Equal(t, ctrlAddr, ctrl.ControllerAddr())
	require.Equal(t, []string{"controller"}, ctrl.Roles())
	require.Empty(t, brk.ControllerAddr())
	require.NotEmpty(t, brk.Addr())
	require.Equal(t, []string{"broker"}, brk.Roles())

	require.Eventually(t, ctrl.ActiveController, e2eTimeout, 10*time.Millisecond, "the controller-only node leads")
	require.False(t, ctrl.Registered(), "a controller-only node has no broker to register")
	require.Eventually(t, func() bool { return brk.QuorumLeader() == 1 }, e2eTimeout, 10*time.Millisecond,
		"the broker-only node learns the leader by fetching from the voter")
	require.False(t, brk.ActiveController())
}
