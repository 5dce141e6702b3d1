package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-log/strata/node"
)

// TestCLIStrata runs the client commands against an in-process Strata
// node, as TestCLIKfake does against kfake: topic describe and alter
// --config go through DescribeConfigs and IncrementalAlterConfigs.
func TestCLIStrata(t *testing.T) {
	cfg := node.DefaultConfig()
	cfg.Listener, cfg.ControllerListener, cfg.LogDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	cfg.MetricsListener = "127.0.0.1:0"
	n, err := node.Start(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	require.Eventually(t, n.ActiveController, 15*time.Second, 10*time.Millisecond)
	testCLI(t, n.Addr())
	t.Run("transactions", func(t *testing.T) { testTxn(cliRunner{t: t, addr: n.Addr()}) })
}

// testTxn: an open transaction as `strata txn` shows it (list, describe,
// producers), not hanging while its coordinator holds it, and aborted on
// its partition with `strata txn abort`, after which the partition's last
// stable offset passes it and read_committed sees none of it.
func testTxn(r cliRunner) {
	t := r.t
	topic := topicName(t, "txn")
	id := topicName(t, "tid")
	r.ok("", "topic", "create", topic, "--partitions", "2")
	r.ok("a\nb\n", "produce", "--topic", topic, "--partition", "0")
	ctx, cancel := context.WithTimeout(context.Background(), cliTestTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.addr), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.BeginTransaction())
	for _, v := range []string{"x", "y"} {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: 0}).FirstErr())
	}

	require.Regexp(t, `(?m)^`+id+`\s+1\s+\d+\s+Ongoing\s*$`, r.ok("", "txn", "list"))
	require.Regexp(t, `(?m)^`+id+`\s+1\s+\d+\s+Ongoing\s*$`, r.ok("", "txn", "list", "--state", "Ongoing"))
	require.NotContains(t, r.ok("", "txn", "list", "--state", "CompleteCommit"), id)
	out := r.ok("", "txn", "describe", id)
	require.Regexp(t, `(?m)^`+id+`\s+1\s+\d+\s+\d+\s+Ongoing\s+\d+\s+\S+\s+\S+\s+`+topic+`-0\s*$`, out)
	out = r.ok("", "txn", "producers", "--topic", topic, "--partition", "0")
	require.Regexp(t, `(?m)^`+topic+`\s+0\s+1\s+\d+\s+\d+\s+1\s+\S+\s+-?\d+\s+2\s*$`, out, "the open transaction starts at offset 2")
	require.Equal(t, "", r.ok("", "txn", "find-hanging", "--max-transaction-timeout", "0s", "--topic", topic)[len("TOPIC  PARTITION  LEADER  PRODUCER-ID  PRODUCER-EPOCH  COORDINATOR-EPOCH  START-OFFSET  LAST-TIMESTAMP  TRANSACTIONAL-ID\n"):],
		"the coordinator holds the transaction: not hanging")

	code, _, errOut := r.run("txn", "abort", "--topic", topic, "--partition", "0", "--start-offset", "1")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "no open transaction starting at offset 1")
	code, _, errOut = r.run("txn", "abort", "--topic", topic, "--partition", "0")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--start-offset is required")
	code, _, _ = r.run("txn", "describe", "no-such-transactional-id")
	require.Equal(t, exitError, code)

	require.Contains(t, r.ok("", "txn", "abort", "--topic", topic, "--partition", "0", "--start-offset", "2"), "aborted the transaction of producer")
	out = r.ok("", "txn", "producers", "--topic", topic, "--partition", "0")
	require.Regexp(t, `(?m)^`+topic+`\s+0\s+1\s+\d+\s+\d+\s+1\s+\S+\s+\d+\s+-1\s*$`, out, "no open transaction after the abort")
	adm := kadm.NewClient(cl)
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	require.NoError(t, err)
	end, _ := ends.Lookup(topic, 0)
	require.Equal(t, int64(5), end.Offset, "the last stable offset passes the two records and the marker")

	r.ok("c\n", "produce", "--topic", topic, "--partition", "0")
	rc, err := kgo.NewClient(kgo.SeedBrokers(r.addr), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer rc.Close()
	var got []string
	for len(got) < 3 && ctx.Err() == nil {
		rc.PollFetches(ctx).EachRecord(func(rec *kgo.Record) { got = append(got, string(rec.Value)) })
	}
	require.Equal(t, []string{"a", "b", "c"}, got, "read_committed sees none of the aborted transaction")
}
