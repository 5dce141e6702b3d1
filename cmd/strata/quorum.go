package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/strata-log/strata/internal/cli"
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
	commandConfig := cli.CommandConfigFlag(fs)
	if code, ok := cli.Parse(fs, args); !ok {
		return code
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
	security, err := cli.LoadClientSecurity(*commandConfig)
	if err != nil {
		fmt.Fprintf(stderr, "strata quorum: %v\n", err)
		return exitUsage
	}
	target := cli.QuorumTarget{Controllers: *controllers != "", Security: security}
	target.Addrs = cli.SplitAddrs(*servers + *controllers)
	for _, a := range target.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			fmt.Fprintf(stderr, "strata quorum: bad address %q: %v\n", a, err)
			return exitUsage
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	d, err := cli.DescribeQuorum(ctx, target)
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

// printStatus prints Kafka's `describe --status` block.
func printStatus(w io.Writer, d *cli.QuorumDescription) {
	clusterID := d.ClusterID
	if clusterID == "" {
		clusterID = "unknown (a controller listener does not report it; ask a broker with --bootstrap-server)"
	}
	lag, lagMs := d.MaxFollowerLag()
	fmt.Fprintf(w, "ClusterId:              %s\n", clusterID)
	fmt.Fprintf(w, "LeaderId:               %d\n", d.LeaderID)
	fmt.Fprintf(w, "LeaderEpoch:            %d\n", d.LeaderEpoch)
	fmt.Fprintf(w, "HighWatermark:          %d\n", d.HighWatermark)
	fmt.Fprintf(w, "MaxFollowerLag:         %d\n", lag)
	fmt.Fprintf(w, "MaxFollowerLagTimeMs:   %d\n", lagMs)
	fmt.Fprintf(w, "CurrentVoters:          %s\n", cli.ReplicaIDs(d.CurrentVoters))
	fmt.Fprintf(w, "CurrentObservers:       %s\n", cli.ReplicaIDs(d.Observers))
}

// printReplication prints Kafka's `describe --replication` table: the
// leader, then the other voters, then the observers. human prints the
// timestamps as "N ms ago" relative to now.
func printReplication(w io.Writer, d *cli.QuorumDescription, now time.Time, human bool) {
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
	for _, r := range d.Replicas() {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\n", r.ReplicaID, r.LogEndOffset, r.Lag,
			stamp(r.LastFetchTimestamp), stamp(r.LastCaughtUpTimestamp), r.Role)
	}
	_ = tw.Flush()
}
