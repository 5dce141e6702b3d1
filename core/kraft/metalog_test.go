package kraft

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/sim"
)

// metaLogHarness runs a metaLog in one simulated process.
type metaLogHarness struct {
	t    *testing.T
	s    *sim.Sim
	p    *sim.Process
	cfg  Config
	j    *metaLog
	err  error
	fail error // reported through onFail
}

func newMetaLogHarness(t *testing.T, seed uint64) *metaLogHarness {
	h := &metaLogHarness{t: t, s: sim.New(sim.Config{Seed: seed})}
	h.cfg = Config{LogSegmentBytes: 2048}
	h.p = h.s.AddProcess("m", func(e env.Env) {
		h.j, _, h.err = openMetaLog(e, h.cfg, e.Logger())
		if h.err == nil {
			h.j.onFail = func(err error) { h.fail = err }
		}
	})
	return h
}

// start starts (or restarts) the process and waits until the log settled.
func (h *metaLogHarness) start() {
	h.t.Helper()
	h.j, h.err = nil, nil
	h.p.Start()
	h.run(time.Millisecond)
	if h.err != nil {
		h.t.Fatalf("open: %v", h.err)
	}
	h.await("settle", h.j.settle)
}

// await starts what with start and runs until it calls back; an error
// fails the test.
func (h *metaLogHarness) await(what string, start func(done func(error))) {
	h.t.Helper()
	done := false
	start(func(err error) {
		if err != nil {
			h.t.Errorf("%s: %v", what, err)
		}
		done = true
	})
	h.runUntil(what, func() bool { return done })
}

func (h *metaLogHarness) run(d time.Duration) {
	h.t.Helper()
	if err := h.s.RunFor(d); err != nil {
		h.t.Fatal(err)
	}
}

func (h *metaLogHarness) runUntil(what string, cond func() bool) {
	h.t.Helper()
	for i := 0; !cond(); i++ {
		if i == 10_000 {
			h.t.Fatalf("%s: never happened", what)
		}
		h.run(time.Millisecond)
	}
	if h.fail != nil || h.j.failed != nil {
		h.t.Fatalf("metadata log failed: %v %v", h.fail, h.j.failed)
	}
}

// sync syncs the log and runs until it is durable.
func (h *metaLogHarness) sync() {
	h.t.Helper()
	h.await("sync", h.j.sync)
}

// testBatch is a batch of n records at base in epoch.
func testBatch(base int64, epoch int32, n int) quorum.Batch {
	b := quorum.Batch{BaseOffset: base, Epoch: epoch, Kind: quorum.BatchData}
	for i := 0; i < n; i++ {
		b.Records = append(b.Records, []byte(fmt.Sprintf("e%d-o%d-%040d", epoch, base+int64(i), 0)))
	}
	return b
}

func (h *metaLogHarness) appendBatches(epoch int32, count int) {
	for i := 0; i < count; i++ {
		h.j.Append([]quorum.Batch{testBatch(h.j.EndOffset().Offset, epoch, 1+i%3)})
	}
}

func (h *metaLogHarness) all() []quorum.Batch {
	if h.j.StartOffset() == h.j.EndOffset().Offset {
		return nil
	}
	return h.j.Batches(h.j.StartOffset(), 1<<30)
}

// isPrefix reports whether got is a prefix of want, batch by batch.
func isPrefix(got, want []quorum.Batch) bool {
	if len(got) > len(want) {
		return false
	}
	for i := range got {
		if got[i].String() != want[i].String() {
			return false
		}
	}
	return true
}

// The metadata log recovers from a crash with an unsynced tail: what was
// synced is all there, a torn tail is cut at a batch boundary, and the log
// is the prefix of what was written. A truncation that was synced stays.
// (This carries over the CRC-journal's torn-tail coverage to core/log.)
func TestMetaLogCrashKeepsSyncedPrefix(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			h := newMetaLogHarness(t, seed)
			h.start()
			h.appendBatches(1, 40)
			h.sync()
			// A follower's truncation and new epoch, synced.
			h.j.TruncateTo(h.j.FloorBatchBoundary(h.j.EndOffset().Offset - 10))
			h.appendBatches(2, 20)
			h.sync()
			synced := h.all()
			if h.j.data.LogEndOffset() != h.j.EndOffset().Offset {
				t.Fatalf("core/log ends at %d, the mirror at %d", h.j.data.LogEndOffset(), h.j.EndOffset().Offset)
			}
			// An unsynced tail, partly written to core/log when the crash
			// comes.
			h.appendBatches(2, 30)
			written := h.all()
			h.run(time.Duration(seed%3) * time.Millisecond)
			h.p.Crash()
			h.start()
			got := h.all()
			if len(got) < len(synced) || !isPrefix(got, written) {
				t.Fatalf("recovered %d batches (end %s), synced %d, written %d; not a prefix of what was written with the synced part",
					len(got), h.j.EndOffset(), len(synced), len(written))
			}
			// The recovered log takes new appends and survives another
			// restart whole.
			if e, ok := h.j.EndOffsetForEpoch(1); !ok || e.Epoch != 1 {
				t.Fatalf("end of epoch 1: %v %v", e, ok)
			}
			h.appendBatches(3, 5)
			h.sync()
			want := h.all()
			h.p.Crash()
			h.start()
			if got := h.all(); !slices.EqualFunc(got, want, func(a, b quorum.Batch) bool { return a.String() == b.String() }) {
				t.Fatalf("after a second crash: %d batches, want %d", len(got), len(want))
			}
		})
	}
}

// A snapshot the member wrote is installed, the log trimmed behind the
// previous one, older segments and snapshots deleted, and a restart starts
// the log where it was trimmed.
func TestMetaLogSnapshotTrim(t *testing.T) {
	h := newMetaLogHarness(t, 1)
	h.start()
	take := func() quorum.SnapshotID {
		t.Helper()
		end := h.j.EndOffset()
		id := quorum.SnapshotID{EndOffset: end.Offset, Epoch: end.Epoch}
		data, err := encodeSnapshotFile(id, meta.EncodeSnapshot(meta.Empty()))
		if err != nil {
			t.Fatal(err)
		}
		done := false
		h.j.writeSnapshot(id, data, func(err error) {
			if err != nil {
				t.Errorf("write snapshot: %v", err)
			}
			done = true
		})
		h.runUntil("write snapshot", func() bool { return done })
		h.j.stageSnapshot(id)
		prev, hasPrev := h.j.LatestSnapshot()
		if err := h.j.InstallSnapshot(id); err != nil {
			t.Fatal(err)
		}
		if hasPrev {
			h.j.TrimPrefix(prev.EndOffset) // as Raft.SnapshotTaken does
		}
		h.sync()
		return id
	}
	var ids []quorum.SnapshotID
	for i := 0; i < 4; i++ {
		h.appendBatches(1, 60)
		h.sync()
		ids = append(ids, take())
	}
	h.run(10 * time.Millisecond) // the prune's flush and deletions
	if got := h.j.StartOffset(); got != ids[2].EndOffset {
		t.Fatalf("log start %d, want %d (the previous snapshot)", got, ids[2].EndOffset)
	}
	files := h.p.Disk().Files()
	var snaps []string
	for _, f := range files {
		if _, ok := parseSnapshotName(f); ok {
			snaps = append(snaps, f)
		}
	}
	if !slices.Equal(snaps, []string{snapshotName(ids[2]), snapshotName(ids[3])}) {
		t.Fatalf("snapshot files %v, want the newest two of %v", snaps, ids)
	}
	if slices.Contains(files, "00000000000000000000.log") {
		t.Fatalf("the first segment survived the trim: %v", files)
	}
	if first := h.j.data.Segments()[0].BaseOffset; first > h.j.StartOffset() || first == 0 {
		t.Fatalf("first segment at %d, log start %d", first, h.j.StartOffset())
	}
	want := h.all()
	h.p.Crash()
	h.start()
	if got := h.j.StartOffset(); got != ids[2].EndOffset {
		t.Fatalf("restarted log starts at %d, want %d", got, ids[2].EndOffset)
	}
	if latest, _ := h.j.LatestSnapshot(); latest != ids[3] {
		t.Fatalf("latest snapshot %s, want %s", latest, ids[3])
	}
	if got := h.all(); !slices.EqualFunc(got, want, func(a, b quorum.Batch) bool { return a.String() == b.String() }) {
		t.Fatalf("restarted log: %d batches, want %d", len(got), len(want))
	}
	if e, ok := h.j.EndOffsetForEpoch(0); ok {
		t.Fatalf("epoch 0 held after the trim: %v", e)
	}
	if e, ok := h.j.EndOffsetForEpoch(1); !ok || e != h.j.EndOffset() {
		t.Fatalf("end of epoch 1: %v %v, want %v", e, ok, h.j.EndOffset())
	}
}
