package broker_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/replica"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/sim/servertest"
)

// readCommitted fetches a partition from its start with read_committed
// (Fetch v11, isolation level 1) until the last stable offset and applies
// the aborted list as a Kafka consumer does; it returns the latest value
// of each key it delivered.
func (h *simServer) readCommitted(topic string, partition int32) map[string]string {
	h.T.Helper()
	latest := map[string]string{}
	for offset := int64(0); ; {
		p := h.Do(readCommittedRequest(11, topic, partition, offset)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		require.Zero(h.T, p.ErrorCode, "fetch: %v", kerr.ErrorForCode(p.ErrorCode))
		if len(p.RecordBatches) == 0 {
			require.GreaterOrEqual(h.T, offset, p.LastStableOffset, "nothing read below the last stable offset")
			return latest
		}
		aborted := p.AbortedTransactions
		sort.SliceStable(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
		skipping := map[int64]bool{}
		sp := record.NewSplitter(p.RecordBatches, len(p.RecordBatches)+1, record.CheckStored)
		for sp.Next() {
			b := sp.Batch()
			for len(aborted) > 0 && aborted[0].FirstOffset <= b.LastOffset() {
				skipping[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
			offset = b.LastOffset() + 1
			a := b.Attributes()
			if a.IsControl() {
				if m, ok, err := record.ReadEndTxnMarker(b); err == nil && ok && m.Type == record.ControlAbort {
					delete(skipping, b.ProducerID())
				}
				continue
			}
			if a.IsTransactional() && skipping[b.ProducerID()] {
				continue
			}
			rd := record.NewRecordReader(record.NewDecompressor(1 << 20))
			require.NoError(h.T, rd.Reset(b))
			for rd.Next() {
				latest[string(rd.Record().Key)] = string(rd.Record().Value)
			}
			require.NoError(h.T, rd.Err())
		}
		require.NoError(h.T, sp.Err())
	}
}

// compactNow rolls the partition's log and waits until the housekeeping
// has run a cleaning over it.
func (h *simServer) compactNow(p *replica.Partition) {
	h.T.Helper()
	l := p.Log()
	before := l.CleanerInfo(h.ClientEnv().Now()).Stats.Cleanings
	require.NoError(h.T, l.Roll())
	h.RunUntil("a cleaning of "+p.Dir(), func() bool {
		return p.Log() != nil && p.Log().CleanerInfo(h.ClientEnv().Now()).Stats.Cleanings > before
	})
}

// TestServerTransactionsSurviveCompaction: transactions that commit and
// abort, both offsets (TxnOffsetCommit into __consumer_offsets) and data
// (a compacted topic), then a cleaning of both partitions: the aborted
// records go, read_committed reads and the group's offsets answer as
// before, and so they do after a restart replays the cleaned partitions;
// later transactions go on.
func TestServerTransactionsSurviveCompaction(t *testing.T) {
	h := newSimServer(t, func(c *server.Config) {
		c.Partitions.RetentionCheckInterval = 20 * time.Millisecond
	})
	h.CreateTopic("t", 2, nil)
	h.CreateTopic("c", 1, map[string]string{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0"})
	init := h.newProducer("tx")
	h.groupCoordinatorReady("g")
	pid, epoch := init.ProducerID, init.ProducerEpoch

	produceTxn := func(epoch int16, kvs ...string) {
		b := record.NewBuilder(record.WithProducer(pid, epoch, 0), record.WithTransactional())
		for i := 0; i < len(kvs); i += 2 {
			b.Append(h.ClientEnv().Now().UnixMilli(), []byte(kvs[i]), []byte(kvs[i+1]))
		}
		raw, err := b.AppendTo(nil)
		require.NoError(t, err)
		req := servertest.ProduceRequest("c", 0, raw)
		req.TransactionID = kmsg.StringPtr("tx")
		got := h.Do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		require.Zero(t, got.ErrorCode, "produce: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	round := func(i int, commit bool) {
		require.Zero(t, h.Do(addOffsetsRequest("tx", pid, epoch, "g")).(*kmsg.AddOffsetsToTxnResponse).ErrorCode)
		h.addPartitions("tx", pid, epoch, "c", 0)
		tag := fmt.Sprintf("r%d-commit=%v", i, commit)
		produceTxn(epoch, "a", "a-"+tag, fmt.Sprintf("k%d", i%3), "k-"+tag)
		require.Equal(t, []int16{0, 0}, h.txnOffsetCommit("tx", "g", pid, epoch, int64(10*i), int64(10*i+1)))
		er := h.endTxn("tx", pid, epoch, commit)
		require.Zero(t, er.ErrorCode)
		epoch = er.ProducerEpoch
		want := "CompleteAbort"
		if commit {
			want = "CompleteCommit"
		}
		h.RunUntil("the markers written", func() bool { return h.describeTxn("tx").State == want })
	}
	for i := 1; i <= 8; i++ {
		round(i, i%3 != 0) // rounds 3 and 6 abort
	}
	wantOffsets := []int64{80, 81}
	wantData := h.readCommitted("c", 0)
	require.Equal(t, "a-r8-commit=true", wantData["a"])
	require.Equal(t, "k-r7-commit=true", wantData["k1"])
	require.Equal(t, "k-r8-commit=true", wantData["k2"])
	require.NotContains(t, wantData, "k0", "rounds 3 and 6, the only ones writing k0, aborted")
	offs, _ := offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, wantOffsets, offs)

	// Clean both the data partition and the group's offsets partition.
	h.compactNow(h.Partition("c", 0))
	var offsetsPartition *replica.Partition
	for id := int32(0); ; id++ {
		p, err := h.Server.Partitions().Lookup("__consumer_offsets", id)
		require.NoError(t, err, "no __consumer_offsets partition holds the group")
		if p.LogEndOffset() > 0 {
			offsetsPartition = p
			break
		}
	}
	h.compactNow(offsetsPartition)
	for _, p := range []*replica.Partition{h.Partition("c", 0), offsetsPartition} {
		st := p.Log().CleanerInfo(h.ClientEnv().Now()).Stats
		require.Positive(t, st.RecordsRemoved, "%s: the aborted records went", p.Dir())
		require.Len(t, p.Log().AbortedTxns(0, 1<<62), 2, "%s: both aborted transactions are still indexed", p.Dir())
	}
	require.Equal(t, wantData, h.readCommitted("c", 0))
	offs, _ = offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, wantOffsets, offs)

	// A restart replays the cleaned partitions.
	h.Crash()
	h.findTxnCoordinator("tx")
	h.groupCoordinatorReady("g")
	offs, codes := offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, []int16{0, 0}, codes)
	require.Equal(t, wantOffsets, offs, "the offsets replayed from the cleaned partition")
	h.RunUntil("c-0 serving", func() bool {
		p, err := h.Server.Partitions().Lookup("c", 0)
		return err == nil && p.Online() && p.LastStableOffset() == p.LogEndOffset()
	})
	require.Equal(t, wantData, h.readCommitted("c", 0))

	// Transactions go on.
	h.RunUntil("the coordinator loaded", func() bool {
		return h.describeTxn("tx").ErrorCode != kerr.CoordinatorLoadInProgress.Code
	})
	round(9, true)
	offs, _ = offsetsOf(h.fetchOffsets("g", true))
	require.Equal(t, []int64{90, 91}, offs)
	require.Equal(t, "a-r9-commit=true", h.readCommitted("c", 0)["a"])
}
