package replica

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// newLoneLeader is a recording rig (newRecordingRig) leading partition t-0
// of replicas 1, 2 and 3 with an ISR of itself alone and
// min.insync.replicas 2, holding n records acknowledged by the ISR.
func newLoneLeader(t *testing.T, seed uint64, n int, sent *[]*kmsg.AlterPartitionRequest) (*rig, *Partition) {
	t.Helper()
	r := newRecordingRig(t, seed, sent)
	r.createReplicated("t", topicID(1), []int32{1, 2, 3}, []int32{1}, 1, map[string]string{"min.insync.replicas": "2"})
	p := r.online("t", 0)
	require.NoError(t, r.produce(p, batch(t, n), 1).Err)
	return r, p
}

// A leader listed in its partition's LastKnownELR (a forgotten replica
// that stayed the ISR's last member: its disk may have lost records)
// recovers before it serves: it appends nothing, serves no consumer, and
// answers a fetch from another member with no batches and no diverging
// epoch, so that a follower holding more committed records than it does
// not truncate to it (replicated seeds 573 and 771 with -damage-logs).
// Once every other member claimed its log end, the longest log leads: the
// leader hands off to a follower with a longer log, or, holding the
// longest itself, proposes its ISR unchanged (recovered).
func TestRecoveringLeaderHandsOffToTheLongestLog(t *testing.T) {
	var sent []*kmsg.AlterPartitionRequest
	r, p := newLoneLeader(t, 8, 3, &sent)
	r.apply(&meta.PartitionChangeRecord{TopicID: topicID(1), Partition: 0, LastKnownELR: []int32{2, 3, 1}})
	require.True(t, p.recovering())

	require.ErrorIs(t, r.produce(p, batch(t, 1), 1).Err, ErrNotLeader, "a recovering leader appends nothing")
	_, err := p.Read(0, 1<<20, -1)
	require.ErrorIs(t, err, ErrNotLeader, "nor serves consumers")

	// Follower 2 holds a longer log in the same epoch: no divergence, no
	// batches, and no hand-off until 3 has claimed too.
	res := r.replicaFetch(p, 2, 9, 0)
	require.Nil(t, res.Diverging, "a recovering leader never makes a follower truncate")
	require.Zero(t, res.Read.Size)
	require.Empty(t, sent, "member 3 has not claimed yet")

	// A new partition epoch (the controller's answer to a member that came
	// back with lost data) voids the claims: 2 must claim again.
	r.apply(&meta.PartitionChangeRecord{TopicID: topicID(1), Partition: 0, LastKnownELR: []int32{2, 3, 1}})
	r.replicaFetch(p, 3, 2, 0)
	require.Empty(t, sent, "2's claim was voided")
	r.replicaFetch(p, 2, 9, 0)
	require.Len(t, sent, 1)
	got := sent[0].Topics[0].Partitions[0]
	require.Equal(t, []int32{2}, got.NewISR, "the longest log leads")
	require.Equal(t, p.LeaderEpoch(), got.LeaderEpoch)

	// Unanswered, it asks again.
	r.Run(2 * alterISRRetryBackoff)
	require.Greater(t, len(sent), 1)
	require.Equal(t, []int32{2}, sent[len(sent)-1].Topics[0].Partitions[0].NewISR)
	require.Equal(t, int64(0), p.HighWatermark(), "the high watermark holds while recovering")
}

// A recovering leader whose own log is the longest (ties go to it) leads
// on: it proposes its ISR of one unchanged, and once the image clears the
// LastKnownELR it serves again.
func TestRecoveringLeaderWithTheLongestLogLeadsOn(t *testing.T) {
	var sent []*kmsg.AlterPartitionRequest
	r, p := newLoneLeader(t, 9, 4, &sent)
	r.apply(&meta.PartitionChangeRecord{TopicID: topicID(1), Partition: 0, LastKnownELR: []int32{1, 2}})
	r.replicaFetch(p, 3, 0, -1) // not in the LastKnownELR: no claim
	require.Empty(t, sent)
	r.replicaFetch(p, 2, 4, 0) // as long: the tie goes to the leader
	require.Len(t, sent, 1)
	require.Equal(t, []int32{1}, sent[0].Topics[0].Partitions[0].NewISR, "recovered: the ISR unchanged")

	r.apply(&meta.PartitionChangeRecord{TopicID: topicID(1), Partition: 0, LastKnownELR: []int32{}})
	r.Run(10 * time.Millisecond)
	require.False(t, p.recovering())
	require.NoError(t, r.produce(p, batch(t, 1), 1).Err)
	res := r.replicaFetch(p, 2, 4, 0)
	require.Equal(t, int64(4), res.Read.FirstOffset, "followers fetch again")
}

// A partition that began truncating its log as a follower (a diverging
// epoch) and is made leader before the truncation ends serves nothing and
// moves no high watermark until its log reopens: the end it would count
// is being cut (replicated seed 2455: the new leader moved its high
// watermark to 501, a consumer read there, and the log then ended at
// 495). Produces wait for the reopen, as for an opening log.
func TestLeaderTruncatingServesNothing(t *testing.T) {
	r := newRig(t, 10)
	r.createReplicated("t", topicID(1), []int32{testNode, 2}, []int32{testNode, 2}, testNode, nil)
	p := r.online("t", 0)
	for range 3 {
		require.NoError(t, r.produce(p, batch(t, 1), 1).Err)
	}
	l := p.Log()
	require.Equal(t, int64(3), l.DurableOffset())
	r.apply(&meta.PartitionChangeRecord{TopicID: topicID(1), Partition: 0, Leader: leaderPtr(2)}) // following 2

	var finish func()
	p.truncateAndReopen("a test's diverging epoch", func(done func(error)) {
		finish = func() { l.Truncate(1, done) }
	})
	r.apply(&meta.PartitionChangeRecord{TopicID: topicID(1), Partition: 0, Leader: leaderPtr(testNode)})
	require.True(t, p.IsLeader())
	_, err := p.ReplicaFetch(2, 3, 0, p.LeaderEpoch(), 1<<20)
	require.ErrorIs(t, err, ErrOpening, "no follower fetch while the log is cut")
	require.Equal(t, int64(0), p.HighWatermark(), "no high watermark from the end being cut")
	held := r.produceAsync(p, batch(t, 1), 1)
	r.Run(10 * time.Millisecond)
	require.Nil(t, *held, "a produce waits for the reopen")

	finish()
	r.Run(time.Second)
	require.True(t, p.Online())
	require.NotNil(t, *held)
	require.NoError(t, (*held).Err)
	require.Equal(t, int64(2), p.LogEndOffset(), "the truncated log and the held produce")
	require.Equal(t, int64(1), (*held).BaseOffset)
	res := r.replicaFetch(p, 2, 3, 0)
	require.NotNil(t, res.Diverging, "the follower's 3 in epoch 0 ends at 1 here")
	require.Equal(t, int64(1), res.Diverging.EndOffset)
	require.Equal(t, int64(0), p.HighWatermark(), "2 has not fetched past its divergence")
}
