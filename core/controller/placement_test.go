package controller

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/meta"
)

// TestPlacementMatchesKafka checks the round robin against the expected
// assignment of Kafka's AdminRackAwareTest / AdminUtilsTest
// (testReplicaAssignment: brokers 0..4, 10 partitions, RF 3, fixed start
// index 0).
func TestPlacementMatchesKafka(t *testing.T) {
	got := placement{startIndex: 0, shift: 0}.place([]int32{0, 1, 2, 3, 4}, 0, 10, 3)
	want := [][]int32{
		{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1},
		{0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2},
	}
	require.Equal(t, want, got)
}

func TestPlacementProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		n := 1 + rng.IntN(8)
		brokers := make([]int32, n)
		for i := range brokers {
			brokers[i] = int32(10 + 3*i)
		}
		rf := 1 + rng.IntN(n)
		first := int32(rng.IntN(20))
		count := int32(rng.IntN(40))
		pl := drawPlacement(rng, n)
		got := pl.place(brokers, first, count, rf)
		require.Len(t, got, int(count))
		leaders := map[int32]int{}
		for _, replicas := range got {
			require.Len(t, replicas, rf)
			for i, r := range replicas {
				require.Contains(t, brokers, r)
				require.False(t, slices.Contains(replicas[:i], r), "replica %d twice in %v", r, replicas)
			}
			leaders[replicas[0]]++
		}
		// Leaders spread evenly: counts differ by at most one.
		lo, hi := int(count), 0
		for _, b := range brokers {
			lo, hi = min(lo, leaders[b]), max(hi, leaders[b])
		}
		if count >= int32(n) {
			require.LessOrEqual(t, hi-lo, 1, "leaders %v", leaders)
		}
		// Lists do not alias: appending to one leaves the next alone.
		if len(got) > 1 {
			next := slices.Clone(got[1])
			_ = append(got[0], 99)
			require.Equal(t, next, got[1])
		}
	}
}

func TestElectChange(t *testing.T) {
	topic := meta.UUID{1}
	active := func(ids ...int32) func(int32) bool {
		return func(id int32) bool { return slices.Contains(ids, id) }
	}
	leader := func(id int32) *int32 { return &id }
	cases := []struct {
		name       string
		p          meta.Partition
		remove     int32
		acceptable func(int32) bool
		unclean    bool
		wantLeader *int32
		wantISR    []int32
		noChange   bool
	}{
		{name: "remove follower", p: meta.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
			remove: 2, acceptable: active(1, 3), wantISR: []int32{1, 3}},
		{name: "remove leader", p: meta.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
			remove: 1, acceptable: active(2, 3), wantLeader: leader(2), wantISR: []int32{2, 3}},
		{name: "replica order decides", p: meta.Partition{Replicas: []int32{1, 3, 2}, ISR: []int32{2, 1, 3}, Leader: 1},
			remove: 1, acceptable: active(2, 3), wantLeader: leader(3), wantISR: []int32{2, 3}},
		{name: "skip inactive ISR member", p: meta.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
			remove: 1, acceptable: active(3), wantLeader: leader(3), wantISR: []int32{2, 3}},
		{name: "last member stays", p: meta.Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1},
			remove: 1, acceptable: active(2), wantLeader: leader(meta.NoLeader)},
		{name: "unclean", p: meta.Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1},
			remove: 1, acceptable: active(2), unclean: true, wantLeader: leader(2), wantISR: []int32{2}},
		{name: "unclean nobody", p: meta.Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1},
			remove: 1, acceptable: active(), unclean: true, wantLeader: leader(meta.NoLeader)},
		{name: "not a member", p: meta.Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
			remove: 3, acceptable: active(1, 2), noChange: true},
		{name: "elect leaderless", p: meta.Partition{Replicas: []int32{1, 2}, ISR: []int32{2}, Leader: meta.NoLeader},
			remove: meta.NoLeader, acceptable: active(2), wantLeader: leader(2)},
		{name: "leaderless stays", p: meta.Partition{Replicas: []int32{1, 2}, ISR: []int32{2}, Leader: meta.NoLeader},
			remove: meta.NoLeader, acceptable: active(1), noChange: true},
		{name: "inactive leader replaced", p: meta.Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
			remove: meta.NoLeader, acceptable: active(2), wantLeader: leader(2)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rules := electionRules{evict: func(b int32) bool { return b == tc.remove }, acceptable: tc.acceptable}
			rec := electChange(topic, &tc.p, rules, tc.unclean, 1)
			if tc.noChange {
				require.Nil(t, rec)
				return
			}
			require.NotNil(t, rec)
			if tc.wantLeader == nil {
				require.Nil(t, rec.Leader)
			} else {
				require.NotNil(t, rec.Leader)
				require.Equal(t, *tc.wantLeader, *rec.Leader)
			}
			require.Equal(t, tc.wantISR, rec.ISR)
		})
	}
}
