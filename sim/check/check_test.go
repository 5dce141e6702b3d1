package check

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// plantedBugs holds, for every checker of All, an event sequence with the
// bug it must catch, and one of correct events it must accept.
var plantedBugs = map[string]struct {
	good, bad []Event
}{
	"election safety": {
		good: []Event{
			{Node: "c1", Kind: RoleChange, Role: "leader", Epoch: 1, Leader: 1},
			{Node: "c2", Kind: RoleChange, Role: "follower", Epoch: 1, Leader: 1},
			{Node: "c2", Kind: RoleChange, Role: "leader", Epoch: 2, Leader: 2},
			{Node: "c3", Kind: RoleChange, Role: "candidate", Epoch: 3, Leader: -1},
		},
		bad: []Event{
			{Node: "c1", Kind: RoleChange, Role: "leader", Epoch: 1, Leader: 1},
			{Node: "c2", Kind: RoleChange, Role: "leader", Epoch: 1, Leader: 2},
		},
	},
	"applied position never goes back": {
		good: []Event{
			{Node: "c1", Inc: 1, Kind: Apply, Offset: 5},
			{Node: "c1", Inc: 2, Kind: Apply, Offset: 3}, // a restart replays from what is durable
			{Node: "c1", Inc: 2, Kind: Apply, Offset: 4},
		},
		bad: []Event{
			{Node: "c1", Inc: 1, Kind: Apply, Offset: 5},
			{Node: "c1", Inc: 1, Kind: Apply, Offset: 4},
		},
	},
	"images agree": {
		good: []Event{
			{Node: "c1", Kind: Apply, Offset: 5, PosEpoch: 1, Digest: "aa"},
			{Node: "c2", Kind: Apply, Offset: 5, PosEpoch: 1, Digest: "aa"},
			{Node: "c2", Kind: Apply, Offset: 6, PosEpoch: 1, Digest: "bb"},
		},
		bad: []Event{
			{Node: "c1", Kind: Apply, Offset: 5, PosEpoch: 1, Digest: "aa"},
			{Node: "c2", Kind: Apply, Offset: 5, PosEpoch: 1, Digest: "ab"},
		},
	},
}

func TestEveryCheckerHasAPlantedBug(t *testing.T) {
	for _, c := range All() {
		_, ok := plantedBugs[c.Name()]
		require.True(t, ok, "checker %q has no planted bug in check_test.go", c.Name())
	}
}

func TestCheckersCatchTheirPlantedBugs(t *testing.T) {
	for _, c := range All() {
		tc := plantedBugs[c.Name()]
		t.Run(c.Name(), func(t *testing.T) {
			s := NewSet(All()...)
			for i, e := range tc.good {
				e.At = time.Duration(i) * time.Millisecond
				require.Nil(t, s.Observe(e), "a correct event: %v", e)
			}
			s = NewSet(All()...)
			var f *Finding
			for i, e := range tc.bad {
				e.At = time.Duration(i) * time.Millisecond
				f = s.Observe(e)
			}
			require.NotNil(t, f, "the planted bug was not caught")
			require.Equal(t, c.Name(), f.Check)
			require.Equal(t, time.Duration(len(tc.bad)-1)*time.Millisecond, f.At, "found at the event that completes it")
			require.Len(t, f.Trail, len(tc.bad), "the trail holds the events that led there")
			require.True(t, strings.HasPrefix(f.Error(), c.Name()+": at "), f.Error())
		})
	}
}

func TestTrailIsBounded(t *testing.T) {
	s := NewSet(All()...)
	for i := range 100 {
		require.Nil(t, s.Observe(Event{At: time.Duration(i), Node: fmt.Sprint("c", i%3), Inc: 1, Kind: Apply, Offset: int64(i)}))
	}
	f := s.Observe(Event{At: 100, Node: "c0", Inc: 1, Kind: Apply, Offset: 1})
	require.NotNil(t, f)
	require.Len(t, f.Trail, trailLen)
	require.Equal(t, uint64(101), s.Events())
}
