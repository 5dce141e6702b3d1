package producer

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-log/strata/core/env"
)

// Snapshot files live in the partition directory, next to the log's
// segments, under Kafka's names: <offset, 20 digits>.snapshot. A snapshot
// being written is <offset>.snapshot.<n>.tmp (n counts the writes of this
// Snapshots, so that a canceled write never touches the file of a later
// one); it counts only once renamed. OpenSnapshots deletes leftover temp
// files, and so does core/log's Open (it deletes every *.tmp).
const (
	snapshotSuffix    = ".snapshot"
	snapshotTmpSuffix = ".tmp"
	offsetNameDigits  = 20
)

// snapshotName is the file name of the snapshot at offset.
func snapshotName(offset int64) string {
	return fmt.Sprintf("%0*d%s", offsetNameDigits, offset, snapshotSuffix)
}

// tempName is the file name of the n-th write's temp file, at offset.
func tempName(offset int64, n uint64) string {
	return snapshotName(offset) + "." + strconv.FormatUint(n, 10) + snapshotTmpSuffix
}

// parseSnapshotName returns the offset in a snapshot file name; ok is false
// for every other name.
func parseSnapshotName(name string) (offset int64, ok bool) {
	digits, found := strings.CutSuffix(name, snapshotSuffix)
	return parseOffsetDigits(digits, found)
}

// isTempName reports whether name is a snapshot temp file.
func isTempName(name string) bool {
	rest, found := strings.CutSuffix(name, snapshotTmpSuffix)
	if !found || len(rest) <= offsetNameDigits {
		return false
	}
	if _, ok := parseOffsetDigits(rest[:offsetNameDigits], true); !ok {
		return false
	}
	n, found := strings.CutPrefix(rest[offsetNameDigits:], snapshotSuffix+".")
	if !found || n == "" {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 64)
	return err == nil
}

func parseOffsetDigits(digits string, found bool) (int64, bool) {
	if !found || len(digits) != offsetNameDigits {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	offset, err := strconv.ParseInt(digits, 10, 64)
	return offset, err == nil
}

// Snapshots keeps the producer snapshot files of one partition directory:
// it writes them durably, loads the newest usable one and deletes those
// the log no longer covers. It does I/O only through its env.Disk and runs
// on its Env's loop; callbacks never run inline.
type Snapshots struct {
	e      env.Env
	disk   env.Disk
	dir    string
	cfg    Config
	logger *slog.Logger
	// files are the offsets of the snapshot files in the directory (renamed
	// into place, maybe not yet durable), ascending.
	files []int64
	// writes are the writes in flight, in the order they started.
	writes []*snapshotWrite
	// started counts writes, to name temp files.
	started uint64
	closed  bool
}

// snapshotWrite is one snapshot being written.
type snapshotWrite struct {
	offset  int64
	tmp     string // the temp file, until renamed
	waiters []func(error)
	// overtaken is ErrCanceled or ErrClosed once DeleteAbove, DeleteBelow
	// or Close overtook the write; it then reports that.
	overtaken error
}

// OpenSnapshots lists the snapshot files of the partition directory dir,
// which must exist, and deletes leftover temp files. It reads no snapshot;
// Load does. cfg must be valid.
func OpenSnapshots(e env.Env, dir string, cfg Config) (*Snapshots, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Snapshots{e: e, disk: e.Disk(), dir: dir, cfg: cfg.withDefaults(),
		logger: e.Logger().With("component", "producer-snapshots", "dir", dir)}
	names, err := s.disk.List(dir)
	if err != nil {
		return nil, fmt.Errorf("producer: list %s: %w", dir, err)
	}
	for _, name := range names {
		if offset, ok := parseSnapshotName(name); ok {
			s.files = append(s.files, offset)
			continue
		}
		if isTempName(name) {
			s.logger.Info("deleting an unfinished producer snapshot", "file", name)
			if err := s.disk.Remove(s.path(name)); err != nil && !errors.Is(err, env.ErrNotExist) {
				return nil, fmt.Errorf("producer: remove %s: %w", s.path(name), err)
			}
		}
	}
	slices.Sort(s.files) // List sorts names and offsets are zero-padded; this keeps it explicit
	return s, nil
}

func (s *Snapshots) path(name string) string { return path.Join(s.dir, name) }

// Offsets returns the offsets of the snapshot files, ascending.
func (s *Snapshots) Offsets() []int64 { return slices.Clone(s.files) }

// Latest returns the offset of the newest snapshot file.
func (s *Snapshots) Latest() (int64, bool) {
	if len(s.files) == 0 {
		return 0, false
	}
	return s.files[len(s.files)-1], true
}

// Write writes st as the snapshot at st.EndOffset() (Kafka's takeSnapshot;
// call st.AdvanceTo with the log end offset first to name it so) and calls
// done once it is durable: the state is encoded now, written to a temp
// file, synced, renamed into place, and the directory is synced. A
// snapshot already at that offset is not rewritten (only the directory is
// synced); a write already in flight there reports to done as well.
//
// done gets an error wrapping the env error when the temp file could not
// be written or synced (env.ErrNoSpace, env.ErrIO; nothing of the snapshot
// remains, and the log is unaffected: try again later), ErrDirectoryFailed
// when the directory sync failed (fatal for the partition directory, see
// there), ErrCanceled when DeleteAbove or DeleteBelow dropped the offset
// meanwhile, ErrClosed after Close.
func (s *Snapshots) Write(st *State, done func(error)) {
	offset := st.EndOffset()
	if s.closed {
		s.post(done, ErrClosed)
		return
	}
	for _, w := range s.writes {
		if w.offset == offset && w.overtaken == nil {
			w.waiters = append(w.waiters, done)
			return
		}
	}
	if _, found := slices.BinarySearch(s.files, offset); found {
		// Its contents were synced before its rename, but a previous
		// incarnation (killed, machine up) may not have synced its name.
		s.syncDir("keeping snapshot "+snapshotName(offset), done)
		return
	}
	data := st.EncodeSnapshot()
	tmp := s.path(tempName(offset, s.started))
	s.started++
	f, err := s.disk.Open(tmp, true)
	if err == nil {
		if err = f.Truncate(0); err == nil {
			err = f.WriteAt(data, 0)
		}
		if err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		s.removeTemp(tmp)
		s.post(done, fmt.Errorf("producer: write snapshot %s: %w", tmp, err))
		return
	}
	w := &snapshotWrite{offset: offset, tmp: tmp, waiters: []func(error){done}}
	s.writes = append(s.writes, w)
	f.Sync(func(err error) {
		_ = f.Close()
		s.synced(w, err)
	})
}

// synced is the write's next step once its temp file's Sync completed.
func (s *Snapshots) synced(w *snapshotWrite, err error) {
	tmp := w.tmp
	switch {
	case w.overtaken != nil:
		s.finish(w, w.overtaken) // overtake removed the temp file
		return
	case err != nil:
		s.removeTemp(tmp)
		s.finish(w, fmt.Errorf("producer: sync snapshot %s: %w", tmp, err))
		return
	}
	final := s.path(snapshotName(w.offset))
	if err := s.disk.Rename(tmp, final); err != nil {
		s.removeTemp(tmp)
		s.finish(w, fmt.Errorf("producer: rename %s to %s: %w", tmp, final, err))
		return
	}
	w.tmp = ""
	if i, found := slices.BinarySearch(s.files, w.offset); !found {
		s.files = slices.Insert(s.files, i, w.offset)
	}
	s.syncDir("renaming snapshot "+final, func(err error) {
		if err == nil {
			err = w.overtaken
		}
		s.finish(w, err)
	})
}

// syncDir syncs the partition directory and reports to done, a failure as
// ErrDirectoryFailed naming what was being made durable.
func (s *Snapshots) syncDir(what string, done func(error)) {
	s.disk.SyncDir(s.dir, func(err error) {
		if err != nil {
			err = fmt.Errorf("%w: %s, after %s: %w", ErrDirectoryFailed, s.dir, what, err)
		}
		done(err)
	})
}

// finish ends a write and reports err to its waiters.
func (s *Snapshots) finish(w *snapshotWrite, err error) {
	if i := slices.Index(s.writes, w); i >= 0 {
		s.writes = slices.Delete(s.writes, i, i+1)
	}
	if err != nil && !errors.Is(err, ErrCanceled) && !errors.Is(err, ErrClosed) {
		s.logger.Warn("producer snapshot not written", "offset", w.offset, "err", err)
	}
	for _, done := range w.waiters {
		done(err)
	}
}

// overtake makes a write in flight report err instead of completing. Its
// temp file goes now, so that a directory sync issued next (DeleteAbove's)
// does not make it durable; a renamed write's file is the caller's to
// delete.
func (s *Snapshots) overtake(w *snapshotWrite, err error) {
	if w.overtaken != nil {
		return
	}
	w.overtaken = err
	if w.tmp != "" {
		s.removeTemp(w.tmp)
	}
}

// removeTemp deletes a temp file that will not be renamed. Failing that,
// OpenSnapshots or the log's Open deletes it later.
func (s *Snapshots) removeTemp(tmp string) {
	if err := s.disk.Remove(tmp); err != nil && !errors.Is(err, env.ErrNotExist) {
		s.logger.Warn("could not remove a producer snapshot temp file", "file", tmp, "err", err)
	}
}

func (s *Snapshots) post(done func(error), err error) {
	s.e.Post(func() { done(err) })
}

// DeleteBelow deletes the snapshots below offset, the log start offset
// (Kafka's deleteSnapshotsBefore), and cancels writes below it. Load never
// uses a snapshot below the log start, so the deletions need not be
// durable: a crash that brings one back changes nothing.
func (s *Snapshots) DeleteBelow(offset int64) error {
	if s.closed {
		return ErrClosed
	}
	for _, w := range s.writes {
		if w.offset < offset {
			s.overtake(w, ErrCanceled)
		}
	}
	below, _ := slices.BinarySearch(s.files, offset)
	for k := 0; k < below; k++ {
		if err := s.remove(s.files[k], "below the log start offset"); err != nil {
			s.files = slices.Delete(s.files, 0, k)
			return err
		}
	}
	s.files = slices.Delete(s.files, 0, below)
	return nil
}

// DeleteAbove deletes the snapshots above offset and cancels writes above
// it, for a log truncated to offset (Kafka's truncateAndReload drops them);
// offset -1 deletes them all, for a log truncated fully. done is called
// once the deletions are durable. A snapshot above the log end describes
// batches the log no longer has (or will hold different ones at those
// offsets), so the owner must not append past offset before done reports
// success, and reloads the state with Load.
//
// done gets an error wrapping ErrDirectoryFailed when the directory sync
// failed, or the env error of a failed Remove.
func (s *Snapshots) DeleteAbove(offset int64, done func(error)) {
	if s.closed {
		s.post(done, ErrClosed)
		return
	}
	for _, w := range s.writes {
		if w.offset > offset {
			s.overtake(w, ErrCanceled)
		}
	}
	for len(s.files) > 0 && s.files[len(s.files)-1] > offset {
		if err := s.remove(s.files[len(s.files)-1], "above the log end offset"); err != nil {
			s.post(done, err)
			return
		}
		s.files = s.files[:len(s.files)-1]
	}
	s.syncDir(fmt.Sprintf("deleting snapshots above offset %d", offset), done)
}

// remove deletes the snapshot file at offset.
func (s *Snapshots) remove(offset int64, why string) error {
	name := s.path(snapshotName(offset))
	s.logger.Info("deleting producer snapshot", "file", name, "reason", why)
	if err := s.disk.Remove(name); err != nil && !errors.Is(err, env.ErrNotExist) {
		return fmt.Errorf("producer: remove %s: %w", name, err)
	}
	return nil
}

// LoadReport says what Load used and what it skipped.
type LoadReport struct {
	// Snapshot is the offset of the snapshot loaded, or -1 when none was
	// usable and the state starts empty at the start offset.
	Snapshot int64
	// Damaged are the snapshots skipped, newest first.
	Damaged []DamagedSnapshot
}

// DamagedSnapshot is a snapshot Load could not use.
type DamagedSnapshot struct {
	Offset int64
	// Err wraps ErrCorruptSnapshot when the file did not decode (Load then
	// deleted it), or is the env error that kept it from being read.
	Err error
}

// Load returns the state from the newest snapshot in [startOffset,
// maxOffset] that decodes, without the producers expired at now; the
// owner then replays the log from the state's EndOffset (the snapshot's
// offset) to the log end with State.Replay. Without a usable snapshot the
// state is empty at startOffset. Call it at recovery with the log start
// and end offsets, and after a truncation with the new log end.
//
// A snapshot below startOffset is never used: the log no longer holds the
// batches between it and the log start, and a state that misses a
// producer's later batches would refuse that producer's next sequence,
// while one that misses the producer entirely accepts it. A snapshot that
// fails its checks is read again (reads may flip bits); once two reads
// agree on damage it is skipped, reported and deleted, as Kafka does. One
// that cannot be read is skipped and reported, and kept. Load never fails
// for a damaged file.
func (s *Snapshots) Load(startOffset, maxOffset int64, now time.Time) (*State, LoadReport, error) {
	report := LoadReport{Snapshot: -1}
	if s.closed {
		return nil, report, ErrClosed
	}
	if startOffset < 0 || maxOffset < startOffset {
		return nil, report, fmt.Errorf("producer: load between offsets %d and %d", startOffset, maxOffset)
	}
	for i := len(s.files) - 1; i >= 0; i-- {
		offset := s.files[i]
		if offset > maxOffset {
			continue
		}
		if offset < startOffset {
			break
		}
		st, err := s.read(offset, now)
		if err == nil {
			report.Snapshot = offset
			s.logger.Info("loaded producer snapshot", "offset", offset, "producers", st.Len())
			return st, report, nil
		}
		report.Damaged = append(report.Damaged, DamagedSnapshot{Offset: offset, Err: err})
		s.logger.Warn("skipping a damaged producer snapshot", "offset", offset, "err", err)
		if errors.Is(err, ErrCorruptSnapshot) {
			if err := s.remove(offset, "damaged"); err != nil {
				s.logger.Warn("could not delete a damaged producer snapshot", "offset", offset, "err", err)
				continue
			}
			s.files = slices.Delete(s.files, i, i+1)
		}
	}
	return NewState(s.cfg, startOffset), report, nil
}

// read reads and restores the snapshot at offset. Env reads may flip a
// bit, so a read that fails its checks is repeated: a later read that
// passes wins (the CRC vouches for it), two reads that agree byte for byte
// and fail prove the stored file damaged (ErrCorruptSnapshot), and reads
// that keep disagreeing over snapshotReadAttempts prove nothing (an error
// wrapping env.ErrIO, and the file is kept).
func (s *Snapshots) read(offset int64, now time.Time) (*State, error) {
	name := s.path(snapshotName(offset))
	f, err := s.disk.Open(name, false)
	if err != nil {
		return nil, fmt.Errorf("producer: open %s: %w", name, err)
	}
	defer func() { _ = f.Close() }()
	size := f.Size()
	if size > maxSnapshotBytes {
		return nil, fmt.Errorf("%w: %s holds %d bytes, at most %d are read", ErrCorruptSnapshot, name, size, maxSnapshotBytes)
	}
	buf, prev := make([]byte, size), []byte(nil)
	for attempt := 1; attempt <= snapshotReadAttempts; attempt++ {
		if n, err := f.ReadAt(buf, 0); n < len(buf) {
			return nil, fmt.Errorf("producer: read %s: %d of %d bytes: %w", name, n, len(buf), err)
		}
		producers, err := DecodeSnapshot(buf)
		var st *State
		if err == nil {
			st, err = Restore(s.cfg, offset, producers, now)
		}
		if err == nil {
			return st, nil
		}
		if prev != nil && bytes.Equal(prev, buf) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		prev, buf = buf, make([]byte, size)
	}
	return nil, fmt.Errorf("producer: read %s: %d reads disagree and none decodes: %w", name, snapshotReadAttempts, env.ErrIO)
}

// Close cancels the writes in flight (they report ErrClosed) and refuses
// further calls. Files are left as they are.
func (s *Snapshots) Close() {
	s.closed = true
	for _, w := range s.writes {
		s.overtake(w, ErrClosed)
	}
}
