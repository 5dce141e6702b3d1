package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func init() {
	register("quorum", "describe the metadata quorum, like kafka-metadata-quorum.sh (status, replication)", func(args []string) int {
		return quorumCommand(args, os.Stdout, os.Stderr)
	})
}

// Defaults of `strata quorum`.
const (
	// defaultQuorumTimeout bounds the whole command: dialing, retrying
	// while no leader is known, following a NOT_LEADER_OR_FOLLOWER answer.
	defaultQuorumTimeout = 10 * time.Second
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

// quorumCommand is `strata quorum status [--replication]` and Kafka's
// spelling `strata quorum describe --status|--replication`.
func quorumCommand(args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprint(stderr, "Usage:\n\n"+
			"  strata quorum status [--replication] (--bootstrap-server host:port | --bootstrap-controller host:port)\n"+
			"  strata quorum describe (--status | --replication) (--bootstrap-server ... | --bootstrap-controller ...)\n"+
			"  strata quorum reset-state --dir <log.dirs>/__cluster_metadata-0 --epoch N [--force]\n\n"+
			"Describes the KRaft metadata quorum as its leader sees it, like kafka-metadata-quorum.sh.\n"+
			"reset-state rewrites a stopped member's unusable quorum-state (docs/operations.md).\n"+
			"Run 'strata quorum status -h' for the flags.\n")
	}
	if len(args) == 0 {
		usage()
		return exitUsage
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "status", "describe":
	case "reset-state":
		return resetStateCommand(args, stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage()
		return exitOK
	default:
		fmt.Fprintf(stderr, "strata quorum: unknown subcommand %q\n\n", sub)
		usage()
		return exitUsage
	}

	fs := flag.NewFlagSet("quorum "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	servers := fs.String("bootstrap-server", "", "a broker's client listener, `host:port[,host:port...]` (the broker forwards DescribeQuorum to the controller)")
	controllers := fs.String("bootstrap-controller", "", "controller listeners, `host:port[,host:port...]` (asked directly; a follower's answer leads to the leader)")
	replication := fs.Bool("replication", false, "print the per-replica table instead of the summary")
	status := fs.Bool("status", false, "print the summary (the default of 'status')")
	human := fs.Bool("human-readable", false, "print timestamps as how long ago, like Kafka's --human-readable")
	timeout := fs.Duration("timeout", defaultQuorumTimeout, "give up after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "strata quorum %s: unexpected arguments %q\n", sub, fs.Args())
		return exitUsage
	}
	if sub == "describe" && *status == *replication {
		fmt.Fprintln(stderr, "strata quorum describe: give exactly one of --status and --replication")
		return exitUsage
	}
	if (*servers == "") == (*controllers == "") {
		fmt.Fprintln(stderr, "strata quorum: give exactly one of --bootstrap-server (a broker) and --bootstrap-controller (a controller listener), e.g. --bootstrap-controller 127.0.0.1:9093")
		return exitUsage
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "strata quorum: --timeout must be positive")
		return exitUsage
	}
	target := quorumTarget{controllers: *controllers != ""}
	target.addrs = splitAddrs(*servers + *controllers)
	for _, a := range target.addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			fmt.Fprintf(stderr, "strata quorum: bad address %q: %v\n", a, err)
			return exitUsage
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	d, err := describeQuorum(ctx, target)
	if err != nil {
		fmt.Fprintf(stderr, "strata quorum: %v\n", err)
		return exitError
	}
	if *replication {
		printReplication(stdout, d, time.Now(), *human)
	} else {
		printStatus(stdout, d)
	}
	return exitOK
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// quorumTarget is where to ask: brokers (--bootstrap-server) or controller
// listeners (--bootstrap-controller).
type quorumTarget struct {
	addrs       []string
	controllers bool
}

// quorumDescription is a leader's DescribeQuorum answer.
type quorumDescription struct {
	// ClusterID is empty when it could not be learned (a controller
	// listener does not answer Metadata or DescribeCluster).
	ClusterID string
	// From is the address that answered.
	From string
	kmsg.DescribeQuorumResponseTopicPartition
}

// describeQuorum asks the addresses in turn until one answers as the
// leader (directly, or a broker forwarding to it), following a follower's
// NOT_LEADER_OR_FOLLOWER to the leader when the response names its
// address, and retrying while no leader is known, until ctx ends.
func describeQuorum(ctx context.Context, t quorumTarget) (*quorumDescription, error) {
	pending := slices.Clone(t.addrs)
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
			d, leaderAddr, err := describeQuorumAt(ctx, t.controllers, addr)
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
		for _, addr := range t.addrs {
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

// describeQuorumAt asks one address. On NOT_LEADER_OR_FOLLOWER it returns
// the leader's address when the response carries it (DescribeQuorum v2's
// nodes).
func describeQuorumAt(ctx context.Context, controller bool, addr string) (*quorumDescription, string, error) {
	cl, b, err := newQuorumClient(addr, controller)
	if err != nil {
		return nil, "", err
	}
	defer cl.Close()
	return describeQuorumWith(ctx, b, controller, addr)
}

// newQuorumClient returns a client for one address and that address's
// broker handle; requests through the handle go to it alone.
func newQuorumClient(addr string, controller bool) (*kgo.Client, *kgo.Broker, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTimeout(quorumDialTimeout), kgo.ClientID("strata-quorum")}
	if controller {
		// A controller listener speaks only the quorum's APIs: skip
		// ApiVersions (absent from the pinned versions) and send
		// DescribeQuorum at the pinned version.
		vs := new(kversion.Versions)
		vs.SetMaxKeyVersion(kmsg.DescribeQuorum.Int16(), describeQuorumControllerVersion)
		opts = append(opts, kgo.MaxVersions(vs))
	}
	cl, err := kgo.NewClient(opts...)
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

// describeQuorumWith is describeQuorumAt through an existing client.
func describeQuorumWith(ctx context.Context, b *kgo.Broker, controller bool, addr string) (*quorumDescription, string, error) {
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
	return &quorumDescription{ClusterID: clusterID, From: addr, DescribeQuorumResponseTopicPartition: p}, "", nil
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
func (d *quorumDescription) leaderState() (kmsg.DescribeQuorumResponseTopicPartitionReplicaState, bool) {
	for _, v := range d.CurrentVoters {
		if v.ReplicaID == d.LeaderID {
			return v, true
		}
	}
	return kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}, false
}

// maxFollowerLag is Kafka's MaxFollowerLag and MaxFollowerLagTimeMs: the
// offsets and the milliseconds by which the voter with the smallest log end
// offset trails the leader.
func (d *quorumDescription) maxFollowerLag() (offsets, ms int64) {
	leader, ok := d.leaderState()
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

func replicaIDs(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = strconv.Itoa(int(r.ReplicaID))
	}
	return "[" + strings.Join(ids, ",") + "]"
}

// printStatus prints Kafka's `describe --status` block.
func printStatus(w io.Writer, d *quorumDescription) {
	clusterID := d.ClusterID
	if clusterID == "" {
		clusterID = "unknown (a controller listener does not report it; ask a broker with --bootstrap-server)"
	}
	lag, lagMs := d.maxFollowerLag()
	fmt.Fprintf(w, "ClusterId:              %s\n", clusterID)
	fmt.Fprintf(w, "LeaderId:               %d\n", d.LeaderID)
	fmt.Fprintf(w, "LeaderEpoch:            %d\n", d.LeaderEpoch)
	fmt.Fprintf(w, "HighWatermark:          %d\n", d.HighWatermark)
	fmt.Fprintf(w, "MaxFollowerLag:         %d\n", lag)
	fmt.Fprintf(w, "MaxFollowerLagTimeMs:   %d\n", lagMs)
	fmt.Fprintf(w, "CurrentVoters:          %s\n", replicaIDs(d.CurrentVoters))
	fmt.Fprintf(w, "CurrentObservers:       %s\n", replicaIDs(d.Observers))
}

// printReplication prints Kafka's `describe --replication` table: the
// leader, then the other voters, then the observers. human prints the
// timestamps as "N ms ago" relative to now.
func printReplication(w io.Writer, d *quorumDescription, now time.Time, human bool) {
	leader, _ := d.leaderState()
	tw := tabwriter.NewWriter(w, 0, 8, 4, ' ', 0)
	fmt.Fprintln(tw, "NodeId\tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus")
	stamp := func(ms int64) string {
		switch {
		case !human:
			return strconv.FormatInt(ms, 10)
		case ms < 0:
			return "unknown"
		default:
			return strconv.FormatInt(max(0, now.UnixMilli()-ms), 10) + " ms ago"
		}
	}
	row := func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState, status string) {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\n", r.ReplicaID, r.LogEndOffset, max(0, leader.LogEndOffset-r.LogEndOffset),
			stamp(r.LastFetchTimestamp), stamp(r.LastCaughtUpTimestamp), status)
	}
	row(leader, "Leader")
	for _, v := range d.CurrentVoters {
		if v.ReplicaID != d.LeaderID {
			row(v, "Follower")
		}
	}
	for _, o := range d.Observers {
		row(o, "Observer")
	}
	_ = tw.Flush()
}
