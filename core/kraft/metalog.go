package kraft

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"slices"
	"strings"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	corelog "github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/quorum"
)

// The metadata log's durable store, in the member's data directory (the
// node's __cluster_metadata-0 directory), in Kafka's layout:
//
//	00000000000000000000.log ...          the Raft's batches, one RecordBatch v2 each,
//	                                      with their offsets and epochs (core/log segments,
//	                                      indexes and checkpoints)
//	<end offset>-<epoch>.checkpoint       snapshots (snapfile.go), the newest two kept
//	quorum-state                          the election state (state.go)
//
// core/log is the durable truth; the Raft reads a mirror of it in memory
// (a quorum.MemoryLog holding the batches from the log start offset, which
// trimming keeps to about two snapshot intervals). quorum.Log is
// synchronous while core/log truncates asynchronously (and refuses appends
// until a truncation is durable), so every change is made to the mirror at
// once and queued for core/log, which applies the queue in order: appends
// with AppendReplicated, truncations with Truncate (waiting for each to be
// durable), trims with DeleteRecordsBefore and ApplyRetention, a snapshot
// install that empties the log with TruncateFullyAndStartAt. A sync
// (Ready.SyncLog) is a queued core/log Flush, so it covers every change
// queued before it.
//
// Open rebuilds the mirror from core/log and the snapshot files; see
// openMetaLog for the rules.
const (
	// snapshotsRetained is how many snapshots stay on disk: the latest,
	// and the one the log was trimmed to (the Raft trims to the previous
	// snapshot), which a restart falls back to if the latest is damaged.
	snapshotsRetained = 2
	// readRetries re-reads what fails its check, because the disk may flip
	// bits on read; what stays bad is damaged.
	readRetries = 3
	// logReadChunkBytes bounds one read of the log at recovery.
	logReadChunkBytes = 8 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// metaLog is the Raft's quorum.Log: the mirror in memory, core/log and the
// snapshot files behind it.
type metaLog struct {
	e      env.Env
	disk   env.Disk
	logger *slog.Logger
	data   *corelog.Log
	mem    *quorum.MemoryLog

	// ops are the changes made to mem and not yet to data, in order.
	ops []logOp
	// running is set while an op waits for a callback; kicked while a
	// pump is posted.
	running, kicked bool
	closed          bool

	// snaps are the complete snapshots, oldest first: the last is the
	// latest. At most snapshotsRetained.
	snaps []*snapshotFile
	// staged is a snapshot the member wrote, durable, not yet installed.
	staged *snapshotFile
	// partial is the snapshot being fetched.
	partial *partialSnapshot

	// failed is set when a change could not be applied; the member stops.
	failed error
	// onFail reports a failure found outside a Raft call (in a callback).
	onFail func(error)
	// onChange, if set, is called after the log the Raft sees changed:
	// batches appended, a truncation, a trim, a snapshot installed.
	onChange func()
}

var _ quorum.Log = (*metaLog)(nil)

type snapshotFile struct {
	id quorum.SnapshotID
	// name is the file's current name: a fetched snapshot keeps its .part
	// name until its install op synced and renamed it.
	name string
}

type partialSnapshot struct {
	id   quorum.SnapshotID
	file env.File
	size int64
}

type opKind uint8

const (
	opAppend opKind = iota + 1
	opTruncate
	opReset
	opTrim
	opSync
	opInstallFile
	opPrune
)

// logOp is one change queued for core/log.
type logOp struct {
	kind   opKind
	data   []byte          // opAppend: the batches, encoded
	offset int64           // opTruncate, opReset, opTrim
	done   func(error)     // opSync
	snap   *snapshotFile   // opInstallFile
	file   env.File        // opInstallFile: the .part file, open
	victim []*snapshotFile // opPrune
}

// logConfig is core/log's configuration for the metadata log: segments of
// metadata.log.segment.bytes, and no retention besides the log start
// offset the Raft moves (a snapshot covers everything below it).
func logConfig(cfg Config) corelog.Config {
	c := corelog.DefaultConfig()
	c.SegmentBytes = cfg.LogSegmentBytes
	c.RetentionTime = -1
	c.RetentionBytes = -1
	return c
}

// openMetaLog opens the store in e's Disk root and rebuilds the mirror:
//
//  1. Leftover .checkpoint.tmp and .checkpoint.part files are deleted.
//  2. core/log opens and recovers (a torn tail is cut there); its batches
//     from its log start offset are read into the mirror.
//  3. The newest snapshot that reads back whole and loads is the latest;
//     newer ones that do not are logged and deleted, as are those older
//     than the latest two. Its image is returned (nil without snapshots).
//  4. The mirror starts where core/log does, with the epoch of the
//     retained snapshot ending there. When none does (a crash undid a trim
//     whose snapshot is gone, or the snapshot there was damaged), it
//     starts at the latest snapshot instead, dropping the batches before
//     it.
//  5. The latest snapshot is installed as at run time: the log keeps its
//     batches if it holds the batch the snapshot ends with, and restarts
//     empty at the snapshot otherwise (a fetched snapshot installed just
//     before a crash).
//
// A log that starts past 0 without a snapshot covering its start, or with
// batches that do not continue each other, is an error: the member cannot
// rebuild its image from it.
func openMetaLog(e env.Env, cfg Config, logger *slog.Logger) (*metaLog, *meta.Image, error) {
	j := &metaLog{e: e, disk: e.Disk(), logger: logger, mem: quorum.NewMemoryLog()}
	names, err := j.disk.List(".")
	if err != nil {
		return nil, nil, fmt.Errorf("kraft: list data dir: %w", err)
	}
	var ids []quorum.SnapshotID
	for _, name := range names {
		if strings.HasSuffix(name, snapshotTempSuffix) || strings.HasSuffix(name, snapshotPartSuffix) {
			logger.Info("deleting an unfinished snapshot", "file", name)
			if err := j.disk.Remove(name); err != nil {
				return nil, nil, fmt.Errorf("kraft: remove %s: %w", name, err)
			}
			continue
		}
		if id, ok := parseSnapshotName(name); ok {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b quorum.SnapshotID) int {
		if a.EndOffset != b.EndOffset {
			return cmp.Compare(a.EndOffset, b.EndOffset)
		}
		return int(a.Epoch) - int(b.Epoch)
	})

	j.data, err = corelog.Open(e, ".", logConfig(cfg))
	if err != nil {
		return nil, nil, fmt.Errorf("kraft: open metadata log: %w", err)
	}
	fail := func(err error) (*metaLog, *meta.Image, error) {
		_ = j.data.Close()
		return nil, nil, err
	}
	batches, err := j.readLog()
	if err != nil {
		return fail(err)
	}

	// The latest snapshot: the newest that loads.
	var img *meta.Image
	latest := -1
	for i := len(ids) - 1; i >= 0 && img == nil; i-- {
		loaded, err := j.loadSnapshotFile(ids[i], snapshotName(ids[i]))
		if err != nil {
			logger.Warn("deleting a damaged snapshot", "snapshot", ids[i].String(), "err", err)
			if err := j.disk.Remove(snapshotName(ids[i])); err != nil {
				return fail(fmt.Errorf("kraft: remove damaged snapshot %s: %w", ids[i], err))
			}
			continue
		}
		img, latest = loaded, i
	}
	if latest >= 0 {
		keepFrom := max(0, latest+1-snapshotsRetained)
		for _, id := range ids[:keepFrom] {
			logger.Info("deleting an old snapshot", "snapshot", id.String())
			if err := j.disk.Remove(snapshotName(id)); err != nil {
				return fail(fmt.Errorf("kraft: remove snapshot %s: %w", id, err))
			}
		}
		for _, id := range ids[keepFrom : latest+1] {
			j.snaps = append(j.snaps, &snapshotFile{id: id, name: snapshotName(id)})
		}
	}

	start := j.data.LogStartOffset()
	startEpoch, known := int32(0), start == 0
	for _, s := range j.snaps {
		if s.id.EndOffset == start {
			startEpoch, known = s.id.Epoch, true
		}
	}
	latestID, hasLatest := j.LatestSnapshot()
	switch {
	case known && hasLatest && latestID.EndOffset < start:
		return fail(fmt.Errorf("kraft: the metadata log starts at %d, after its latest readable snapshot %s", start, latestID))
	case !known && !hasLatest:
		return fail(fmt.Errorf("kraft: the metadata log starts at %d and no readable snapshot covers it", start))
	case !known:
		// Restart the mirror at the latest snapshot, keeping the batches
		// after it if the log holds the batch it ends with.
		keep := false
		for i, b := range batches {
			if b.EndOffset() == latestID.EndOffset && b.Epoch == latestID.Epoch {
				batches, keep = batches[i+1:], true
				break
			}
		}
		if !keep {
			batches = nil
		}
		logger.Warn("restarting the metadata log at the latest snapshot", "log_start", start, "snapshot", latestID.String(), "keep_batches", keep)
		start, startEpoch = latestID.EndOffset, latestID.Epoch
		if keep {
			j.ops = append(j.ops, logOp{kind: opTrim, offset: start})
		} else {
			j.ops = append(j.ops, logOp{kind: opReset, offset: start})
		}
	}
	if start > 0 {
		j.resetMirror(quorum.SnapshotID{EndOffset: start, Epoch: startEpoch})
	}
	for _, b := range batches {
		if b.EndOffset() <= start {
			continue
		}
		end := j.mem.EndOffset()
		if b.BaseOffset != end.Offset || b.Epoch < end.Epoch || len(b.Records) == 0 {
			return fail(fmt.Errorf("kraft: metadata log batch %s does not continue the log at %s", b, end))
		}
		j.mem.Append([]quorum.Batch{b})
	}
	if hasLatest {
		if j.installMirror(latestID) {
			j.ops = append(j.ops, logOp{kind: opReset, offset: latestID.EndOffset})
		}
	}
	return j, img, nil
}

// readLog reads every batch of core/log from its log start offset.
func (j *metaLog) readLog() ([]quorum.Batch, error) {
	var out []quorum.Batch
	off, end := j.data.LogStartOffset(), j.data.LogEndOffset()
	for off < end {
		res, err := j.data.Read(off, logReadChunkBytes, -1)
		if err != nil {
			return nil, fmt.Errorf("kraft: read metadata log at %d: %w", off, err)
		}
		if res.Size == 0 {
			res.Release()
			return nil, fmt.Errorf("kraft: metadata log has no batch at %d below its end %d", off, end)
		}
		buf := make([]byte, res.Size)
		var batches []quorum.Batch
		for try := 0; try < readRetries; try++ {
			if _, err = res.File.ReadAt(buf, res.Position); err != nil {
				break
			}
			if batches, err = quorum.DecodeBatches(buf); err == nil {
				break
			}
		}
		res.Release()
		if err != nil {
			return nil, fmt.Errorf("kraft: read metadata log at %d: %w", off, err)
		}
		for _, b := range batches {
			switch {
			case b.EndOffset() <= off:
				continue // before the log start, in its segment
			case b.BaseOffset != off:
				return nil, fmt.Errorf("kraft: metadata log batch %s where offset %d was expected", b, off)
			}
			out = append(out, b)
			off = b.EndOffset()
		}
	}
	return out, nil
}

// resetMirror empties the mirror and restarts it at id's end offset, with
// id's epoch as its start epoch.
func (j *metaLog) resetMirror(id quorum.SnapshotID) {
	j.mem = quorum.NewMemoryLog()
	j.mem.SaveSnapshot(id, nil)
	err := j.mem.InstallSnapshot(id)
	assert.That(err == nil, "kraft: reset the log mirror to %s: %v", id, err)
}

// installMirror makes id the mirror's latest snapshot (the mirror holds no
// snapshot bytes) and reports whether that emptied it.
func (j *metaLog) installMirror(id quorum.SnapshotID) (emptied bool) {
	start, end := j.mem.StartOffset(), j.mem.EndOffset()
	j.mem.SaveSnapshot(id, nil)
	err := j.mem.InstallSnapshot(id)
	assert.That(err == nil, "kraft: install snapshot %s in the log mirror: %v", id, err)
	assert.NotDecreasing("metadata log start offset", start, j.mem.StartOffset())
	return j.mem.StartOffset() != start || j.mem.EndOffset() != end
}

// StartOffset implements quorum.Log.
func (j *metaLog) StartOffset() int64 { return j.mem.StartOffset() }

// EndOffset implements quorum.Log.
func (j *metaLog) EndOffset() quorum.OffsetAndEpoch { return j.mem.EndOffset() }

// EndOffsetForEpoch implements quorum.Log, from the mirror: core/log's
// epoch cache lags the queue, and forgets the start epoch on a reset.
func (j *metaLog) EndOffsetForEpoch(epoch int32) (quorum.OffsetAndEpoch, bool) {
	return j.mem.EndOffsetForEpoch(epoch)
}

// FloorBatchBoundary implements quorum.Log.
func (j *metaLog) FloorBatchBoundary(offset int64) int64 { return j.mem.FloorBatchBoundary(offset) }

// Batches implements quorum.Log.
func (j *metaLog) Batches(from int64, maxBytes int) []quorum.Batch {
	return j.mem.Batches(from, maxBytes)
}

// Append implements quorum.Log.
func (j *metaLog) Append(batches []quorum.Batch) {
	if len(batches) == 0 {
		return
	}
	data, err := quorum.EncodeBatches(batches)
	if err != nil {
		j.setFailed(fmt.Errorf("kraft: encode batches: %w", err))
	} else {
		j.enqueue(logOp{kind: opAppend, data: data})
	}
	j.mem.Append(batches)
	j.changed()
}

// changed tells the observer, if any, that the log changed.
func (j *metaLog) changed() {
	if j.onChange != nil {
		j.onChange()
	}
}

// TruncateTo implements quorum.Log.
func (j *metaLog) TruncateTo(offset int64) {
	if offset == j.mem.EndOffset().Offset {
		return
	}
	j.mem.TruncateTo(offset)
	j.enqueue(logOp{kind: opTruncate, offset: offset})
	j.changed()
}

// TrimPrefix implements quorum.Log.
func (j *metaLog) TrimPrefix(offset int64) {
	start := j.mem.StartOffset()
	j.mem.TrimPrefix(offset)
	assert.NotDecreasing("metadata log start offset", start, j.mem.StartOffset())
	if j.mem.StartOffset() > start {
		j.enqueue(logOp{kind: opTrim, offset: offset})
		j.changed()
	}
}

// LatestSnapshot implements quorum.Log.
func (j *metaLog) LatestSnapshot() (quorum.SnapshotID, bool) {
	if len(j.snaps) == 0 {
		return quorum.SnapshotID{}, false
	}
	return j.snaps[len(j.snaps)-1].id, true
}

func (j *metaLog) snapshot(id quorum.SnapshotID) *snapshotFile {
	for _, s := range j.snaps {
		if s.id == id {
			return s
		}
	}
	return nil
}

// ReadSnapshot implements quorum.Log. Every chunk is read twice and
// compared, since it goes to a follower unchecked.
func (j *metaLog) ReadSnapshot(id quorum.SnapshotID, position int64, maxBytes int) ([]byte, int64, error) {
	s := j.snapshot(id)
	if s == nil {
		return nil, 0, fmt.Errorf("kraft: snapshot %s not held", id)
	}
	f, err := j.disk.Open(s.name, false)
	if err != nil {
		return nil, 0, fmt.Errorf("kraft: open snapshot %s: %w", id, err)
	}
	defer func() { _ = f.Close() }()
	size := f.Size()
	if position < 0 || position > size {
		return nil, size, fmt.Errorf("kraft: position %d outside snapshot %s of %d bytes", position, id, size)
	}
	n := min(size-position, int64(maxBytes))
	data, err := readStable(f, position, n)
	if err != nil {
		return nil, size, fmt.Errorf("kraft: read snapshot %s: %w", id, err)
	}
	return data, size, nil
}

// readStable reads n bytes at off twice and returns them once two reads
// agree.
func readStable(f env.File, off, n int64) ([]byte, error) {
	a, b := make([]byte, n), make([]byte, n)
	for try := 0; try < readRetries; try++ {
		if _, err := f.ReadAt(a, off); err != nil {
			return nil, err
		}
		if _, err := f.ReadAt(b, off); err != nil {
			return nil, err
		}
		if bytes.Equal(a, b) {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%s at %d: reads disagree %d times", f.Name(), off, readRetries)
}

// readSnapshotValues reads and decodes the file name of snapshot id,
// re-reading when it does not decode.
func (j *metaLog) readSnapshotValues(id quorum.SnapshotID, name string) ([][]byte, error) {
	f, err := j.disk.Open(name, false)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, f.Size())
	var values [][]byte
	for try := 0; try < readRetries; try++ {
		if _, err = f.ReadAt(buf, 0); err != nil {
			return nil, err
		}
		if values, err = decodeSnapshotFile(id, buf); err == nil {
			return values, nil
		}
	}
	return nil, err
}

// loadSnapshotFile reads the file name of snapshot id and loads its image.
func (j *metaLog) loadSnapshotFile(id quorum.SnapshotID, name string) (*meta.Image, error) {
	values, err := j.readSnapshotValues(id, name)
	if err != nil {
		return nil, err
	}
	return meta.DecodeSnapshot(meta.Position{Offset: id.EndOffset - 1, Epoch: id.Epoch}, values)
}

// loadSnapshot loads the image of held snapshot id.
func (j *metaLog) loadSnapshot(id quorum.SnapshotID) (*meta.Image, error) {
	s := j.snapshot(id)
	if s == nil {
		return nil, fmt.Errorf("kraft: snapshot %s not held", id)
	}
	return j.loadSnapshotFile(id, s.name)
}

// WriteSnapshotChunk implements quorum.Log: chunks go to
// <id>.checkpoint.part.
func (j *metaLog) WriteSnapshotChunk(id quorum.SnapshotID, position int64, data []byte) error {
	if position == 0 {
		j.discardPartial()
		name := snapshotName(id) + ".part"
		f, err := j.disk.Open(name, true)
		if err != nil {
			return fmt.Errorf("kraft: create %s: %w", name, err)
		}
		if err := f.Truncate(0); err != nil {
			_ = f.Close()
			return fmt.Errorf("kraft: truncate %s: %w", name, err)
		}
		j.partial = &partialSnapshot{id: id, file: f}
	}
	p := j.partial
	if p == nil || p.id != id || p.size != position {
		return fmt.Errorf("kraft: chunk at %d of snapshot %s does not continue the partial snapshot", position, id)
	}
	if err := p.file.WriteAt(data, position); err != nil {
		return fmt.Errorf("kraft: write snapshot %s: %w", id, err)
	}
	p.size += int64(len(data))
	return nil
}

// discardPartial drops the snapshot being fetched, if any.
func (j *metaLog) discardPartial() {
	p := j.partial
	if p == nil {
		return
	}
	j.partial = nil
	name := p.file.Name()
	_ = p.file.Close()
	if err := j.disk.Remove(name); err != nil && !errors.Is(err, env.ErrNotExist) {
		j.logger.Warn("remove partial snapshot", "file", name, "err", err)
	}
}

// InstallSnapshot implements quorum.Log. A fetched snapshot is checked
// whole first (so a damaged transfer is fetched again rather than
// installed), then synced and renamed by its queued install op, before any
// later op (the reset of the log it may cause) reaches core/log.
func (j *metaLog) InstallSnapshot(id quorum.SnapshotID) error {
	if latest, ok := j.LatestSnapshot(); ok && id.EndOffset <= latest.EndOffset {
		if id == latest {
			return nil
		}
		return fmt.Errorf("kraft: snapshot %s is not newer than %s", id, latest)
	}
	var snap *snapshotFile
	switch {
	case j.staged != nil && j.staged.id == id:
		snap, j.staged = j.staged, nil
	case j.partial != nil && j.partial.id == id:
		p := j.partial
		buf, err := readStable(p.file, 0, p.size)
		if err == nil {
			_, err = decodeSnapshotFile(id, buf)
		}
		if err != nil {
			j.discardPartial()
			return fmt.Errorf("kraft: fetched snapshot %s: %w", id, err)
		}
		j.partial = nil
		snap = &snapshotFile{id: id, name: p.file.Name()}
		j.enqueue(logOp{kind: opInstallFile, snap: snap, file: p.file})
	default:
		return fmt.Errorf("kraft: snapshot %s not written", id)
	}
	if j.installMirror(id) {
		j.enqueue(logOp{kind: opReset, offset: id.EndOffset})
	}
	j.changed()
	j.snaps = append(j.snaps, snap)
	if n := len(j.snaps) - snapshotsRetained; n > 0 {
		victims := slices.Clone(j.snaps[:n])
		j.snaps = slices.Clone(j.snaps[n:])
		// After the trim the Raft makes next, in the same turn.
		j.enqueue(logOp{kind: opPrune, victim: victims})
	}
	return nil
}

// writeSnapshot writes data, the file of snapshot id, durably under its
// final name: to a temporary file, synced, renamed, directory synced. done
// runs on the loop; then stage the snapshot and report it to the Raft.
func (j *metaLog) writeSnapshot(id quorum.SnapshotID, data []byte, done func(error)) {
	final := snapshotName(id)
	tmp := final + ".tmp"
	report := func(err error) {
		if !j.closed {
			done(err)
		}
	}
	fail := func(err error) { j.e.Post(func() { report(err) }) }
	f, err := j.disk.Open(tmp, true)
	if err != nil {
		fail(fmt.Errorf("create %s: %w", tmp, err))
		return
	}
	if err = f.Truncate(0); err == nil {
		err = f.WriteAt(data, 0)
	}
	if err != nil {
		_ = f.Close()
		_ = j.disk.Remove(tmp)
		fail(fmt.Errorf("write %s: %w", tmp, err))
		return
	}
	f.Sync(func(err error) {
		_ = f.Close()
		if err != nil {
			report(fmt.Errorf("sync %s: %w", tmp, err))
			return
		}
		if err := j.disk.Rename(tmp, final); err != nil {
			report(fmt.Errorf("rename %s: %w", tmp, err))
			return
		}
		j.disk.SyncDir(".", func(err error) {
			if err != nil {
				err = fmt.Errorf("sync data dir: %w", err)
			}
			report(err)
		})
	})
}

// stageSnapshot records that the snapshot id this member wrote is durable;
// InstallSnapshot (from Raft.SnapshotTaken) makes it the latest.
func (j *metaLog) stageSnapshot(id quorum.SnapshotID) {
	j.discardStaged()
	j.staged = &snapshotFile{id: id, name: snapshotName(id)}
}

// discardStaged deletes a written snapshot the Raft did not take (it was
// not newer than the latest).
func (j *metaLog) discardStaged() {
	s := j.staged
	if s == nil {
		return
	}
	j.staged = nil
	if j.snapshot(s.id) != nil {
		return // the same snapshot, fetched meanwhile: same name
	}
	if err := j.disk.Remove(s.name); err != nil && !errors.Is(err, env.ErrNotExist) {
		j.logger.Warn("remove snapshot", "file", s.name, "err", err)
	}
}

// sync calls done once every change made so far is durable.
func (j *metaLog) sync(done func(error)) {
	j.enqueue(logOp{kind: opSync, done: done})
}

// settle calls done once what recovery changed is durable: the queued
// changes, core/log's own recovery, and the deleted files.
func (j *metaLog) settle(done func(error)) {
	j.sync(func(err error) {
		if err != nil {
			done(err)
			return
		}
		j.disk.SyncDir(".", func(err error) {
			if !j.closed {
				done(err)
			}
		})
	})
}

// close releases core/log's files; queued changes are dropped, as a crash
// would drop them, and no callback runs any more.
func (j *metaLog) close() {
	if j.closed {
		return
	}
	j.closed = true
	j.ops = nil
	if j.partial != nil {
		_ = j.partial.file.Close()
		j.partial = nil
	}
	_ = j.data.Close()
}

func (j *metaLog) setFailed(err error) {
	if j.failed == nil {
		j.failed = err
	}
}

// fatal records a failure found in a callback and reports it.
func (j *metaLog) fatal(err error) {
	j.setFailed(err)
	j.running = false
	if !j.closed && j.onFail != nil {
		j.onFail(j.failed)
	}
}

func (j *metaLog) enqueue(op logOp) {
	j.ops = append(j.ops, op)
	if !j.kicked && !j.running {
		j.kicked = true
		j.e.Post(j.pump)
	}
}

// resume continues the queue after an op that waited for a callback.
func (j *metaLog) resume(err error) {
	if j.closed {
		return
	}
	j.running = false
	if err != nil {
		j.fatal(fmt.Errorf("kraft: metadata log: %w", err))
		return
	}
	j.pump()
}

// pump applies queued ops to core/log in order until one has to wait.
func (j *metaLog) pump() {
	j.kicked = false
	for !j.running && !j.closed && j.failed == nil && len(j.ops) > 0 {
		if j.data.Busy() {
			// Open's recovery or a truncation is not durable yet.
			j.running = true
			j.data.Flush(j.data.LogEndOffset(), j.resume)
			return
		}
		op := j.ops[0]
		j.ops[0] = logOp{}
		j.ops = j.ops[1:]
		if err := j.apply(op); err != nil {
			j.fatal(fmt.Errorf("kraft: metadata log: %w", err))
			return
		}
	}
	if len(j.ops) == 0 {
		j.ops = nil // release the array
	}
}

func (j *metaLog) apply(op logOp) error {
	switch op.kind {
	case opAppend:
		_, err := j.data.AppendReplicated(op.data)
		return err
	case opTruncate:
		j.running = true
		j.data.Truncate(op.offset, j.resume)
	case opReset:
		j.running = true
		j.data.TruncateFullyAndStartAt(op.offset, j.resume)
	case opTrim:
		assert.That(op.offset <= j.data.LogEndOffset(), "kraft: trim to %d past the metadata log end %d", op.offset, j.data.LogEndOffset())
		if j.data.HighWatermark() < op.offset {
			// Only committed batches are trimmed (a snapshot covers them).
			j.data.SetHighWatermark(op.offset)
		}
		if err := j.data.DeleteRecordsBefore(op.offset); err != nil {
			return err
		}
		if _, err := j.data.ApplyRetention(j.e.Now()); err != nil {
			return err
		}
	case opSync:
		done := op.done
		j.data.Flush(j.data.LogEndOffset(), func(err error) {
			if j.closed {
				return
			}
			if err != nil {
				j.setFailed(fmt.Errorf("kraft: metadata log: %w", err))
			}
			done(err)
		})
	case opInstallFile:
		j.running = true
		s, f := op.snap, op.file
		f.Sync(func(err error) {
			_ = f.Close()
			if j.closed {
				return
			}
			if err != nil {
				j.resume(fmt.Errorf("sync snapshot %s: %w", s.id, err))
				return
			}
			final := snapshotName(s.id)
			if err := j.disk.Rename(s.name, final); err != nil {
				j.resume(fmt.Errorf("rename snapshot %s: %w", s.id, err))
				return
			}
			s.name = final
			j.disk.SyncDir(".", j.resume)
		})
	case opPrune:
		// The snapshots go once the trims before them are durable, so that
		// a restart finds the snapshot its log starts at.
		victims := op.victim
		j.data.Flush(j.data.LogEndOffset(), func(err error) {
			if err != nil || j.closed {
				return
			}
			for _, s := range victims {
				j.logger.Info("deleting an old snapshot", "snapshot", s.id.String())
				if err := j.disk.Remove(s.name); err != nil && !errors.Is(err, env.ErrNotExist) {
					j.logger.Warn("remove old snapshot", "file", s.name, "err", err)
				}
			}
		})
	default:
		assert.Never("kraft: unknown metadata log op %d", op.kind)
	}
	return nil
}
