package interop

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// saramaTxnConfig is a transactional sarama producer's config (sarama
// requires idempotence, acks=all and one request in flight for it).
func saramaTxnConfig(id string) *sarama.Config {
	cfg := saramaConfig(sarama.V3_6_0_0)
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.ID = id
	cfg.Producer.Transaction.Timeout = 30 * time.Second
	cfg.Producer.Transaction.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

// TestSaramaTransactions: sarama's transactional producer against a node
// (partition verification, KIP-890 part 1, on by default: every first
// batch of a transaction on a partition is checked with the
// coordinator). A committed, an aborted and another committed
// transaction over two partitions: a kgo read_committed consumer sees
// exactly the committed records, read_uncommitted every one. Then a
// consume-transform-produce step: records read with sarama's consumer
// are transformed into another topic in a transaction that also commits
// the group's offsets (AddMessageToTxn), and both become visible together.
func TestSaramaTransactions(t *testing.T) {
	saramaLog.logTo(t)
	n := startNode(t, t.TempDir())
	addr := n.Addr()
	adm := newAdmin(t, addr)
	createTopic(t, adm, "sarama-txn", 2, nil)

	producer, err := sarama.NewSyncProducerFromClient(saramaClient(t, addr, saramaTxnConfig("tx-sarama")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = producer.Close() })
	require.True(t, producer.IsTransactional())

	committed := map[string]bool{}
	all := 0
	for i, commit := range []bool{true, false, true} {
		require.NoError(t, producer.BeginTxn(), "transaction %d", i)
		for j := 0; j < 10; j++ {
			v := fmt.Sprintf("sarama-txn-%d-%d", i, j)
			_, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: "sarama-txn", Partition: int32(j % 2), Value: sarama.StringEncoder(v)})
			require.NoError(t, err, "transaction %d record %d", i, j)
			if commit {
				committed[v] = true
			}
			all++
		}
		if commit {
			require.NoError(t, producer.CommitTxn(), "commit %d", i)
		} else {
			require.NoError(t, producer.AbortTxn(), "abort %d", i)
		}
		require.Equal(t, sarama.ProducerTxnFlagReady, producer.TxnStatus(), "transaction %d ended", i)
	}

	// The last transaction committed on both partitions.
	requireReadCommitted(t, addr, "sarama-txn", 2, committed, all)

	t.Run("consume-transform-produce", func(t *testing.T) {
		createTopic(t, adm, "sarama-etl-in", 1, nil)
		createTopic(t, adm, "sarama-etl-out", 1, nil)
		const inputs = 6
		plain, err := sarama.NewSyncProducerFromClient(saramaClient(t, addr, saramaConfig(sarama.V3_6_0_0)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = plain.Close() })
		for i := 0; i < inputs; i++ {
			_, _, err := plain.SendMessage(&sarama.ProducerMessage{Topic: "sarama-etl-in", Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("in-%d", i))})
			require.NoError(t, err)
		}

		consumer, err := sarama.NewConsumer([]string{addr}, saramaConfig(sarama.V3_6_0_0))
		require.NoError(t, err)
		t.Cleanup(func() { _ = consumer.Close() })
		pc, err := consumer.ConsumePartition("sarama-etl-in", 0, sarama.OffsetOldest)
		require.NoError(t, err)
		t.Cleanup(func() { _ = pc.Close() })

		etl, err := sarama.NewSyncProducerFromClient(saramaClient(t, addr, saramaTxnConfig("tx-sarama-etl")))
		require.NoError(t, err)
		t.Cleanup(func() { _ = etl.Close() })
		// Two transactions of three records each; the second is aborted
		// and its records read again and committed in a third.
		var batch []*sarama.ConsumerMessage
		read := func(k int) {
			t.Helper()
			batch = batch[:0]
			for len(batch) < k {
				select {
				case m := <-pc.Messages():
					batch = append(batch, m)
				case err := <-pc.Errors():
					require.NoError(t, err)
				case <-time.After(opTimeout):
					t.Fatalf("read %d of %d input records", len(batch), k)
				}
			}
		}
		transform := func(commit bool) {
			t.Helper()
			require.NoError(t, etl.BeginTxn())
			for _, m := range batch {
				_, _, err := etl.SendMessage(&sarama.ProducerMessage{Topic: "sarama-etl-out", Partition: 0, Value: sarama.StringEncoder("out-" + string(m.Value))})
				require.NoError(t, err)
				require.NoError(t, etl.AddMessageToTxn(m, "sarama-etl", nil))
			}
			if commit {
				require.NoError(t, etl.CommitTxn())
			} else {
				require.NoError(t, etl.AbortTxn())
			}
		}
		read(3)
		transform(true)
		read(3)
		aborted := append([]*sarama.ConsumerMessage(nil), batch...)
		transform(false)
		batch = append(batch[:0], aborted...) // a restarted job reads them again from the committed offset
		transform(true)

		out := consumeKgo(t, []string{addr}, "sarama-etl-out", atStart(1), inputs, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		var values []string
		for _, r := range out {
			values = append(values, string(r.Value))
		}
		want := make([]string, inputs)
		for i := range want {
			want[i] = fmt.Sprintf("out-in-%d", i)
		}
		require.Equal(t, want, values, "each input once, in order, the aborted attempt invisible")

		// The group's offset commits with the transaction, but as in
		// Kafka it becomes visible only when the coordinator writes the
		// commit marker to __consumer_offsets, which follows EndTxn's
		// answer. A stable fetch answers UNSTABLE_OFFSET_COMMIT until
		// then (KIP-447); it must settle on the committed offset, never
		// on the aborted attempt's.
		deadline := time.Now().Add(opTimeout)
		for {
			offsets, err := adm.FetchOffsets(kadm.RequireStable(ctxFor(t, opTimeout)), "sarama-etl")
			require.NoError(t, err)
			o, ok := offsets.Lookup("sarama-etl-in", 0)
			require.True(t, ok, "the group's offset was committed with the transaction")
			if errors.Is(o.Err, kerr.UnstableOffsetCommit) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			require.NoError(t, o.Err)
			require.Equal(t, int64(inputs), o.At)
			break
		}
	})
}
