package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerStreams("topic", "create, list, describe, alter and delete topics, like kafka-topics.sh", withoutStdin(topicCommand))
}

// Defaults of `strata topic create`.
const (
	// defaultTopicPartitions is --partitions of create.
	defaultTopicPartitions = 1
	// defaultReplicationFactor is --replication-factor of create: -1
	// asks the broker for its default (CreateTopics v4+, KIP-464).
	defaultReplicationFactor = -1
)

// topicCommand is `strata topic create|list|describe|alter|delete`.
var topicCommand = subcommands{
	name: "topic",
	usage: "Usage:\n\n" +
		"  strata topic create NAME [--partitions N] [--replication-factor R] [--config key=value ...]\n" +
		"  strata topic list [--internal]\n" +
		"  strata topic describe [NAME ...] [--internal]\n" +
		"  strata topic alter NAME [--config key=value ...] [--delete-config key ...] [--partitions N]\n" +
		"  strata topic delete NAME [NAME ...]\n\n" +
		"Administers topics over the Kafka protocol, like kafka-topics.sh; every subcommand takes\n" +
		"--bootstrap-server (default " + cli.DefaultBootstrapServer + ") and --timeout. Run 'strata topic create -h' for a subcommand's flags.\n",
	subs: map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
		"create":   topicCreate,
		"list":     topicList,
		"describe": topicDescribe,
		"alter":    topicAlter,
		"delete":   topicDelete,
	},
}.run

// subcommands is a command made of subcommands: `strata <name> <sub> ...`.
type subcommands struct {
	name string
	// usage is printed on -h and on a missing or unknown subcommand.
	usage string
	subs  map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// run runs the subcommand args[0] with the rest of args, or prints usage.
func (s subcommands) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, s.usage)
		return exitUsage
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stderr, s.usage)
		return exitOK
	}
	run, ok := s.subs[sub]
	if !ok {
		fmt.Fprintf(stderr, "strata %s: unknown subcommand %q\n\n", s.name, sub)
		fmt.Fprint(stderr, s.usage)
		return exitUsage
	}
	return run(ctx, args, stdout, stderr)
}

// adminFlags are the flags every admin command has.
type adminFlags struct {
	cli.Command
	bootstrap *string
	// commandConfig is --command-config: the client properties of a
	// secured cluster.
	commandConfig *string
	timeout       *time.Duration
	// cl is the client run made, for requests kadm has no call for.
	cl *kgo.Client
}

// newAdminFlagSet is cli.NewFlagSet with --bootstrap-server,
// --command-config and --timeout.
func newAdminFlagSet(name, synopsis, about string, stderr io.Writer) (*flag.FlagSet, *adminFlags) {
	fs, c := cli.NewFlagSet(name, synopsis, about, stderr)
	af := &adminFlags{Command: c}
	af.bootstrap = cli.BootstrapFlag(fs)
	af.commandConfig = cli.CommandConfigFlag(fs)
	af.timeout = fs.Duration("timeout", cli.DefaultAdminTimeout, "give up after this long")
	return fs, af
}

// parseNames is cli.ParseArgs for a command that takes one or more
// names: none is a usage error, with missing as its message.
func (af *adminFlags) parseNames(fs *flag.FlagSet, args []string, missing string) ([]string, int, bool) {
	names, code, ok := cli.ParseArgs(fs, args)
	if ok && len(names) == 0 {
		return nil, af.UsageError("%s", missing), false
	}
	return names, code, ok
}

// runNames runs an admin command on one or more names (none is a usage
// error, with missing as its message): ask, a kadm.Client method such as
// (*kadm.Client).DeleteGroups, is one request about them all, and each
// reports on one name from its answer and returns its exit code. The
// command exits with the last failing code, if any.
func runNames[T any](ctx context.Context, af *adminFlags, fs *flag.FlagSet, args []string, missing string,
	ask func(adm *kadm.Client, ctx context.Context, names ...string) (T, error),
	each func(ctx context.Context, adm *kadm.Client, answer T, name string) int) int {
	names, code, ok := af.parseNames(fs, args, missing)
	if !ok {
		return code
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		answer, err := ask(adm, ctx, names...)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		code := exitOK
		for _, name := range names {
			if c := each(ctx, adm, answer, name); c != exitOK {
				code = c
			}
		}
		return code
	})
}

// answerFor is answers' entry for name. When there is none, or it holds
// an error (errOf), it reports that and returns false and the exit code.
func answerFor[V any](af *adminFlags, answers map[string]V, name string, errOf func(V) error) (V, int, bool) {
	v, ok := answers[name]
	switch {
	case !ok:
		return v, af.Fail("%s: no answer", name), false
	case errOf(v) != nil:
		return v, af.Fail("%s: %s", name, cli.KafkaError(errOf(v), "")), false
	}
	return v, exitOK, true
}

// run connects an admin client and calls do with a context bounded by
// --timeout; do returns the exit code.
func (af *adminFlags) run(ctx context.Context, do func(ctx context.Context, adm *kadm.Client) int) int {
	if *af.timeout <= 0 {
		return af.UsageError("--timeout must be positive")
	}
	addrs, err := cli.ParseAddrs(*af.bootstrap)
	if err != nil {
		return af.UsageError("%v", err)
	}
	security, err := cli.LoadClientSecurity(*af.commandConfig)
	if err != nil {
		return af.UsageError("%v", err)
	}
	cl, err := cli.NewKafkaClient(addrs, security...)
	if err != nil {
		return af.Fail("%v", err)
	}
	defer cl.Close()
	af.cl = cl
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(min(*af.timeout, time.Duration(1<<31-1)*time.Millisecond) / time.Millisecond))
	ctx, cancel := context.WithTimeout(ctx, *af.timeout)
	defer cancel()
	return do(ctx, adm)
}

func topicCreate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("topic create", "topic create NAME [flags]",
		"Creates a topic (CreateTopics). Broker errors are printed with Kafka's error name.", stderr)
	partitions := fs.Int("partitions", defaultTopicPartitions, "number of `partitions`")
	rf := fs.Int("replication-factor", defaultReplicationFactor, "replicas per partition; -1 takes the broker's default")
	var configs cli.KeyValues
	fs.Var(&configs, "config", "a topic config `key=value` (repeatable), e.g. retention.ms=3600000")
	names, code, ok := cli.ParseArgs(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(names) != 1:
		return af.UsageError("give exactly one topic name, got %q", names)
	case *partitions < 1 || *partitions > 1<<31-1:
		return af.UsageError("--partitions must be at least 1, got %d", *partitions)
	case *rf != -1 && (*rf < 1 || *rf > 1<<15-1):
		return af.UsageError("--replication-factor must be -1 (the broker's default) or at least 1, got %d", *rf)
	}
	cfg := map[string]*string{}
	for _, kv := range configs {
		cfg[kv.Key] = &kv.Value
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		resp, err := adm.CreateTopic(ctx, int32(*partitions), int16(*rf), cfg, names[0])
		if err != nil {
			return af.Fail("topic %q: %s", names[0], cli.KafkaError(err, resp.ErrMessage))
		}
		fmt.Fprintf(stdout, "Created topic %s.\n", names[0])
		return exitOK
	})
}

func topicList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("topic list", "topic list [flags]",
		"Lists the topics with their partition count and replication factor.", stderr)
	internal := fs.Bool("internal", false, "include internal topics (and say which are)")
	if code, ok := af.ParseFlags(fs, args); !ok {
		return code
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		topics, err := listTopics(ctx, adm, *internal)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		header := "TOPIC\tPARTITIONS\tREPLICATION-FACTOR"
		if *internal {
			header += "\tINTERNAL"
		}
		tw := cli.NewTable(stdout, header)
		for _, td := range topics.Sorted() {
			row := fmt.Sprintf("%s\t%d\t%d", td.Topic, len(td.Partitions), td.Partitions.NumReplicas())
			if *internal {
				row += "\t" + strconv.FormatBool(td.IsInternal)
			}
			fmt.Fprintln(tw, row)
		}
		_ = tw.Flush()
		return exitOK
	})
}

// listTopics is every topic, with the internal ones when internal.
func listTopics(ctx context.Context, adm *kadm.Client, internal bool) (kadm.TopicDetails, error) {
	if internal {
		return adm.ListTopicsWithInternal(ctx)
	}
	return adm.ListTopics(ctx)
}

func topicDescribe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("topic describe", "topic describe [NAME ...] [flags]",
		"Describes the named topics (default: all), like kafka-topics.sh --describe: a line per topic with\n"+
			"its id, partition count, replication factor and the configs not at their default (DescribeConfigs),\n"+
			"then a line per partition with its leader, leader epoch, replicas, ISR and offline replicas.\n"+
			"With a filter flag, only the partition lines that match it.", stderr)
	internal := fs.Bool("internal", false, "with no names, include internal topics")
	var underReplicated, underMinISR, unavailable bool
	for _, name := range []string{"under-replicated", "under-replicated-partitions"} {
		fs.BoolVar(&underReplicated, name, false, "only partitions whose ISR is smaller than their replicas")
	}
	for _, name := range []string{"under-min-isr", "under-min-isr-partitions"} {
		fs.BoolVar(&underMinISR, name, false, "only partitions whose ISR is smaller than min.insync.replicas")
	}
	for _, name := range []string{"unavailable", "unavailable-partitions"} {
		fs.BoolVar(&unavailable, name, false, "only partitions without a leader")
	}
	names, code, ok := cli.ParseArgs(fs, args)
	if !ok {
		return code
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		var topics kadm.TopicDetails
		var err error
		if len(names) > 0 {
			topics, err = adm.ListTopicsWithInternal(ctx, names...)
		} else {
			topics, err = listTopics(ctx, adm, *internal)
		}
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		code := exitOK
		var found []string
		for _, td := range topics.Sorted() {
			if td.Err != nil {
				code = af.Fail("topic %q: %s", td.Topic, cli.KafkaError(td.Err, ""))
				continue
			}
			found = append(found, td.Topic)
		}
		configs, cfgErr := describedConfigs(ctx, adm, found)
		if cfgErr != nil {
			code = af.Fail("configs: %s", cli.KafkaError(cfgErr, ""))
		}
		elrs := describeELRs(ctx, af.cl, found)
		for _, name := range found {
			td := topics[name]
			rc := configs[name]
			if rc.Err != nil {
				code = af.Fail("topic %q configs: %s", name, cli.KafkaError(rc.Err, rc.ErrMessage))
			}
			if !underReplicated && !underMinISR && !unavailable {
				printTopicDescription(stdout, td, rc.Configs, elrs)
				continue
			}
			minISR := minInsyncReplicas(rc.Configs)
			for _, p := range td.Partitions.Sorted() {
				if underReplicated && len(p.ISR) < len(p.Replicas) || underMinISR && len(p.ISR) < minISR || unavailable && p.Leader < 0 {
					printPartitionLine(stdout, td.Topic, p, elrs)
				}
			}
		}
		return code
	})
}

// describedConfigs is DescribeConfigs for topics by name.
func describedConfigs(ctx context.Context, adm *kadm.Client, topics []string) (map[string]kadm.ResourceConfig, error) {
	out := map[string]kadm.ResourceConfig{}
	if len(topics) == 0 {
		return out, nil
	}
	if err := cli.RequireAPIs(ctx, adm, kmsg.DescribeConfigs); err != nil {
		return out, err
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	for _, rc := range rcs {
		out[rc.Name] = rc
	}
	return out, err
}

// printTopicDescription prints kafka-topics.sh --describe's lines for one
// topic, with LeaderEpoch and Offline on every partition line. Configs are
// those whose source is not the default, as kafka-topics.sh shows.
func printTopicDescription(w io.Writer, td kadm.TopicDetail, configs []kadm.Config, elrs map[topicPartition]partitionELRs) {
	var set []string
	for _, c := range configs {
		if c.Source == kmsg.ConfigSourceDefaultConfig || c.Source == kmsg.ConfigSourceUnknown {
			continue
		}
		v := "null"
		switch {
		case c.Sensitive:
			v = "(sensitive)"
		case c.Value != nil:
			v = *c.Value
		}
		set = append(set, c.Key+"="+v)
	}
	slices.Sort(set)
	fmt.Fprintf(w, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
		td.Topic, base64.RawURLEncoding.EncodeToString(td.ID[:]), len(td.Partitions), td.Partitions.NumReplicas(), strings.Join(set, ","))
	for _, p := range td.Partitions.Sorted() {
		printPartitionLine(w, td.Topic, p, elrs)
	}
}

// printPartitionLine prints kafka-topics.sh --describe's line for one
// partition, with its Elr and LastKnownElr when DescribeTopicPartitions
// told them (elrs).
func printPartitionLine(w io.Writer, topic string, p kadm.PartitionDetail, elrs map[topicPartition]partitionELRs) {
	leader := "none"
	if p.Leader >= 0 {
		leader = strconv.Itoa(int(p.Leader))
	}
	fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: %s\tLeaderEpoch: %d\tReplicas: %s\tIsr: %s",
		topic, p.Partition, leader, p.LeaderEpoch, joinIDs(p.Replicas), joinIDs(p.ISR))
	if e, ok := elrs[topicPartition{topic, p.Partition}]; ok {
		fmt.Fprintf(w, "\tElr: %s\tLastKnownElr: %s", joinIDs(e.elr), joinIDs(e.lastKnown))
	}
	fmt.Fprintf(w, "\tOffline: %s", joinIDs(p.OfflineReplicas))
	if p.Err != nil {
		fmt.Fprintf(w, "\tError: %s", cli.KafkaError(p.Err, ""))
	}
	fmt.Fprintln(w)
}

// minInsyncReplicas is the topic's min.insync.replicas from its described
// configs (1, Kafka's default, when absent or unreadable).
func minInsyncReplicas(configs []kadm.Config) int {
	for _, c := range configs {
		if c.Key == "min.insync.replicas" && c.Value != nil {
			if n, err := strconv.Atoi(*c.Value); err == nil {
				return n
			}
		}
	}
	return 1
}

// joinIDs is "1,2,3", as kafka-topics.sh prints replica lists.
func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

func topicAlter(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("topic alter", "topic alter NAME [flags]",
		"Sets and deletes topic configs (IncrementalAlterConfigs) and raises the partition count\n"+
			"(CreatePartitions). Configs are altered first.", stderr)
	var set cli.KeyValues
	var del cli.StringList
	fs.Var(&set, "config", "set a topic config, `key=value` (repeatable)")
	fs.Var(&del, "delete-config", "delete a topic config back to its default, `key` (repeatable)")
	partitions := fs.Int("partitions", 0, "raise the partition count to `N` (default: unchanged)")
	names, code, ok := cli.ParseArgs(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(names) != 1:
		return af.UsageError("give exactly one topic name, got %q", names)
	case len(set) == 0 && len(del) == 0 && *partitions == 0:
		return af.UsageError("nothing to alter: give --config, --delete-config or --partitions")
	case *partitions < 0 || *partitions > 1<<31-1:
		return af.UsageError("--partitions must be positive, got %d", *partitions)
	}
	topic := names[0]
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		if len(set)+len(del) > 0 {
			var alters []kadm.AlterConfig
			for _, kv := range set {
				alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv.Key, Value: &kv.Value})
			}
			for _, k := range del {
				alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			}
			if err := cli.RequireAPIs(ctx, adm, kmsg.IncrementalAlterConfigs); err != nil {
				return af.Fail("topic %q configs: %v", topic, err)
			}
			resps, err := adm.AlterTopicConfigs(ctx, alters, topic)
			if err != nil {
				return af.Fail("topic %q configs: %s", topic, cli.KafkaError(err, ""))
			}
			resp, err := resps.On(topic, nil)
			if err == nil {
				err = resp.Err
			}
			if err != nil {
				return af.Fail("topic %q configs: %s", topic, cli.KafkaError(err, resp.ErrMessage))
			}
			fmt.Fprintf(stdout, "Altered configs of topic %s.\n", topic)
		}
		if *partitions > 0 {
			resps, err := adm.UpdatePartitions(ctx, *partitions, topic)
			if err != nil {
				return af.Fail("topic %q partitions: %s", topic, cli.KafkaError(err, ""))
			}
			resp, err := resps.On(topic, nil)
			if err == nil {
				err = resp.Err
			}
			if err != nil {
				return af.Fail("topic %q partitions: %s", topic, cli.KafkaError(err, resp.ErrMessage))
			}
			fmt.Fprintf(stdout, "Topic %s now has %d partitions.\n", topic, *partitions)
		}
		return exitOK
	})
}

func topicDelete(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("topic delete", "topic delete NAME [NAME ...] [flags]",
		"Deletes topics (DeleteTopics); each topic's outcome is printed, and any failure exits 1.", stderr)
	return runNames(ctx, af, fs, args, "give at least one topic name", (*kadm.Client).DeleteTopics,
		func(_ context.Context, _ *kadm.Client, resps kadm.DeleteTopicResponses, name string) int {
			resp, err := resps.On(name, nil)
			if err == nil {
				err = resp.Err
			}
			if err != nil {
				return af.Fail("topic %q: %s", name, cli.KafkaError(err, resp.ErrMessage))
			}
			fmt.Fprintf(stdout, "Deleted topic %s.\n", name)
			return exitOK
		})
}

type topicPartition struct {
	topic     string
	partition int32
}

// partitionELRs are a partition's eligible leader replicas and last known
// ELR (KIP-966).
type partitionELRs struct {
	elr, lastKnown []int32
}

// describeTopicPartitionsLimit is the partitions asked per
// DescribeTopicPartitions request (Kafka's default response limit).
const describeTopicPartitionsLimit = 2000

// describeELRs asks DescribeTopicPartitions (KIP-966) for the topics'
// ELRs, following its cursor. A broker without it (or any failure) gives
// none, and the lines go without the two columns, as kafka-topics.sh
// prints them only when it used that request.
func describeELRs(ctx context.Context, cl *kgo.Client, topics []string) map[topicPartition]partitionELRs {
	if cl == nil || len(topics) == 0 {
		return nil
	}
	out := map[topicPartition]partitionELRs{}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = describeTopicPartitionsLimit
	for _, t := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = t
		req.Topics = append(req.Topics, rt)
	}
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil
		}
		for _, t := range resp.Topics {
			if t.ErrorCode != 0 || t.Topic == nil {
				continue
			}
			for _, p := range t.Partitions {
				out[topicPartition{*t.Topic, p.Partition}] = partitionELRs{elr: p.EligibleLeaderReplicas, lastKnown: p.LastKnownELR}
			}
		}
		if resp.NextCursor == nil {
			return out
		}
		c := kmsg.NewDescribeTopicPartitionsRequestCursor()
		c.Topic, c.Partition = resp.NextCursor.Topic, resp.NextCursor.Partition
		req.Cursor = &c
	}
}
