package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/internal/proccluster"
	"github.com/strata-log/strata/nemesis"
)

// calls is a Backend that records what the World asks of it.
type calls struct{ log []string }

func (c *calls) add(format string, args ...any) { c.log = append(c.log, fmt.Sprintf(format, args...)) }
func (c *calls) Kill(i int)                     { c.add("kill %d", i) }
func (c *calls) Start(i int)                    { c.add("start %d", i) }
func (c *calls) Stop(i int)                     { c.add("stop %d", i) }
func (c *calls) Cont(i int)                     { c.add("cont %d", i) }
func (c *calls) Block(from, to int)             { c.add("block %d>%d", from, to) }
func (c *calls) Unblock(from, to int)           { c.add("unblock %d>%d", from, to) }
func (c *calls) SetClogs(cl []proccluster.ClogSpec) {
	c.add("clogs %v", cl)
}
func (c *calls) DiskUsed(int) int64             { return 1 << 20 }
func (c *calls) FillDisk(i int, capacity int64) { c.add("fill %d to %d", i, capacity) }
func (c *calls) EmptyDisk(i int)                { c.add("empty %d", i) }

// at runs f in w's Run at time d.
func at(w *World, d time.Duration, f func()) { w.After(d-w.Now(), "test", f) }

// TestWorldPausesOverlapAndDieWithTheProcess: overlapping pauses stop
// once and continue at the end of the last; a kill ends a pause (no
// SIGCONT to the next process), and a node down is not paused.
func TestWorldPausesOverlapAndDieWithTheProcess(t *testing.T) {
	b := &calls{}
	w := NewWorld(b, 3, 1, nil)
	at(w, 1*time.Second, func() { w.Pause(0, 2*time.Second) })
	at(w, 2*time.Second, func() { w.Pause(0, 3*time.Second) })
	at(w, 1*time.Second, func() { w.Pause(1, time.Second) })
	at(w, 1500*time.Millisecond, func() { w.Kill(1) })
	at(w, 1600*time.Millisecond, func() { w.Pause(1, time.Second) })
	at(w, 3*time.Second, func() { w.Start(1) })
	w.Run(10 * time.Second)
	require.Equal(t, []string{"stop 0", "stop 1", "kill 1", "start 1", "cont 0"}, b.log)
	require.True(t, w.Up(1))
}

// TestWorldCutsCountLinks: a link two cuts cover is blocked once and
// unblocked when the last of them heals; healing a cut twice does
// nothing; HealNetwork lifts every cut and clog.
func TestWorldCutsCountLinks(t *testing.T) {
	b := &calls{}
	w := NewWorld(b, 3, 1, nil)
	p := w.Partition([]int{0}, []int{1, 2})
	o := w.Block(0, 1)
	p.Heal()
	p.Heal()
	require.Equal(t, []string{"block 0>1", "block 1>0", "block 0>2", "block 2>0", "unblock 1>0", "unblock 0>2", "unblock 2>0"}, b.log)
	o.Heal()
	require.Equal(t, "unblock 0>1", b.log[len(b.log)-1])

	b.log = nil
	w.Block(2, 1)
	w.Clog(0, time.Second)
	w.ClogLink(1, 2, time.Minute)
	w.HealNetwork()
	w.Run(2 * time.Minute) // the clogs' ends find nothing left to end
	require.Equal(t, []string{"block 2>1", "clogs [{0 -1}]", "clogs [{0 -1} {1 2}]", "unblock 2>1", "clogs []"}, b.log)
}

// TestWorldHealEverything: what the nemesis left in force ends.
func TestWorldHealEverything(t *testing.T) {
	b := &calls{}
	w := NewWorld(b, 3, 1, nil)
	w.Pause(0, time.Hour)
	w.Kill(2)
	w.Block(1, 0)
	w.SetDiskFaults(1, nemesis.DiskFaultConfig{CapacityBytes: w.DiskUsedBytes(1) + 4096})
	w.SetDiskFaults(0, nemesis.DiskFaultConfig{})
	w.HealEverything()
	require.Equal(t, []string{"stop 0", "kill 2", "block 1>0", "fill 1 to 1052672", "cont 0", "unblock 1>0", "empty 1", "start 2"}, b.log)
	require.True(t, w.Up(2))
}
