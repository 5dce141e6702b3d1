package log_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/simtest"
)

// tb is what the helpers need from *testing.T, *testing.B and *rapid.T.
type tb = simtest.TB

// testDir is the partition directory the tests use.
const testDir = "data/topic-0"

// verboseLog is where the simulated processes log: nowhere, or stderr
// with STRATA_LOG_TEST_VERBOSE set.
func verboseLog() io.Writer {
	if os.Getenv("STRATA_LOG_TEST_VERBOSE") != "" {
		return os.Stderr
	}
	return nil
}

// rig is one simulated process (simtest.Rig) whose log a test drives.
type rig struct {
	*simtest.Rig
	cfg log.Config
	l   *log.Log
}

func newRig(t tb, seed uint64, cfg log.Config) *rig {
	t.Helper()
	r := &rig{Rig: simtest.New(t, sim.Config{Seed: seed, Log: verboseLog()}), cfg: cfg}
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

// open opens the log and waits until it has settled.
func (r *rig) open() {
	r.T.Helper()
	r.openBusy()
	require.NoError(r.T, r.flush())
	require.False(r.T, r.l.Busy())
}

// openBusy opens the log without waiting for it to settle.
func (r *rig) openBusy() {
	r.T.Helper()
	l, err := log.Open(r.Env, testDir, r.cfg)
	require.NoError(r.T, err)
	r.l = l
}

// tryOpen opens the log and returns the error.
func (r *rig) tryOpen() error {
	l, err := log.Open(r.Env, testDir, r.cfg)
	r.l = l
	return err
}

// crash power-fails the process and starts a new incarnation (the log is
// not reopened).
func (r *rig) crash() {
	r.l = nil
	r.Restart()
}

func (r *rig) flush() error {
	return r.Wait(func(done func(error)) { r.l.Flush(r.l.LogEndOffset(), done) })
}

func (r *rig) shutdown() {
	r.T.Helper()
	require.NoError(r.T, r.Wait(r.l.Shutdown))
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
