package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Bounds of DescribeQuorum as the commands ask it.
const (
	// quorumRetryBackoff is the wait between rounds when no address
	// answered as (or led to) the leader.
	quorumRetryBackoff = 100 * time.Millisecond
	// quorumDialTimeout bounds one connection attempt.
	quorumDialTimeout = 3 * time.Second
	// describeQuorumControllerVersion is the DescribeQuorum version sent
	// to a controller listener: v2, the newest kmsg knows, which every
	// Strata controller listener serves (its ApiVersions says so; a
	// one-request tool need not ask).
	describeQuorumControllerVersion = 2
	// metadataTopic and metadataPartition name the quorum's log.
	metadataTopic     = "__cluster_metadata"
	metadataPartition = 0
)

func SplitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// QuorumTarget is where to ask: brokers (--bootstrap-server) or controller
// listeners (--bootstrap-controller).
type QuorumTarget struct {
	Addrs       []string
	Controllers bool
	// Security are the client's TLS and SASL options (--command-config).
	Security []kgo.Opt
}

// QuorumDescription is a leader's DescribeQuorum answer.
type QuorumDescription struct {
	// ClusterID is empty when it could not be learned (a controller
	// listener does not answer Metadata or DescribeCluster).
	ClusterID string
	// From is the address that answered.
	From string
	kmsg.DescribeQuorumResponseTopicPartition
}

// DescribeQuorum asks the addresses in turn until one answers as the
// leader (directly, or a broker forwarding to it), following a follower's
// NOT_LEADER_OR_FOLLOWER to the leader when the response names its
// address, and retrying while no leader is known, until ctx ends.
func DescribeQuorum(ctx context.Context, t QuorumTarget) (*QuorumDescription, error) {
	pending := slices.Clone(t.Addrs)
	tried := map[string]error{} // address -> what it said last
	var order []string
	note := func(addr string, err error) {
		if _, seen := tried[addr]; !seen {
			order = append(order, addr)
		}
		tried[addr] = err
	}
	report := func(why string) error {
		var b strings.Builder
		b.WriteString(why)
		var nl *notLeaderError
		for _, addr := range order {
			fmt.Fprintf(&b, "\n  %s: %s", addr, tried[addr])
			if e := (*notLeaderError)(nil); errors.As(tried[addr], &e) {
				nl = e
			}
		}
		if nl != nil && nl.leader >= 0 {
			fmt.Fprintf(&b, "\nThe answer does not carry node %d's address: pass its controller listener (or every voter's) to --bootstrap-controller.", nl.leader)
		}
		return errors.New(b.String())
	}
	for {
		for len(pending) > 0 {
			addr := pending[0]
			pending = pending[1:]
			d, leaderAddr, err := DescribeQuorumAt(ctx, t.Controllers, addr, t.Security...)
			if err == nil {
				return d, nil
			}
			note(addr, err)
			if leaderAddr != "" && !slices.Contains(pending, leaderAddr) {
				pending = append([]string{leaderAddr}, pending...)
			}
			if ctx.Err() != nil {
				break
			}
		}
		// Retry what may change (no connection yet, no leader yet, a
		// follower naming a leader we cannot reach); give up at once
		// when every address gave a final answer.
		pending = pending[:0]
		for _, addr := range t.Addrs {
			if !errors.Is(tried[addr], errPermanent) {
				pending = append(pending, addr)
			}
		}
		if len(pending) == 0 {
			return nil, report("no address can answer:")
		}
		select {
		case <-ctx.Done():
			return nil, report("no answer from the leader before the timeout:")
		case <-time.After(quorumRetryBackoff):
		}
	}
}

// errPermanent marks an answer that retrying the same address will not
// change.
var errPermanent = errors.New("permanent")

type permanentError struct{ msg string }

func (e permanentError) Error() string        { return e.msg }
func (e permanentError) Is(target error) bool { return target == errPermanent }

// notLeaderError is a NOT_LEADER_OR_FOLLOWER answer.
type notLeaderError struct {
	leader int32
	epoch  int32
}

func (e *notLeaderError) Error() string {
	if e.leader < 0 {
		return fmt.Sprintf("not the leader, and knows of no leader (epoch %d): an election may be in progress", e.epoch)
	}
	return fmt.Sprintf("not the leader; the leader is node %d (epoch %d)", e.leader, e.epoch)
}

// DescribeQuorumAt asks one address. On NOT_LEADER_OR_FOLLOWER it returns
// the leader's address when the response carries it (DescribeQuorum v2's
// nodes). security are the client's TLS and SASL options.
func DescribeQuorumAt(ctx context.Context, controller bool, addr string, security ...kgo.Opt) (*QuorumDescription, string, error) {
	cl, b, err := NewQuorumClient(addr, controller, security...)
	if err != nil {
		return nil, "", err
	}
	defer cl.Close()
	return DescribeQuorumWith(ctx, b, controller, addr)
}

// NewQuorumClient returns a client for one address and that address's
// broker handle; requests through the handle go to it alone. extra
// options (TLS, SASL) come after the others.
func NewQuorumClient(addr string, controller bool, extra ...kgo.Opt) (*kgo.Client, *kgo.Broker, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTimeout(quorumDialTimeout), kgo.ClientID("strata-quorum")}
	if controller {
		// A controller listener speaks only the quorum's APIs: skip
		// ApiVersions (absent from the pinned versions) and send
		// DescribeQuorum at the pinned version.
		vs := new(kversion.Versions)
		vs.SetMaxKeyVersion(kmsg.DescribeQuorum.Int16(), describeQuorumControllerVersion)
		opts = append(opts, kgo.MaxVersions(vs))
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, nil, err
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		cl.Close()
		return nil, nil, fmt.Errorf("no usable address in %q", addr)
	}
	return cl, seeds[0], nil
}

// DescribeQuorumWith is DescribeQuorumAt through an existing client.
func DescribeQuorumWith(ctx context.Context, b *kgo.Broker, controller bool, addr string) (*QuorumDescription, string, error) {
	var clusterID string
	if !controller {
		// As kafka-metadata-quorum does with --bootstrap-server: the
		// broker must offer DescribeQuorum (it forwards it to the
		// controller), and the cluster id comes from the broker.
		vreq := kmsg.NewPtrApiVersionsRequest()
		// KIP-511: v3+ needs a well-formed software name and version.
		vreq.ClientSoftwareName, vreq.ClientSoftwareVersion = "strata", "1"
		vresp, err := vreq.RequestWith(ctx, b)
		if err != nil {
			return nil, "", fmt.Errorf("no answer: %w", err)
		}
		if vresp.ErrorCode != 0 {
			return nil, "", fmt.Errorf("ApiVersions failed: %w", kerr.ErrorForCode(vresp.ErrorCode))
		}
		if !slices.ContainsFunc(vresp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool {
			return k.ApiKey == kmsg.DescribeQuorum.Int16()
		}) {
			return nil, "", permanentError{"this broker does not offer DescribeQuorum (it cannot forward it to the controller); ask a controller with --bootstrap-controller"}
		}
		mreq := kmsg.NewPtrMetadataRequest()
		mreq.Topics = []kmsg.MetadataRequestTopic{}
		mresp, err := mreq.RequestWith(ctx, b)
		if err != nil {
			return nil, "", fmt.Errorf("metadata: %w", err)
		}
		if mresp.ClusterID != nil {
			clusterID = *mresp.ClusterID
		}
	}

	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = metadataTopic
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rp.Partition = metadataPartition
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{rp}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	resp, err := req.RequestWith(ctx, b)
	if err != nil {
		return nil, "", fmt.Errorf("no answer: %w", err)
	}
	if resp.ErrorCode != 0 {
		msg := kerr.ErrorForCode(resp.ErrorCode).Error()
		if resp.ErrorMessage != nil {
			msg += ": " + *resp.ErrorMessage
		}
		return nil, "", fmt.Errorf("DescribeQuorum failed: %s", msg)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, "", fmt.Errorf("DescribeQuorum answered %d topics, want the metadata partition alone", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	switch {
	case p.ErrorCode == kerr.NotLeaderForPartition.Code:
		return nil, nodeAddr(resp.Nodes, p.LeaderID), &notLeaderError{leader: p.LeaderID, epoch: p.LeaderEpoch}
	case p.ErrorCode != 0:
		msg := kerr.ErrorForCode(p.ErrorCode).Error()
		if p.ErrorMessage != nil {
			msg += ": " + *p.ErrorMessage
		}
		return nil, "", fmt.Errorf("DescribeQuorum failed: %s", msg)
	}
	return &QuorumDescription{ClusterID: clusterID, From: addr, DescribeQuorumResponseTopicPartition: p}, "", nil
}

// nodeAddr is the first listener of node id in a DescribeQuorum v2
// response's nodes, or "".
func nodeAddr(nodes []kmsg.DescribeQuorumResponseNode, id int32) string {
	for _, n := range nodes {
		if n.NodeID == id && id >= 0 && len(n.Listeners) > 0 {
			return net.JoinHostPort(n.Listeners[0].Host, strconv.Itoa(int(n.Listeners[0].Port)))
		}
	}
	return ""
}

// leaderState is the leader's own line among the voters.
func (d *QuorumDescription) LeaderState() (kmsg.DescribeQuorumResponseTopicPartitionReplicaState, bool) {
	for _, v := range d.CurrentVoters {
		if v.ReplicaID == d.LeaderID {
			return v, true
		}
	}
	return kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}, false
}

// QuorumReplica is one replica of the quorum as describe --replication
// lists it.
type QuorumReplica struct {
	kmsg.DescribeQuorumResponseTopicPartitionReplicaState
	// Role is Leader, Follower or Observer.
	Role string
	// Lag is how far its log end trails the leader's, at least 0.
	Lag int64
}

// Replicas are the leader (as LeaderState gives it), then the other
// voters, then the observers, in the order of kafka-metadata-quorum.sh's
// describe --replication.
func (d *QuorumDescription) Replicas() []QuorumReplica {
	leader, _ := d.LeaderState()
	var out []QuorumReplica
	add := func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState, role string) {
		out = append(out, QuorumReplica{r, role, max(0, leader.LogEndOffset-r.LogEndOffset)})
	}
	add(leader, "Leader")
	for _, v := range d.CurrentVoters {
		if v.ReplicaID != d.LeaderID {
			add(v, "Follower")
		}
	}
	for _, o := range d.Observers {
		add(o, "Observer")
	}
	return out
}

// maxFollowerLag is Kafka's MaxFollowerLag and MaxFollowerLagTimeMs: the
// offsets and the milliseconds by which the voter with the smallest log end
// offset trails the leader.
func (d *QuorumDescription) MaxFollowerLag() (offsets, ms int64) {
	leader, ok := d.LeaderState()
	if !ok || len(d.CurrentVoters) == 0 {
		return -1, -1
	}
	laggard := leader
	for _, v := range d.CurrentVoters {
		if v.LogEndOffset < laggard.LogEndOffset {
			laggard = v
		}
	}
	if laggard.ReplicaID == leader.ReplicaID {
		return 0, 0
	}
	offsets = leader.LogEndOffset - laggard.LogEndOffset
	if leader.LastCaughtUpTimestamp < 0 || laggard.LastCaughtUpTimestamp < 0 {
		return offsets, -1
	}
	return offsets, leader.LastCaughtUpTimestamp - laggard.LastCaughtUpTimestamp
}

func ReplicaIDs(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = strconv.Itoa(int(r.ReplicaID))
	}
	return "[" + strings.Join(ids, ",") + "]"
}
