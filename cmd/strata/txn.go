package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/twmb/franz-go/pkg/kadm"
)

func init() {
	registerStreams("txn", "list, describe and abort transactions and describe producers, like kafka-transactions.sh", withoutStdin(txnCommand))
}

// txnCommand is `strata txn list|describe|producers|find-hanging|abort`.
var txnCommand = subcommands{
	name: "txn",
	usage: "Usage:\n\n" +
		"  strata txn list [--state STATE] [--producer-id ID]\n" +
		"  strata txn describe TRANSACTIONAL-ID [TRANSACTIONAL-ID ...]\n" +
		"  strata txn producers --topic T [--partition P]\n" +
		"  strata txn find-hanging [--topic T] [--max-transaction-timeout 15m]\n" +
		"  strata txn abort --topic T --partition P --start-offset OFFSET\n\n" +
		"Inspects transactions and producers over the Kafka protocol (ListTransactions, DescribeTransactions,\n" +
		"DescribeProducers) and aborts a hanging transaction on a partition (WriteTxnMarkers, KIP-664), like\n" +
		"kafka-transactions.sh; every subcommand takes --bootstrap-server (default " + cli.DefaultBootstrapServer + ") and --timeout.\n" +
		"Run 'strata txn abort -h' for a subcommand's flags.\n",
	subs: map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
		"list":         txnList,
		"describe":     txnDescribe,
		"producers":    txnProducers,
		"find-hanging": txnFindHanging,
		"abort":        txnAbort,
	},
}.run

// txnList is `strata txn list`: every transactional id of every
// coordinator, with its producer id and state.
func txnList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("txn list", "txn list [flags]", "Lists the transactional ids every coordinator holds (ListTransactions on every broker).", stderr)
	var states cli.StringList
	fs.Var(&states, "state", "only transactions in this `state` (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence; repeatable)")
	pid := fs.Int64("producer-id", -1, "only the transactional id with this producer `id`")
	if code, ok := af.ParseFlags(fs, args); !ok {
		return code
	}
	var pids []int64
	if *pid >= 0 {
		pids = []int64{*pid}
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		listed, err := adm.ListTransactions(ctx, pids, states)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		tw := cli.NewTable(stdout, "TRANSACTIONAL-ID\tCOORDINATOR\tPRODUCER-ID\tSTATE")
		for _, t := range listed.Sorted() {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.TxnID, t.Coordinator, t.ProducerID, t.State)
		}
		_ = tw.Flush()
		return exitOK
	})
}

// txnDescribe is `strata txn describe`: each transactional id's state at
// its coordinator.
func txnDescribe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("txn describe", "txn describe TRANSACTIONAL-ID [TRANSACTIONAL-ID ...] [flags]",
		"Describes transactions at their coordinators (FindCoordinator, DescribeTransactions): producer id and\n"+
			"epoch, state, timeout, start time and the partitions of the ongoing transaction.", stderr)
	ids, code, ok := af.parseNames(fs, args, "name at least one transactional id")
	if !ok {
		return code
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		described, err := adm.DescribeTransactions(ctx, ids...)
		if err != nil && len(described) == 0 {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		code := exitOK
		tw := cli.NewTable(stdout, "TRANSACTIONAL-ID\tCOORDINATOR\tPRODUCER-ID\tPRODUCER-EPOCH\tSTATE\tTIMEOUT-MS\tSTART-TIME\tDURATION\tPARTITIONS")
		for _, id := range ids {
			d, c, ok := answerFor(af, described, id, func(d kadm.DescribedTransaction) error { return d.Err })
			if !ok {
				code = c
				continue
			}
			start, dur := "-", "-"
			if d.StartTimestamp >= 0 {
				t := time.UnixMilli(d.StartTimestamp)
				start, dur = t.UTC().Format(time.RFC3339Nano), time.Since(t).Truncate(time.Millisecond).String()
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", d.TxnID, d.Coordinator, d.ProducerID, d.ProducerEpoch,
				d.State, d.TimeoutMillis, start, dur, formatTopicsSet(d.Topics))
		}
		_ = tw.Flush()
		return code
	})
}

// formatTopicsSet prints a set of partitions as "t-0,t-1,u-3", sorted.
func formatTopicsSet(s kadm.TopicsSet) string {
	var parts []string
	for _, tp := range s.Sorted() {
		for _, p := range tp.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d", tp.Topic, p))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// txnProducers is `strata txn producers`: the active producers of a
// topic's partitions, as their leaders hold them.
func txnProducers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("txn producers", "txn producers --topic T [--partition P] [flags]",
		"Describes the active producers of a topic's partitions at their leaders (DescribeProducers): producer\n"+
			"id and epoch, last sequence and timestamp, the coordinator epoch of its last transaction marker, and\n"+
			"the first offset of its open transaction (-1 for none).", stderr)
	topic := fs.String("topic", "", "the `topic` (required)")
	partition := fs.Int("partition", -1, "only this `partition` (default all)")
	if code, ok := af.ParseFlags(fs, args); !ok {
		return code
	}
	if *topic == "" {
		return af.UsageError("--topic is required")
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		described, code := describeProducers(ctx, adm, af, stderr, *topic, int32(*partition))
		if code != exitOK {
			return code
		}
		tw := cli.NewTable(stdout, "TOPIC\tPARTITION\tLEADER\tPRODUCER-ID\tPRODUCER-EPOCH\tLAST-SEQUENCE\tLAST-TIMESTAMP\tCOORDINATOR-EPOCH\tTXN-START-OFFSET")
		code = eachProducer(af, described, func(p kadm.DescribedProducersPartition, ap kadm.DescribedProducer) {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\n", ap.Topic, ap.Partition, p.Leader, ap.ProducerID, ap.ProducerEpoch,
				ap.LastSequence, formatMillis(ap.LastTimestamp), ap.CoordinatorEpoch, ap.CurrentTxnStartOffset)
		})
		_ = tw.Flush()
		return code
	})
}

// describeProducers runs DescribeProducers on a topic's partitions (one
// partition, or all when partition < 0) and returns them sorted.
func describeProducers(ctx context.Context, adm *kadm.Client, af *adminFlags, stderr io.Writer, topic string, partition int32) ([]kadm.DescribedProducersPartition, int) {
	td, err := cli.DescribeTopic(ctx, adm, topic)
	if err != nil {
		return nil, af.Fail("%s", cli.KafkaError(err, ""))
	}
	parts, err := cli.SelectPartitions(td, partition)
	if err != nil {
		return nil, af.UsageError("%v", err)
	}
	set := kadm.TopicsSet{}
	set.Add(topic, parts...)
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil && len(described) == 0 {
		return nil, af.Fail("%s", cli.KafkaError(err, ""))
	}
	var out []kadm.DescribedProducersPartition
	for _, t := range described.Sorted() {
		out = append(out, t.Partitions.Sorted()...)
	}
	for _, p := range parts {
		if !slices.ContainsFunc(out, func(d kadm.DescribedProducersPartition) bool { return d.Partition == p }) {
			out = append(out, kadm.DescribedProducersPartition{Topic: topic, Partition: p, Leader: -1,
				Err: fmt.Errorf("no answer from the partition's leader: %v", err)})
		}
	}
	slices.SortFunc(out, func(a, b kadm.DescribedProducersPartition) int { return int(a.Partition - b.Partition) })
	return out, exitOK
}

// eachProducer calls fn with the active producers of each of described's
// partitions, in order, and reports each partition whose leader answered
// with an error instead; it returns exitError if it reported one.
func eachProducer(af *adminFlags, described []kadm.DescribedProducersPartition, fn func(p kadm.DescribedProducersPartition, ap kadm.DescribedProducer)) int {
	code := exitOK
	for _, p := range described {
		if p.Err != nil {
			code = af.Fail("%s-%d: %s", p.Topic, p.Partition, cli.KafkaError(p.Err, p.ErrMessage))
			continue
		}
		for _, ap := range sortedProducers(p) {
			fn(p, ap)
		}
	}
	return code
}

// sortedProducers is a partition's producers by producer id.
func sortedProducers(p kadm.DescribedProducersPartition) []kadm.DescribedProducer {
	out := make([]kadm.DescribedProducer, 0, len(p.ActiveProducers))
	for _, ap := range p.ActiveProducers {
		out = append(out, ap)
	}
	slices.SortFunc(out, func(a, b kadm.DescribedProducer) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}

// formatMillis prints a Unix-millisecond timestamp, or "-" for none.
func formatMillis(ms int64) string {
	if ms < 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// defaultMaxTransactionTimeout is Kafka's transaction.max.timeout.ms
// default, find-hanging's threshold: no transaction may legitimately stay
// open longer.
const defaultMaxTransactionTimeout = 15 * time.Minute

// txnFindHanging is `strata txn find-hanging`: open transactions on
// partitions that have outlived every transaction timeout, or that their
// coordinator no longer counts as in the transaction (kafka-transactions.sh
// find-hanging).
func txnFindHanging(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("txn find-hanging", "txn find-hanging [--topic T] [--max-transaction-timeout D] [flags]",
		"Finds hanging transactions: an open transaction on a partition (DescribeProducers) older than\n"+
			"--max-transaction-timeout whose producer's coordinator has no ongoing transaction holding that\n"+
			"partition (ListTransactions, DescribeTransactions). A hanging transaction holds the partition's last\n"+
			"stable offset back; 'strata txn abort' ends it.", stderr)
	topic := fs.String("topic", "", "only this `topic` (default every topic)")
	maxTimeout := fs.Duration("max-transaction-timeout", defaultMaxTransactionTimeout, "the cluster's transaction.max.timeout.ms: younger transactions may still be live")
	if code, ok := af.ParseFlags(fs, args); !ok {
		return code
	}
	if *maxTimeout < 0 {
		return af.UsageError("--max-transaction-timeout must not be negative")
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		var topics []string
		if *topic != "" {
			topics = []string{*topic}
		} else {
			tds, err := adm.ListTopics(ctx)
			if err != nil {
				return af.Fail("%s", cli.KafkaError(err, ""))
			}
			topics = tds.Names()
			slices.Sort(topics)
		}
		var open []kadm.DescribedProducer
		var leaders = map[string]int32{}
		code := exitOK
		for _, t := range topics {
			described, c := describeProducers(ctx, adm, af, stderr, t, -1)
			if c != exitOK {
				return c
			}
			c = eachProducer(af, described, func(p kadm.DescribedProducersPartition, ap kadm.DescribedProducer) {
				if ap.CurrentTxnStartOffset >= 0 && time.Since(time.UnixMilli(ap.LastTimestamp)) >= *maxTimeout {
					open = append(open, ap)
					leaders[fmt.Sprintf("%s-%d", ap.Topic, ap.Partition)] = p.Leader
				}
			})
			if c != exitOK {
				code = c
			}
		}
		hanging, err := hangingOf(ctx, adm, open)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		tw := cli.NewTable(stdout, "TOPIC\tPARTITION\tLEADER\tPRODUCER-ID\tPRODUCER-EPOCH\tCOORDINATOR-EPOCH\tSTART-OFFSET\tLAST-TIMESTAMP\tTRANSACTIONAL-ID")
		for _, h := range hanging {
			ap := h.producer
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", ap.Topic, ap.Partition, leaders[fmt.Sprintf("%s-%d", ap.Topic, ap.Partition)],
				ap.ProducerID, ap.ProducerEpoch, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset, formatMillis(ap.LastTimestamp), h.txnID)
		}
		_ = tw.Flush()
		return code
	})
}

// hangingTxn is an open transaction on a partition its coordinator does
// not count as part of an ongoing transaction; txnID is the producer's
// transactional id, "-" when no coordinator knows the producer id.
type hangingTxn struct {
	producer kadm.DescribedProducer
	txnID    string
}

// hangingOf keeps the open transactions whose coordinator does not list
// the partition in the producer's ongoing transaction (or knows no
// transactional id for the producer id at all).
func hangingOf(ctx context.Context, adm *kadm.Client, open []kadm.DescribedProducer) ([]hangingTxn, error) {
	if len(open) == 0 {
		return nil, nil
	}
	var pids []int64
	for _, ap := range open {
		if !slices.Contains(pids, ap.ProducerID) {
			pids = append(pids, ap.ProducerID)
		}
	}
	listed, err := adm.ListTransactions(ctx, pids, nil)
	if err != nil && len(listed) == 0 {
		return nil, fmt.Errorf("ListTransactions: %w", err)
	}
	byPID := map[int64]string{}
	var ids []string
	for _, t := range listed.Sorted() {
		byPID[t.ProducerID] = t.TxnID
		ids = append(ids, t.TxnID)
	}
	var described kadm.DescribedTransactions
	if len(ids) > 0 {
		described, err = adm.DescribeTransactions(ctx, ids...)
		if err != nil && len(described) == 0 {
			return nil, fmt.Errorf("DescribeTransactions: %w", err)
		}
	}
	var out []hangingTxn
	for _, ap := range open {
		id, known := byPID[ap.ProducerID]
		if !known {
			out = append(out, hangingTxn{producer: ap, txnID: "-"})
			continue
		}
		d, ok := described[id]
		if ok && d.Err == nil && d.ProducerID == ap.ProducerID && d.State == "Ongoing" && d.Topics.Lookup(ap.Topic, ap.Partition) {
			continue // the coordinator still holds it: the transaction is live
		}
		out = append(out, hangingTxn{producer: ap, txnID: id})
	}
	return out, nil
}

// txnAbort is `strata txn abort`: writes an ABORT marker for the open
// transaction starting at an offset of a partition, at its leader
// (KIP-664), as kafka-transactions.sh abort does.
func txnAbort(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("txn abort", "txn abort --topic T --partition P --start-offset OFFSET [flags]",
		"Aborts a hanging transaction on one partition: finds the producer whose open transaction starts at\n"+
			"--start-offset (DescribeProducers) and writes an ABORT marker for it at the partition's leader\n"+
			"(WriteTxnMarkers with the producer's epoch and coordinator epoch). The transaction's records become\n"+
			"aborted and the last stable offset moves past them. Only for transactions no coordinator will end:\n"+
			"find them with 'strata txn find-hanging'.", stderr)
	topic := fs.String("topic", "", "the `topic` (required)")
	partition := fs.Int("partition", -1, "the `partition` (required)")
	start := fs.Int64("start-offset", -1, "the first `offset` of the open transaction (required; TXN-START-OFFSET of 'strata txn producers')")
	if code, ok := af.ParseFlags(fs, args); !ok {
		return code
	}
	switch {
	case *topic == "":
		return af.UsageError("--topic is required")
	case *partition < 0:
		return af.UsageError("--partition is required")
	case *start < 0:
		return af.UsageError("--start-offset is required")
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		described, code := describeProducers(ctx, adm, af, stderr, *topic, int32(*partition))
		if code != exitOK {
			return code
		}
		p := described[0]
		if p.Err != nil {
			return af.Fail("%s-%d: %s", p.Topic, p.Partition, cli.KafkaError(p.Err, p.ErrMessage))
		}
		var found *kadm.DescribedProducer
		for _, ap := range sortedProducers(p) {
			if ap.CurrentTxnStartOffset == *start {
				found = &ap
				break
			}
		}
		if found == nil {
			return af.Fail("%s-%d has no open transaction starting at offset %d ('strata txn producers --topic %s --partition %d' lists them)",
				*topic, *partition, *start, *topic, *partition)
		}
		m := kadm.TxnMarkers{ProducerID: found.ProducerID, ProducerEpoch: found.ProducerEpoch, Commit: false,
			CoordinatorEpoch: max(found.CoordinatorEpoch, 0), Topics: kadm.TopicsSet{}}
		m.Topics.Add(*topic, int32(*partition))
		res, err := adm.WriteTxnMarkers(ctx, m)
		if err != nil {
			return af.Fail("WriteTxnMarkers: %s", cli.KafkaError(err, ""))
		}
		var perr error
		answered := false
		res.EachPartition(func(r kadm.TxnMarkersPartitionResponse) {
			answered = true
			perr = r.Err
		})
		switch {
		case !answered:
			return af.Fail("WriteTxnMarkers: the leader did not answer for %s-%d", *topic, *partition)
		case perr != nil:
			return af.Fail("WriteTxnMarkers: %s-%d: %s", *topic, *partition, cli.KafkaError(perr, ""))
		}
		fmt.Fprintf(stdout, "aborted the transaction of producer %d (epoch %d) on %s-%d from offset %d\n",
			found.ProducerID, found.ProducerEpoch, *topic, *partition, *start)
		return exitOK
	})
}
