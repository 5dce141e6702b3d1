package sim_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/sim"
)

func (r *rig) upload(name, data string) (err error) {
	r.Await(func(done func()) {
		r.Env.Bucket().Upload(name, []byte(data), func(e error) { err = e; done() })
	})
	return err
}

func (r *rig) get(name string) (data []byte, err error) {
	r.Await(func(done func()) {
		r.Env.Bucket().Get(name, func(d []byte, e error) { data, err = d, e; done() })
	})
	return data, err
}

func (r *rig) getRange(name string, off, length int64) (data []byte, err error) {
	r.Await(func(done func()) {
		r.Env.Bucket().GetRange(name, off, length, func(d []byte, e error) { data, err = d, e; done() })
	})
	return data, err
}

func (r *rig) del(name string) (err error) {
	r.Await(func(done func()) {
		r.Env.Bucket().Delete(name, func(e error) { err = e; done() })
	})
	return err
}

func (r *rig) list(prefix string) (names []string, err error) {
	r.Await(func(done func()) {
		r.Env.Bucket().List(prefix, func(n []string, e error) { names, err = n, e; done() })
	})
	return names, err
}

func TestBucketRoundTripAndLatency(t *testing.T) {
	r := newRig(t, 1)
	r.Sim.Bucket().SetFaults(sim.BucketFaults{LatencyMin: 10 * time.Millisecond, LatencyMax: 10 * time.Millisecond})
	data := []byte("segment bytes")
	start := r.Sim.Now()
	var at time.Duration
	r.Env.Bucket().Upload("t/0/00.log", data, func(err error) { require.NoError(t, err); at = r.Sim.Now() })
	r.Run(time.Second)
	require.Equal(t, 20*time.Millisecond, at-start, "request leg plus response leg")

	got, err := r.get("t/0/00.log")
	require.NoError(t, err)
	require.Len(t, got, len(data))
	got[0] = 'Y'
	stored, ok := r.Sim.Bucket().Object("t/0/00.log")
	require.True(t, ok)
	require.NotEqual(t, byte('Y'), stored[0], "Get returns a copy")
	require.Equal(t, []string{"t/0/00.log"}, r.Sim.Bucket().Objects())
}

func TestBucketGetMissingIsNotExist(t *testing.T) {
	r := newRig(t, 2)
	_, err := r.get("nope")
	require.ErrorIs(t, err, env.ErrNotExist)
	_, err = r.getRange("nope", 0, 10)
	require.ErrorIs(t, err, env.ErrNotExist)
	_, err = r.getRange("nope", 0, 0)
	require.ErrorIs(t, err, env.ErrNotExist)
	require.NoError(t, r.del("nope"), "deleting a missing object succeeds")
}

func TestBucketGetRangeBounds(t *testing.T) {
	r := newRig(t, 3)
	require.NoError(t, r.upload("o", "0123456789"))
	for _, c := range []struct {
		off, length int64
		want        string
	}{
		{0, 10, "0123456789"},
		{2, 3, "234"},
		{8, 5, "89"}, // fewer at the end
		{10, 5, ""},  // at the end
		{20, 5, ""},  // past the end
		{3, 0, ""},
	} {
		got, err := r.getRange("o", c.off, c.length)
		require.NoError(t, err, "range %d+%d", c.off, c.length)
		require.Equal(t, c.want, string(got), "range %d+%d", c.off, c.length)
	}
	_, err := r.getRange("o", -1, 5)
	require.Error(t, err)
	_, err = r.getRange("o", 0, -1)
	require.Error(t, err)
}

func TestBucketFailureHasNoEffect(t *testing.T) {
	r := newRig(t, 4)
	require.NoError(t, r.upload("keep", "v1"))
	r.Sim.Bucket().SetFaults(sim.BucketFaults{ErrorProbability: 1})
	err := r.upload("new", "x")
	require.ErrorIs(t, err, env.ErrIO)
	require.False(t, errors.Is(err, sim.ErrBucketApplied))
	require.Error(t, r.del("keep"))
	_, err = r.get("keep")
	require.Error(t, err)
	r.Sim.Bucket().SetFaults(sim.BucketFaults{})
	require.Equal(t, []string{"keep"}, r.Sim.Bucket().Objects())
	require.Equal(t, uint64(3), r.Sim.Bucket().Stats().Failed)
}

func TestBucketAmbiguousFailureTakesEffect(t *testing.T) {
	r := newRig(t, 5)
	r.Sim.Bucket().SetFaults(sim.BucketFaults{AmbiguousProbability: 1})
	err := r.upload("a", "data")
	require.ErrorIs(t, err, env.ErrTimeout)
	require.ErrorIs(t, err, sim.ErrBucketApplied)
	got, ok := r.Sim.Bucket().Object("a")
	require.True(t, ok, "an ambiguous upload took effect")
	require.Equal(t, "data", string(got))

	err = r.del("a")
	require.ErrorIs(t, err, sim.ErrBucketApplied)
	require.Empty(t, r.Sim.Bucket().Objects(), "an ambiguous delete took effect")

	_, err = r.get("a")
	require.Error(t, err, "a read with an injected error fails")
	require.False(t, errors.Is(err, sim.ErrBucketApplied))
}

func TestBucketCrashDropsCompletionButNotEffect(t *testing.T) {
	r := newRig(t, 6)
	called := false
	r.Env.Bucket().Upload("seg", []byte("x"), func(error) { called = true })
	r.Env.Bucket().Delete("never-there", func(error) { called = true })
	r.Proc.Crash()
	r.Run(time.Second)
	require.False(t, called)
	require.Equal(t, []string{"seg"}, r.Sim.Bucket().Objects(), "the upload landed although its caller crashed")

	// A restart in the middle of an operation does not deliver the old
	// incarnation's completion to the new one.
	r.Proc.Start()
	r.Run(0)
	old := r.Env.Bucket()
	old.Upload("seg2", []byte("y"), func(error) { called = true })
	r.Proc.Restart()
	r.Run(time.Second)
	require.False(t, called)
	_, ok := r.Sim.Bucket().Object("seg2")
	require.True(t, ok)

	// The dead incarnation's handle issues nothing.
	old.Upload("seg3", []byte("z"), func(error) { called = true })
	r.Run(time.Second)
	require.False(t, called)
	_, ok = r.Sim.Bucket().Object("seg3")
	require.False(t, ok)
}

func TestBucketListIsRecursiveSortedAndDirectoryScoped(t *testing.T) {
	r := newRig(t, 7)
	for _, name := range []string{"t/1/b", "t/1/a", "t/2/x/y", "t10/z", "u"} {
		require.NoError(t, r.upload(name, "."))
	}
	names, err := r.list("t")
	require.NoError(t, err)
	require.Equal(t, []string{"t/1/a", "t/1/b", "t/2/x/y"}, names)
	names, err = r.list("t/1/")
	require.NoError(t, err)
	require.Equal(t, []string{"t/1/a", "t/1/b"}, names)
	names, err = r.list("")
	require.NoError(t, err)
	require.Equal(t, []string{"t/1/a", "t/1/b", "t/2/x/y", "t10/z", "u"}, names)
}

func TestBucketStaleListing(t *testing.T) {
	r := newRig(t, 8)
	r.Sim.Bucket().SetFaults(sim.BucketFaults{StaleListWindow: time.Minute})
	for i := 0; i < 20; i++ {
		require.NoError(t, r.upload(fmt.Sprintf("new/%02d", i), "."))
	}
	require.NoError(t, r.upload("gone/x", "."))
	require.NoError(t, r.del("gone/x"))

	names, err := r.list("new")
	require.NoError(t, err)
	require.Less(t, len(names), 20, "a listing right after the uploads omits some")
	require.IsIncreasing(t, names)
	sawGhost := false
	for i := 0; i < 20 && !sawGhost; i++ {
		names, err = r.list("gone")
		require.NoError(t, err)
		sawGhost = len(names) == 1
	}
	require.True(t, sawGhost, "a recent delete still shows sometimes")

	r.Run(2 * time.Minute)
	names, err = r.list("new")
	require.NoError(t, err)
	require.Len(t, names, 20, "after the window listings are complete")
	names, err = r.list("gone")
	require.NoError(t, err)
	require.Empty(t, names)
}

func TestBucketDeterministic(t *testing.T) {
	run := func() (uint64, []string) {
		r := newRig(t, 9)
		r.Sim.Bucket().SetFaults(sim.BucketFaults{ErrorProbability: 0.2, AmbiguousProbability: 0.2, StaleListWindow: time.Second})
		for i := 0; i < 30; i++ {
			r.Env.Bucket().Upload(fmt.Sprintf("o/%d", i%7), []byte{byte(i)}, func(error) {})
			if i%3 == 0 {
				r.Env.Bucket().Delete(fmt.Sprintf("o/%d", i%5), func(error) {})
			}
			r.Env.Bucket().List("o", func([]string, error) {})
			r.Run(time.Millisecond)
		}
		r.Run(time.Second)
		return r.Sim.TraceHash(), r.Sim.Bucket().Objects()
	}
	h1, o1 := run()
	h2, o2 := run()
	require.Equal(t, h1, h2)
	require.Equal(t, o1, o2)
}
