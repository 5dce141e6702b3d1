package main

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/node"
)

// TestCLIStrata runs the client commands against an in-process Strata
// node, as TestCLIKfake does against kfake: topic describe and alter
// --config go through DescribeConfigs and IncrementalAlterConfigs.
func TestCLIStrata(t *testing.T) {
	n := startCLINode(t, nil)
	testCLI(t, n.Addr())
	t.Run("transactions", func(t *testing.T) { testTxn(cliRunner{t: t, addr: n.Addr()}) })
	t.Run("hanging-transaction", testTxnHanging)
}

// startCLINode starts an in-process node on free 127.0.0.1 ports (tweak,
// if set, adjusting its config first), stopped at the end of the test,
// and waits for its controller.
func startCLINode(t *testing.T, tweak func(*node.Config)) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.Listener, cfg.ControllerListener, cfg.LogDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	cfg.MetricsListener = "127.0.0.1:0"
	if tweak != nil {
		tweak(&cfg)
	}
	n, err := node.Start(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	require.Eventually(t, n.ActiveController, 15*time.Second, 10*time.Millisecond)
	return n
}

// testTxnHanging: on a node with transaction.partition.verification.enable
// off, a transactional batch (Produce v11) written by a producer id no
// coordinator knows (an idempotent producer's, with a made-up transactional id) opens
// a transaction no EndTxn will close: a hanging transaction. `strata txn
// find-hanging` names it (with no transactional id), but not before it
// is older than --max-transaction-timeout; `strata txn abort` ends it, and
// the last stable offset passes it.
func testTxnHanging(t *testing.T) {
	n := startCLINode(t, func(cfg *node.Config) { cfg.BrokerListener.Txns.NoPartitionVerification = true })
	r := cliRunner{t: t, addr: n.Addr()}
	topic := r.topicWithRecords("hang", 1, "a\n")

	ctx, cancel := context.WithTimeout(context.Background(), cliTestTimeout)
	defer cancel()
	// Produce v11: from v12 under transaction.version 2 the leader would
	// ask the coordinator to add the partition, verification or not.
	v11 := kversion.Stable()
	v11.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.addr), kgo.MaxVersions(v11))
	require.NoError(t, err)
	defer cl.Close()
	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.TransactionTimeoutMillis = -1
	initResp, err := initReq.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(initResp.ErrorCode))
	pid, epoch := initResp.ProducerID, initResp.ProducerEpoch
	bld := record.NewBuilder(record.WithProducer(pid, epoch, 0), record.WithTransactional())
	bld.Append(time.Now().UnixMilli(), nil, []byte("stuck"))
	batch, err := bld.AppendTo(nil)
	require.NoError(t, err)
	ghost := "ghost-" + topic
	prodReq := kmsg.NewPtrProduceRequest()
	prodReq.TransactionID, prodReq.Acks, prodReq.TimeoutMillis = &ghost, -1, 10_000
	tds, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	require.NoError(t, err)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, tds[topic].ID // Produce v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, batch
	rt.Partitions = append(rt.Partitions, rp)
	prodReq.Topics = append(prodReq.Topics, rt)
	prodResp, err := prodReq.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(prodResp.Topics[0].Partitions[0].ErrorCode), "the unverified transactional batch is appended")

	header := "TOPIC  PARTITION  LEADER  PRODUCER-ID  PRODUCER-EPOCH  COORDINATOR-EPOCH  START-OFFSET  LAST-TIMESTAMP  TRANSACTIONAL-ID\n"
	out := r.ok("", "txn", "find-hanging", "--topic", topic)
	require.Equal(t, header, out, "younger than the default 15m threshold: not reported")
	out = r.ok("", "txn", "find-hanging", "--max-transaction-timeout", "0s", "--topic", topic)
	require.Regexp(t, `(?m)^`+topic+`\s+0\s+\d+\s+`+strconv.FormatInt(pid, 10)+`\s+\d+\s+-?\d+\s+1\s+\S+\s+-\s*$`, out,
		"the open transaction at offset 1 of a producer id no coordinator knows is hanging")
	out = r.ok("", "txn", "find-hanging", "--max-transaction-timeout", "0s")
	require.Contains(t, out, topic, "without --topic every topic is searched")

	require.Contains(t, r.ok("", "txn", "abort", "--topic", topic, "--partition", "0", "--start-offset", "1"), "aborted the transaction of producer")
	require.Equal(t, header, r.ok("", "txn", "find-hanging", "--max-transaction-timeout", "0s", "--topic", topic), "aborted: nothing hangs")
	adm := kadm.NewClient(cl)
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	require.NoError(t, err)
	end, _ := ends.Lookup(topic, 0)
	require.Equal(t, int64(3), end.Offset, "the last stable offset passes the record and the marker")
}

// testTxn: an open transaction as `strata txn` shows it (list, describe,
// producers), not hanging while its coordinator holds it, and aborted on
// its partition with `strata txn abort`, after which the partition's last
// stable offset passes it and read_committed sees none of it.
func testTxn(r cliRunner) {
	t := r.t
	topic := r.topicWithRecords("txn", 2, "a\nb\n")
	id := topicName(t, "tid")
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
