package attack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/strata-log/strata/internal/proccluster"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readPartition reads every record of a partition, from offset 0 to its
// end at the call.
func readPartition(t *testing.T, node *proccluster.Node, topic string, partition int32) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	ends, err := newAdmin(t, node).ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	end, ok := ends.Lookup(topic, partition)
	require.True(t, ok, "no end offset of %s/%d", topic, partition)
	require.NoError(t, end.Err)
	if end.Offset == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.BrokerAddr), kgo.DialTimeout(dialTimeout),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < end.Offset-1 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "reading %s/%d: %d records, the last at %d, end %d", topic, partition, len(out), lastOffset(out), end.Offset)
		fs.EachError(func(_ string, _ int32, err error) { require.NoError(t, err, "reading %s/%d", topic, partition) })
		out = append(out, fs.Records()...)
	}
	return out
}

func lastOffset(rs []*kgo.Record) int64 {
	if len(rs) == 0 {
		return -1
	}
	return rs[len(rs)-1].Offset
}

// checkRecords: a consumer reads exactly the good records. The victim's
// topic holds every acknowledged record at its offset and nothing else;
// the topics the malformed batches went to hold exactly the valid batches
// the attacks had acknowledged (and the compaction check's survivors);
// the bombs' topic holds nothing; the mutation topic holds only records
// some valid Produce of the phase carried.
func checkRecords(t *testing.T, r *run, v *victim) {
	t.Helper()
	acked := v.ackedRecords()
	got := readPartition(t, r.node, victimTopic, 0)
	require.Len(t, got, len(acked), "the victim's topic holds %d records; %d were acknowledged", len(got), len(acked))
	byOffset := map[int64]ackedRecord{}
	for _, a := range acked {
		byOffset[a.offset] = a
	}
	for i, rec := range got {
		require.Equal(t, int64(i), rec.Offset, "victim record %d", i)
		a, ok := byOffset[rec.Offset]
		require.True(t, ok, "victim offset %d was never acknowledged", rec.Offset)
		require.Equal(t, a.key, string(rec.Key), "key at victim offset %d", rec.Offset)
		require.Equal(t, a.value, string(rec.Value), "value at victim offset %d", rec.Offset)
	}

	for _, topic := range []string{deleteTopic, compactTopic} {
		r.mu.Lock()
		want := r.good[topic][0]
		r.mu.Unlock()
		got := map[int64]goodRecord{}
		for _, rec := range readPartition(t, r.node, topic, 0) {
			got[rec.Offset] = goodRecord{key: string(rec.Key), value: string(rec.Value)}
		}
		require.Equal(t, len(want), len(got), "%s holds %d records; %d good ones were acknowledged", topic, len(got), len(want))
		for off, w := range want {
			require.Equal(t, w, got[off], "%s at offset %d", topic, off)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	ends, err := newAdmin(t, r.node).ListEndOffsets(ctx, bombTopic)
	require.NoError(t, err)
	require.NoError(t, ends.Error())
	ends.Each(func(o kadm.ListedOffset) {
		require.Zero(t, o.Offset, "%s/%d holds %d records: a bomb or a repeated partition was appended", bombTopic, o.Partition, o.Offset)
	})

	mut := 0
	for p := range int32(2) {
		for _, rec := range readPartition(t, r.node, mutTopic, p) {
			want, ok := r.mutValid.get(string(rec.Key))
			require.True(t, ok, "%s/%d at %d holds key %q, of no valid request", mutTopic, p, rec.Offset, rec.Key)
			require.Equal(t, want, string(rec.Value), "%s/%d at %d", mutTopic, p, rec.Offset)
			mut++
		}
	}
	t.Logf("records checked: %d of the victim, %d and %d good records of %s and %s, %d of %s (all from valid requests), none in %s",
		len(acked), len(r.good[deleteTopic][0]), len(r.good[compactTopic][0]), deleteTopic, compactTopic, mut, mutTopic, bombTopic)
}

// checkCompaction: compaction still runs on the compacted topic the
// malformed batches went to, and on the delete-policy one once switched
// to compact (finding 2: its compaction had stopped for good). Ten keys
// are written twice, in segments that roll after 100 ms; the cleaner
// (every 500 ms) must remove every first value. min.cleanable.dirty.ratio
// is 0: the twenty records are well under 1% of the thousands of good
// records the malformed phase left, so any larger ratio would leave them
// dirty by rule (as a first run of this check, at 0.01, showed).
func checkCompaction(t *testing.T, r *run) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
	defer cancel()
	adm := newAdmin(t, r.node)
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
		{Name: "segment.ms", Value: kadm.StringPtr("100")},
		{Name: "min.cleanable.dirty.ratio", Value: kadm.StringPtr("0")},
	}, deleteTopic)
	require.NoError(t, err)
	for _, rr := range resp {
		require.NoError(t, rr.Err, "switching %s to compact", rr.Name)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.node.BrokerAddr), kgo.DialTimeout(dialTimeout), kgo.ProducerLinger(0))
	require.NoError(t, err)
	defer cl.Close()
	start := time.Now()
	for _, topic := range []string{compactTopic, deleteTopic} {
		for _, round := range []string{"old", "new"} {
			var recs []*kgo.Record
			for k := range 10 {
				recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("dup-%d", k)), Value: []byte(fmt.Sprintf("%s-%d", round, k))})
			}
			require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
			time.Sleep(200 * time.Millisecond) // past segment.ms: the next append rolls
		}
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("roll-" + topic), Value: []byte("last")}).FirstErr())
	}
	for _, topic := range []string{compactTopic, deleteTopic} {
		var recs []*kgo.Record
		require.Eventually(t, func() bool {
			recs = readPartition(t, r.node, topic, 0)
			for _, rec := range recs {
				if strings.HasPrefix(string(rec.Value), "old-") {
					return false
				}
			}
			return true
		}, 2*opTimeout, 200*time.Millisecond, "%s was never compacted: its first values of dup-0..9 are still there", topic)
		seen := map[string]int{}
		for _, rec := range recs {
			key := string(rec.Key)
			if strings.HasPrefix(key, "dup-") || strings.HasPrefix(key, "roll-") {
				seen[key]++
				r.addGood(topic, 0, rec.Offset, []goodRecord{{key: key, value: string(rec.Value)}})
			}
		}
		require.Len(t, seen, 11, "%s after compaction: %v", topic, seen)
		for k, n := range seen {
			require.Equal(t, 1, n, "%s holds %d records of %s after compaction", topic, n, k)
		}
	}
	t.Logf("compaction removed the first values on %s and %s (switched from delete) within %v", compactTopic, deleteTopic, time.Since(start).Round(10*time.Millisecond))
}

// requireCleanStop: the node logged its stop, complete.
func requireCleanStop(t *testing.T, node *proccluster.Node) {
	t.Helper()
	logs := strings.Join(node.CurrentLogs(), "\n")
	require.Contains(t, logs, `msg="node stopped"`)
	require.NotContains(t, logs, "node shutdown incomplete")
}

// damageWords are what a start logs when it finds its data damaged or
// not cleanly closed (core/log's recovery and scrub).
var damageWords = []string{"DAMAGED", "torn tail", "failed before", "failure marker", "unreadable", "cutting batches", "lowering", "rescanning", "emptying", "stale"}

// requireCleanStart: the restart logged no error and no damage, and the
// scrub counted no damaged log.
func requireCleanStart(t *testing.T, node *proccluster.Node) {
	t.Helper()
	var warns []string
	for _, l := range node.CurrentLogs() {
		require.NotContains(t, l, "level=ERROR", "the restart logged an error")
		for _, w := range damageWords {
			require.NotContains(t, l, w, "the restart found damage")
		}
		if strings.Contains(l, "level=WARN") {
			warns = append(warns, l)
		}
	}
	if len(warns) > 0 {
		t.Logf("the restart's warnings:\n%s", strings.Join(warns, "\n"))
	}
	hc := &http.Client{Timeout: probeTimeout}
	resp, err := hc.Get("http://" + node.MetricsAddr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "strata_log_scrub_damaged_total ") {
			require.Equal(t, "strata_log_scrub_damaged_total 0", line)
		}
	}
}
