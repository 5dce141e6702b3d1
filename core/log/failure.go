package log

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"path"
	"strconv"

	"github.com/strata-log/strata/core/env"
)

// # After a failed Sync: the failure marker
//
// When a file's Sync fails, the writes it covered are lost for good, yet
// the page cache may go on showing them (Linux marks the pages clean after
// the EIO: PostgreSQL's "fsyncgate"), and the filesystem goes on working.
// The log then fails. A power loss is harmless: recovery sees only what
// reached the disk, and what was lost lies beyond the last recovery point,
// which only successful syncs move. A process restart with the machine up
// is not: the next Open reads the page cache, finds the lost bytes valid,
// its settling flush syncs nothing (the pages are clean) and it
// checkpoints a recovery point over data that is not on the disk; the next
// power loss leaves zeros below the recovery point, and Open fails for
// good. Nor can the new process tell those bytes from data a process
// killed without a failure left in the page cache, which must stay (it may
// have been flushed, and the recovery checkpoint lags the flushes).
//
// So a failing log leaves evidence first: an empty file .sync-failed-<D>
// in its directory, D being its durable offset (every batch below D was
// covered by a successful flush cycle). It does so in the turn of the loop
// that reports the failed Sync (flush.go's op), before the process can
// die. The name carries D so that creating the marker is a single
// directory change, atomic, that needs no data block (a full disk cannot
// stop it, a torn write cannot garble it). The marker does not need to
// reach the disk: it matters only while the page cache still shows lost
// writes, that is until a power loss, and a page-cache entry is visible to
// the next process at once; the log nevertheless asks for a SyncDir, best
// effort. If even the creation fails (ENOSPC: a full directory block, no
// free inode; the disk that failed the Sync for delayed allocation is
// likely full), the log remembers it: UnmarkedFailure reports the durable
// offset, and the log's owner must create the marker with MarkFailed,
// retrying, before it opens the log again in this process. An Open
// without it would trust the page cache; a process that dies before the
// marker exists leaves that window open, as the kernel's window below.
//
// A failed SyncDir needs no marker. It fails the whole filesystem
// (env.Disk: ext4 aborts its journal, XFS shuts down): every change, Sync
// and SyncDir fails until the machine restarts, so no later incarnation can
// write anything over the page cache's view (its Open fails with
// ErrStorageUnavailable, or its first flush fails the log), and the
// machine's restart drops the page cache, leaving only what is durable.
// The marker's creation then fails too, which is expected.
//
// Open (recover.go) looks for markers. With one (or several: a failure
// while recovering from one adds another; the largest D counts, since
// nothing is appended until the markers are gone) it distrusts everything
// at or beyond T = D: the recovery point is lowered to T if it was above;
// segments based at or beyond T are deleted (keeping the first); the last
// one is cut at T; every scanned segment's .log gets a truncation that the
// settling flush syncs (re-issuing a cut the failed incarnation made in
// the page cache only) and its index files are rewritten whole (their
// page cache may show entries that are lost too). What is dropped was
// never acknowledged by a Flush, so dropping it is always safe; acks=1
// style data the leader had acknowledged to producers before it was
// flushed is gone, as after a power loss, and the replicas (or the Raft
// leader) bring it back if it was committed. The settling flush then syncs
// the cut files, installs a recovery checkpoint at the new log end, syncs
// the directory, and only then removes the markers and syncs the directory
// again. The log refuses changes (ErrBusy) until all of that is done, so
// nothing new is built on data the marker still disowns; a crash at any
// point leaves the markers (Open starts over, to the same result), or a
// durable checkpoint at T with every cut durable (markers gone), or, if
// the marker itself never reached the disk, the disk as the failed
// incarnation left it, from which ordinary recovery may bring back
// batches the marker's Open had dropped: never-flushed data a crash kept,
// which the log allows (nothing was built on the cut).
//
// A log never installs a recovery checkpoint once failed: every cycle
// stops at its first error. The checkpoints (recovery, leader epoch,
// cleaner) are written to .tmp, synced and only then renamed, so a failed
// Sync of one never puts it in place; the settle rewrites both log
// checkpoints (the cleaner checkpoint is lowered to the log end in memory;
// an older one on the disk only costs cleaning). A cleaner group whose
// .cleaned files fail to sync is never swapped in; Open deletes the
// leftovers. Recovery trusts the bytes below the recovery point without a
// CRC check (rules 4 and 6 of Open), as Kafka does; that is sound again
// with the marker, because a recovery point is now only ever written over
// data synced successfully (or read back after a power loss) by the
// incarnation that writes it.
//
// Limits. A failure while settling a normal recovery (no marker) can vouch
// only for what the previous incarnation noted in its flushed-offset hint
// (below); without a hint, data it had flushed beyond its last checkpoint
// is dropped by the next Open. A process killed between a failed Sync and
// the turn that reports it (the completion is lost with the process)
// leaves no marker; that window is the kernel's, not the log's.

// markFailed creates the failure marker for the current durable offset,
// best effort (see above). It is not called while Open recovers: no Sync
// of this incarnation has failed then, and its durable offset is not
// known yet.
func (l *Log) markFailed() {
	if l.fl.recovering {
		return
	}
	d := l.fl.durableOffset
	if l.fl.settle {
		d = max(d, l.fl.hinted) // see the flushed-offset hint below
	}
	name := l.path(failedMarkerFile(d))
	err := MarkFailed(l.e, l.dir, d)
	if errors.Is(err, env.ErrIO) {
		l.logger.Warn("the disk refuses changes (a failed directory sync fails the filesystem until the machine restarts): no failure marker is needed",
			"file", name, "err", err)
		return
	}
	if err != nil {
		l.fl.unmarked, l.fl.hasUnmarked = d, true
		l.logger.Error("cannot create the failure marker (a double fault): the owner must create it before the next Open",
			"file", name, "err", err)
		return
	}
	l.logger.Warn("marked the log failed: the next Open drops what lies beyond the durable offset",
		"file", name, "durableOffset", d)
}

// UnmarkedFailure reports whether the log failed without its failure
// marker (its creation failed, a double fault) and the durable offset the
// marker must carry. The log's owner must then create it with MarkFailed
// (retrying until it succeeds) before it opens the log in dir again:
// Open would otherwise trust a page cache that shows lost writes.
func (l *Log) UnmarkedFailure() (durableOffset int64, ok bool) {
	return l.fl.unmarked, l.fl.hasUnmarked
}

// MarkFailed creates the failure marker of the log in dir for durable
// offset d (see "After a failed Sync" above) and asks for a directory
// sync, best effort. An error wrapping env.ErrIO means the filesystem
// refuses changes, which needs no marker (a failed directory sync: the
// machine's restart drops the page cache); any other error means the
// marker does not exist.
func MarkFailed(e env.Env, dir string, d int64) error {
	return createMarker(e, dir, failedMarkerFile(d))
}

// createMarker creates an empty marker file in dir and asks for a
// directory sync, best effort.
func createMarker(e env.Env, dir, file string) error {
	name := path.Join(dir, file)
	f, err := e.Disk().Open(name, true)
	if err != nil {
		return err
	}
	_ = f.Close()
	e.Disk().SyncDir(dir, func(err error) {
		if err != nil {
			e.Logger().Error("cannot make the failure marker durable", "file", name, "err", err)
		}
	})
	return nil
}

// readFailedMarkers lists the failure markers of the directory and returns
// the offset the log is trusted below: the largest durable offset they
// record, or math.MaxInt64 without markers.
func (l *Log) readFailedMarkers() (int64, error) {
	names, err := l.disk.List(l.dir)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", l.dir, err)
	}
	trusted := int64(-1)
	l.fl.markers = nil
	for _, name := range names {
		d, ok := parseFailedMarkerFile(name)
		if !ok {
			continue
		}
		l.fl.markers = append(l.fl.markers, name)
		trusted = max(trusted, d)
	}
	if len(l.fl.markers) == 0 {
		return math.MaxInt64, nil
	}
	l.logger.Warn("the log failed before: dropping what lies beyond its durable offset", "markers", l.fl.markers, "durableOffset", trusted)
	return trusted, nil
}

// removeFailedMarkers deletes the markers Open found, once the recovery
// that obeyed them is durable; the caller syncs the directory.
func (l *Log) removeFailedMarkers() error {
	for _, name := range l.fl.markers {
		if err := l.disk.Remove(l.path(name)); err != nil {
			return fmt.Errorf("remove %s: %w", name, err)
		}
		l.dirChanged()
	}
	l.fl.markers = nil
	return nil
}

// The flushed-offset hint. A failure while settling a normal recovery (no
// marker) must record a durable offset too, and the recovery point is too
// low: the recovery checkpoint lags the flushes, and the next Open would
// drop data a previous, killed incarnation had flushed beyond it. So every
// incarnation notes its durable offset in .flushed-offset whenever it
// changes, with the machine's boot identifier (env.Disk.BootID, hashed): a
// fixed-size overwrite in the page cache, never synced, lowered in the
// same turn of the loop as a truncation's cut. Open reads it as follows.
// A note of this boot was read from the page cache as last written (only
// processes died since), so it is at most what was durable: it vouches for
// that much. After a machine restart everything recovery reads is on the
// disk, so any offset up to the log end is durable, and the note cannot
// say less: a note of another boot, or one missing, empty or all zeros
// (sized, never written back), counts as the log end. The note must not be
// trusted after a restart: the kernel writes dirty pages back on its own,
// and a restart may leave any version of the never-synced note on the
// disk, or an old one a previous restart left (kraft5 seed 1541: a note of
// 1 from the first power loss survived the second, and a failed settle
// dropped acknowledged Raft entries). Without a boot identifier (""), a
// note is taken at its word, which is safe but may drop flushed data. A
// note that cannot be written fails the log (its file is sized sparsely
// first, so an overwrite never needs space), so that a missing note never
// means anything but a restart or a new log. A note in another format
// (torn, corrupt, an older release's) vouches for the recovery point only.

// allZero reports whether a note is all zeros: its sparse size reached the
// disk and its never-synced page did not, which only a power loss leaves
// (a journaling filesystem commits the size change without the data). In
// the page cache of a live machine the note is written in the same turn
// as its sizing, and a write that fails fails the log, which leaves a
// marker. So a zero note counts as a missing one.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// writeHint notes the durable offset in the hint file if it changed,
// through a short-lived handle: a broker holds thousands of logs, and a
// handle per log for a note is a file handle too many.
func (l *Log) writeHint() {
	d := l.fl.durableOffset
	if l.failed != nil || d == l.fl.hintWritten {
		return
	}
	name := l.path(flushedHintName)
	f, err := l.disk.Open(name, true)
	if err == nil && f.Size() != hintBytes {
		err = f.Truncate(hintBytes)
	}
	if err == nil {
		err = f.WriteAt(fmt.Appendf(nil, "%020d %016x\n", d, bootHash(l.disk.BootID())), 0)
	}
	if f != nil {
		if cerr := f.Close(); err == nil && !errors.Is(cerr, env.ErrClosed) {
			err = cerr
		}
	}
	if err != nil {
		_ = l.fail(fmt.Errorf("note the flushed offset in %s: %w", name, err))
		return
	}
	l.fl.hintWritten = d
}

// hintBytes is the size of the note: 20 digits of offset, a space, 16 hex
// digits of boot hash and a newline.
const hintBytes = offsetNameDigits + 1 + 16 + 1

// bootHash condenses a boot identifier to the note's 16 hex digits; 0
// stands for an unknown boot.
func bootHash(id string) uint64 {
	if id == "" {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return max(h.Sum64(), 1)
}

// readHint sets hinted from the hint file a previous incarnation left (see
// above): at least the recovery point, at most the log end.
func (l *Log) readHint(recoveryPoint, leo int64) {
	l.fl.hinted = recoveryPoint
	data, ok, err := readCheckpointFile(l.disk, l.path(flushedHintName))
	switch {
	case err != nil:
		return
	case !ok || len(data) == 0 || allZero(data):
		l.fl.hinted = max(recoveryPoint, leo)
		return
	case len(data) != hintBytes || data[offsetNameDigits] != ' ' || data[hintBytes-1] != '\n':
		return
	}
	v, err := strconv.ParseInt(string(data[:offsetNameDigits]), 10, 64)
	if err != nil || v < 0 {
		return
	}
	boot, err := strconv.ParseUint(string(data[offsetNameDigits+1:hintBytes-1]), 16, 64)
	if err != nil {
		return
	}
	if now := bootHash(l.disk.BootID()); now != 0 && boot != now {
		l.fl.hinted = max(recoveryPoint, leo) // written before a restart
		return
	}
	l.fl.hinted = max(recoveryPoint, min(v, leo))
}
