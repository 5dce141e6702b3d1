package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerStreams("group", "list, describe (with lag), delete consumer groups and reset their offsets, like kafka-consumer-groups.sh", withoutStdin(groupCommand))
}

// groupCommand is `strata group list|describe|delete|reset-offsets`.
var groupCommand = subcommands{
	name: "group",
	usage: "Usage:\n\n" +
		"  strata group list\n" +
		"  strata group describe GROUP [GROUP ...]\n" +
		"  strata group delete GROUP [GROUP ...]\n" +
		"  strata group reset-offsets GROUP --topic T (--to-earliest | --to-latest | --to-datetime TIME | --to-offset N) [--execute]\n\n" +
		"Administers consumer groups over the Kafka protocol, like kafka-consumer-groups.sh; every subcommand takes\n" +
		"--bootstrap-server (default " + cli.DefaultBootstrapServer + ") and --timeout. Run 'strata group describe -h' for a subcommand's flags.\n",
	subs: map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
		"list":          groupList,
		"describe":      groupDescribe,
		"delete":        groupDelete,
		"reset-offsets": groupResetOffsets,
	},
}.run

// groupList is `strata group list`: every group of every broker.
func groupList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("group list", "group list [flags]", "Lists the consumer groups (ListGroups on every broker).", stderr)
	if code, ok := af.ParseFlags(fs, args); !ok {
		return code
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		tw := cli.NewTable(stdout, "GROUP\tSTATE\tPROTOCOL-TYPE\tCOORDINATOR")
		for _, g := range listed.Sorted() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", g.Group, g.State, g.ProtocolType, g.Coordinator)
		}
		_ = tw.Flush()
		return exitOK
	})
}

// groupDescribe is `strata group describe`: the members and, per
// partition, the committed offset, the log end and the lag.
func groupDescribe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("group describe", "group describe GROUP [GROUP ...] [flags]",
		"Describes consumer groups: state, members and their partitions, and per partition the committed\n"+
			"offset, the log end offset and the lag (log end minus committed; the whole log when nothing is committed).", stderr)
	return runNames(ctx, af, fs, args, "name at least one group", (*kadm.Client).DescribeGroups,
		func(ctx context.Context, adm *kadm.Client, described kadm.DescribedGroups, name string) int {
			g, code, ok := answerFor(af, described, name, func(g kadm.DescribedGroup) error { return g.Err })
			if !ok {
				return code
			}
			// Kafka 4 describes a consumer-protocol (KIP-848) group as
			// Dead (or, as kfake, Empty): ConsumerGroupDescribe knows it.
			if cg, ok := describeConsumerGroup(ctx, adm, name); ok {
				return printConsumerGroup(ctx, adm, cg, stdout, stderr, af)
			}
			fetched, topics, err := fetchCommitted(ctx, adm, name)
			if err != nil {
				return af.Fail("%s: %s", name, cli.KafkaError(err, ""))
			}
			for _, t := range g.AssignedPartitions().Topics() {
				if !slices.Contains(topics, t) {
					topics = append(topics, t)
				}
			}
			var ends kadm.ListedOffsets
			if len(topics) > 0 {
				ends, err = adm.ListEndOffsets(ctx, topics...)
				if err != nil {
					return af.Fail("%s: %s", name, cli.KafkaError(err, ""))
				}
			}
			lag := kadm.CalculateGroupLagWithStartOffsets(g, fetched, nil, ends)
			fmt.Fprintf(stdout, "GROUP %s  state %s  protocol %s  coordinator %d  members %d\n", g.Group, g.State, g.Protocol, g.Coordinator.NodeID, len(g.Members))
			var rows []lagRow
			for _, l := range lag.Sorted() {
				r := lagRow{topic: l.Topic, partition: l.Partition, committed: l.Commit.At, end: l.End.Offset, lag: l.Lag}
				if m := l.Member; m != nil {
					r.assigned, r.member, r.client, r.host = true, m.MemberID, m.ClientID, m.ClientHost
				}
				rows = append(rows, r)
			}
			printLagTable(stdout, rows)
			return exitOK
		})
}

// fetchCommitted is group's committed offsets and their topics, in
// order.
func fetchCommitted(ctx context.Context, adm *kadm.Client, group string) (kadm.OffsetResponses, []string, error) {
	fetched, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		return nil, nil, err
	}
	var topics []string
	for _, o := range fetched.Sorted() {
		if !slices.Contains(topics, o.Topic) {
			topics = append(topics, o.Topic)
		}
	}
	return fetched, topics, nil
}

// lagRow is one partition of a group's lag table.
type lagRow struct {
	topic     string
	partition int32
	committed int64 // -1: nothing committed
	end, lag  int64
	// assigned says whether a member holds the partition; member,
	// client and host are then its id, client id and host.
	assigned             bool
	member, client, host string
}

// printLagTable prints rows as `strata group describe` does, "-" for
// what is missing.
func printLagTable(w io.Writer, rows []lagRow) {
	tw := cli.NewTable(w, "TOPIC\tPARTITION\tCOMMITTED\tLOG-END\tLAG\tMEMBER\tCLIENT-ID\tHOST")
	for _, r := range rows {
		committed := "-"
		if r.committed >= 0 {
			committed = strconv.FormatInt(r.committed, 10)
		}
		member, client, host := "-", "-", "-"
		if r.assigned {
			member, client, host = r.member, r.client, r.host
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\t%s\t%s\n", r.topic, r.partition, committed, r.end, r.lag, member, client, host)
	}
	_ = tw.Flush()
}

// describeConsumerGroup describes a consumer-protocol group, if name is
// one.
func describeConsumerGroup(ctx context.Context, adm *kadm.Client, name string) (kadm.DescribedConsumerGroup, bool) {
	described, err := adm.DescribeConsumerGroups(ctx, name)
	if err != nil {
		return kadm.DescribedConsumerGroup{}, false
	}
	g, ok := described[name]
	return g, ok && g.Err == nil
}

// printConsumerGroup prints a consumer-protocol group as groupDescribe
// prints a classic one: per partition the committed offset, the log end,
// the lag and the member it is assigned to.
func printConsumerGroup(ctx context.Context, adm *kadm.Client, g kadm.DescribedConsumerGroup, stdout, stderr io.Writer, af *adminFlags) int {
	fetched, topics, err := fetchCommitted(ctx, adm, g.Group)
	if err != nil {
		return af.Fail("%s: %s", g.Group, cli.KafkaError(err, ""))
	}
	owner := map[string]map[int32]*kadm.ConsumerGroupMember{}
	for i := range g.Members {
		m := &g.Members[i]
		for _, tp := range m.Assignment.Sorted() {
			if tp.Topic == "" {
				continue // a broker that names no topics (kfake)
			}
			if !slices.Contains(topics, tp.Topic) {
				topics = append(topics, tp.Topic)
			}
			for _, p := range tp.Partitions {
				if owner[tp.Topic] == nil {
					owner[tp.Topic] = map[int32]*kadm.ConsumerGroupMember{}
				}
				owner[tp.Topic][p] = m
			}
		}
	}
	slices.Sort(topics)
	var ends kadm.ListedOffsets
	if len(topics) > 0 {
		if ends, err = adm.ListEndOffsets(ctx, topics...); err != nil {
			return af.Fail("%s: %s", g.Group, cli.KafkaError(err, ""))
		}
	}
	fmt.Fprintf(stdout, "GROUP %s  state %s  protocol consumer (assignor %s, epoch %d)  coordinator %d  members %d\n",
		g.Group, g.State, g.AssignorName, g.Epoch, g.Coordinator.NodeID, len(g.Members))
	var listed []kadm.ListedOffset
	ends.Each(func(e kadm.ListedOffset) {
		if e.Err == nil {
			listed = append(listed, e)
		}
	})
	slices.SortFunc(listed, func(a, b kadm.ListedOffset) int {
		if a.Topic != b.Topic {
			return strings.Compare(a.Topic, b.Topic)
		}
		return int(a.Partition - b.Partition)
	})
	var rows []lagRow
	for _, e := range listed {
		r := lagRow{topic: e.Topic, partition: e.Partition, committed: -1, end: e.Offset, lag: e.Offset}
		if o, ok := fetched.Lookup(e.Topic, e.Partition); ok && o.At >= 0 {
			r.committed, r.lag = o.At, e.Offset-o.At
		}
		if m := owner[e.Topic][e.Partition]; m != nil {
			r.assigned, r.member, r.client, r.host = true, m.MemberID, m.ClientID, m.ClientHost
		}
		rows = append(rows, r)
	}
	printLagTable(stdout, rows)
	return exitOK
}

// groupDelete is `strata group delete`.
func groupDelete(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("group delete", "group delete GROUP [GROUP ...] [flags]",
		"Deletes groups without members, with their committed offsets (DeleteGroups).", stderr)
	return runNames(ctx, af, fs, args, "name at least one group", (*kadm.Client).DeleteGroups,
		func(_ context.Context, _ *kadm.Client, deleted kadm.DeleteGroupResponses, name string) int {
			if _, code, ok := answerFor(af, deleted, name, func(r kadm.DeleteGroupResponse) error { return r.Err }); !ok {
				return code
			}
			fmt.Fprintf(stdout, "deleted group %s\n", name)
			return exitOK
		})
}

// groupResetOffsets is `strata group reset-offsets`: a dry run unless
// --execute, as kafka-consumer-groups.sh.
func groupResetOffsets(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("group reset-offsets",
		"group reset-offsets GROUP --topic T (--to-earliest | --to-latest | --to-datetime TIME | --to-offset N) [--partition P] [--execute] [flags]",
		"Sets a group's committed offsets of a topic: to the log start, the log end, the first offset at or after a\n"+
			"time (RFC 3339, or unix milliseconds), or an offset (bounded by the log). Prints the plan; commits it only\n"+
			"with --execute. The group must have no members (stop its consumers first).", stderr)
	topic := fs.String("topic", "", "the `topic` (required)")
	partition := fs.Int("partition", -1, "only this `partition`; -1: all")
	earliest := fs.Bool("to-earliest", false, "to the log start offset")
	latest := fs.Bool("to-latest", false, "to the log end offset")
	datetime := fs.String("to-datetime", "", "to the first offset at or after this `time`")
	toOffset := fs.Int64("to-offset", -1, "to this `offset`")
	execute := fs.Bool("execute", false, "commit the new offsets (without it: a dry run)")
	names, code, ok := cli.ParseArgs(fs, args)
	if !ok {
		return code
	}
	chosen := 0
	for _, b := range []bool{*earliest, *latest, *datetime != "", *toOffset >= 0} {
		if b {
			chosen++
		}
	}
	switch {
	case len(names) != 1:
		return af.UsageError("name one group")
	case *topic == "":
		return af.UsageError("--topic is required")
	case chosen != 1:
		return af.UsageError("give exactly one of --to-earliest, --to-latest, --to-datetime, --to-offset")
	case *partition < -1 || *partition > 1<<31-1:
		return af.UsageError("--partition must be a partition number, got %d", *partition)
	}
	var ms int64
	if *datetime != "" {
		if t, err := time.Parse(time.RFC3339, *datetime); err == nil {
			ms = t.UnixMilli()
		} else if n, err := strconv.ParseInt(*datetime, 10, 64); err == nil && n >= 0 {
			ms = n
		} else {
			return af.UsageError("--to-datetime must be RFC 3339 or unix milliseconds, got %q", *datetime)
		}
	}
	group := names[0]
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		partitions, err := cli.TopicPartitions(ctx, adm, *topic, int32(*partition), kmsg.OffsetCommit, kmsg.ListOffsets)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		starts, err := adm.ListStartOffsets(ctx, *topic)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		ends, err := adm.ListEndOffsets(ctx, *topic)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		var byTime kadm.ListedOffsets
		if *datetime != "" {
			if byTime, err = adm.ListOffsetsAfterMilli(ctx, ms, *topic); err != nil {
				return af.Fail("%s", cli.KafkaError(err, ""))
			}
		}
		current, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		plan := kadm.Offsets{}
		tw := cli.NewTable(stdout, "TOPIC\tPARTITION\tCURRENT\tNEW")
		for _, p := range partitions {
			s, okS := starts.Lookup(*topic, p)
			e, okE := ends.Lookup(*topic, p)
			if !okS || !okE || s.Err != nil || e.Err != nil {
				return af.Fail("partition %d: cannot list its offsets", p)
			}
			var to int64
			switch {
			case *earliest:
				to = s.Offset
			case *latest:
				to = e.Offset
			case *datetime != "":
				lo, ok := byTime.Lookup(*topic, p)
				if !ok || lo.Err != nil {
					return af.Fail("partition %d: cannot list the offset for the time", p)
				}
				to = lo.Offset
			default:
				to = min(max(*toOffset, s.Offset), e.Offset)
			}
			cur := "-"
			if o, ok := current.Lookup(*topic, p); ok && o.At >= 0 {
				cur = strconv.FormatInt(o.At, 10)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", *topic, p, cur, to)
			plan.Add(kadm.Offset{Topic: *topic, Partition: p, At: to, LeaderEpoch: -1})
		}
		_ = tw.Flush()
		if !*execute {
			fmt.Fprintln(stdout, "dry run: nothing committed (add --execute)")
			return exitOK
		}
		committed, err := adm.CommitOffsets(ctx, group, plan)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		if err := committed.Error(); err != nil {
			return af.Fail("%s (a group with members cannot be reset: stop its consumers)", cli.KafkaError(err, ""))
		}
		fmt.Fprintf(stdout, "committed the new offsets of group %s\n", group)
		return exitOK
	})
}
