package replica

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

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
	r := newAlterRig(t, 8, func(req *kmsg.AlterPartitionRequest, done func(kmsg.Response, error)) {
		sent = append(sent, req)
	})
	r.createReplicated("t", topicID(1), []int32{1, 2, 3}, []int32{1}, 1, map[string]string{"min.insync.replicas": "2"})
	p := r.online("t", 0)
	require.NoError(t, r.produce(p, batch(t, 3), 1).Err)
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
	r.run(2 * alterISRRetryBackoff)
	require.Greater(t, len(sent), 1)
	require.Equal(t, []int32{2}, sent[len(sent)-1].Topics[0].Partitions[0].NewISR)
	require.Equal(t, int64(0), p.HighWatermark(), "the high watermark holds while recovering")
}

// A recovering leader whose own log is the longest (ties go to it) leads
// on: it proposes its ISR of one unchanged, and once the image clears the
// LastKnownELR it serves again.
func TestRecoveringLeaderWithTheLongestLogLeadsOn(t *testing.T) {
	var sent []*kmsg.AlterPartitionRequest
	r := newAlterRig(t, 9, func(req *kmsg.AlterPartitionRequest, done func(kmsg.Response, error)) {
		sent = append(sent, req)
	})
	r.createReplicated("t", topicID(1), []int32{1, 2, 3}, []int32{1}, 1, map[string]string{"min.insync.replicas": "2"})
	p := r.online("t", 0)
	require.NoError(t, r.produce(p, batch(t, 4), 1).Err)
	r.apply(&meta.PartitionChangeRecord{TopicID: topicID(1), Partition: 0, LastKnownELR: []int32{1, 2}})
	r.replicaFetch(p, 3, 0, -1) // not in the LastKnownELR: no claim
	require.Empty(t, sent)
	r.replicaFetch(p, 2, 4, 0) // as long: the tie goes to the leader
	require.Len(t, sent, 1)
	require.Equal(t, []int32{1}, sent[0].Topics[0].Partitions[0].NewISR, "recovered: the ISR unchanged")

	r.apply(&meta.PartitionChangeRecord{TopicID: topicID(1), Partition: 0, LastKnownELR: []int32{}})
	r.run(10 * time.Millisecond)
	require.False(t, p.recovering())
	require.NoError(t, r.produce(p, batch(t, 1), 1).Err)
	res := r.replicaFetch(p, 2, 4, 0)
	require.Equal(t, int64(4), res.Read.FirstOffset, "followers fetch again")
}
