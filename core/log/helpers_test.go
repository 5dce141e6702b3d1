package log_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
)

// tb is what the helpers need from *testing.T, *testing.B and *rapid.T.
type tb interface {
	require.TestingT
	Helper()
}

// testDir is the partition directory the tests use.
const testDir = "data/topic-0"

// rig is one simulated process whose log a test drives from outside the
// loop, between runs of the simulator (everything is one goroutine).
type rig struct {
	t   tb
	s   *sim.Sim
	p   *sim.Process
	e   env.Env
	cfg log.Config
	l   *log.Log
}

func newRig(t tb, seed uint64, cfg log.Config) *rig {
	t.Helper()
	var w io.Writer
	if os.Getenv("STRATA_LOG_TEST_VERBOSE") != "" {
		w = os.Stderr
	}
	r := &rig{t: t, s: sim.New(sim.Config{Seed: seed, Log: w}), cfg: cfg}
	r.p = r.s.AddProcess("n1", func(e env.Env) { r.e = e })
	r.p.Start()
	r.run(0)
	r.open()
	return r
}

// smallConfig has segments of a few KiB and dense indexes, so that tests
// roll, index and retain a lot with little data.
func smallConfig() log.Config {
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 256
	cfg.SegmentIndexBytes = 1024
	cfg.RetentionTime = -1
	cfg.RetentionBytes = -1
	cfg.MaxOpenFiles = 6
	cfg.RecoveryCheckpointBytes = 8192
	return cfg
}

func (r *rig) run(d time.Duration) {
	r.t.Helper()
	require.NoError(r.t, r.s.RunFor(d))
}

// open opens the log and waits until it has settled.
func (r *rig) open() {
	r.t.Helper()
	r.openBusy()
	require.NoError(r.t, r.flush())
	require.False(r.t, r.l.Busy())
}

// openBusy opens the log without waiting for it to settle.
func (r *rig) openBusy() {
	r.t.Helper()
	l, err := log.Open(r.e, testDir, r.cfg)
	require.NoError(r.t, err)
	r.l = l
}

// tryOpen opens the log and returns the error.
func (r *rig) tryOpen() error {
	l, err := log.Open(r.e, testDir, r.cfg)
	r.l = l
	return err
}

// crash power-fails the process and starts a new incarnation (the log is
// not reopened).
func (r *rig) crash() {
	r.p.Crash()
	r.l = nil
	r.p.Start()
	r.run(0)
}

// wait runs the simulation until issue's callback reports and returns its
// error.
func (r *rig) wait(issue func(done func(error))) error {
	r.t.Helper()
	var got error
	called := false
	issue(func(err error) {
		require.False(r.t, called, "callback ran twice")
		called, got = true, err
	})
	require.False(r.t, called, "callback ran inline")
	for i := 0; i < 100000 && !called; i++ {
		r.run(time.Millisecond)
	}
	require.True(r.t, called, "callback never ran")
	return got
}

func (r *rig) flush() error {
	return r.wait(func(done func(error)) { r.l.Flush(r.l.LogEndOffset(), done) })
}

func (r *rig) shutdown() {
	r.t.Helper()
	require.NoError(r.t, r.wait(r.l.Shutdown))
	r.l = nil
}

// batchSpec describes a batch to build.
type batchSpec struct {
	records   int
	valueSize int
	timestamp int64 // of the first record; later ones add 1 ms each
	seed      byte
}

// build returns the bytes of a producer batch.
func build(spec batchSpec) []byte {
	b := record.NewBuilder()
	for i := 0; i < spec.records; i++ {
		v := bytes.Repeat([]byte{spec.seed + byte(i)}, spec.valueSize)
		b.Append(spec.timestamp+int64(i), []byte(fmt.Sprintf("k%d", i)), v)
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}

// readRegion returns the bytes of a read result and releases it.
func readRegion(t tb, res *log.ReadResult) []byte {
	t.Helper()
	defer res.Release()
	if res.Size == 0 {
		return nil
	}
	buf := make([]byte, res.Size)
	n, err := res.File.ReadAt(buf, res.Position)
	require.NoError(t, err)
	require.Equal(t, int(res.Size), n)
	return buf
}

// storedBatch is a batch as read back.
type storedBatch struct {
	base, last int64
	bytes      []byte
}

// splitBatches splits region bytes into whole, CRC-valid batches.
func splitBatches(t tb, buf []byte) []storedBatch {
	t.Helper()
	var out []storedBatch
	sp := record.NewSplitter(buf, len(buf)+1, record.CheckStored)
	for sp.Next() {
		b := sp.Batch()
		out = append(out, storedBatch{base: b.BaseOffset(), last: b.LastOffset(), bytes: append([]byte(nil), b.Bytes()...)})
	}
	require.NoError(t, sp.Err(), "a read returned something other than whole valid batches")
	return out
}

// readAll reads the whole log from its start, region by region, checking
// that the regions are whole valid batches that follow each other.
func readAll(t tb, l *log.Log) []storedBatch {
	t.Helper()
	var out []storedBatch
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		res, err := l.Read(off, 1<<20, -1)
		require.NoError(t, err)
		if res.Size == 0 {
			break
		}
		bs := splitBatches(t, readRegion(t, &res))
		require.NotEmpty(t, bs)
		require.GreaterOrEqual(t, bs[0].last, off) // its base may lie beyond off, across a gap
		for _, b := range bs {
			if len(out) > 0 {
				require.Greater(t, b.base, out[len(out)-1].last, "batches overlap")
			}
			out = append(out, b)
		}
		off = out[len(out)-1].last + 1
	}
	return out
}

func isCorrupt(err error) bool { return errors.Is(err, log.ErrCorrupt) }
