package log

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/strata-log/strata/core/env"
)

// The cleaner checkpoint, cleaner-checkpoint in the partition directory,
// records how far the cleaner got (Kafka keeps the same offset, per
// partition, in its log directory's cleaner-offset-checkpoint). In the
// checkpoint text format of checkpoint.go:
//
//	0
//	3
//	first-dirty-offset 1234
//	epoch 7
//	first-segment-offset 1000
//
// first-dirty-offset F: every record below F, in the segments based at or
// after first-segment-offset S, was cleaned against an offset map that
// covered the records up to F, so there each key has at most one record
// (its latest as of that cleaning), and the next cleaning maps only from F.
// epoch is the leader epoch that wrote offset F-1, as the epoch cache said
// when the checkpoint was written (UndefinedEpoch if unknown). S is the base
// offset of the log's first segment then: segments retention deletes while
// a cleaning runs are not cleaned by it, and a crash can bring them back
// (their deletion is durable only at the next flush), so a log that starts
// below S again holds records no cleaning compared with F's map.
//
// F matters for correctness in one direction only. A checkpoint that is too
// low costs work. One that claims too much would be wrong: records it
// wrongly counts as cleaned are never compared with the map, so an older
// value of a key could survive below F next to a tombstone that a later
// cleaning removes after delete.retention.ms, and the deleted key would
// read again. That happens after a truncation below F and new appends
// there, and when segments deleted by retention come back (S above). So F
// is lowered when the log is truncated below it (in memory at once, on disk
// at the next step), and F is trusted only while the epoch cache still
// gives F-1 the recorded epoch (a truncation that a crash separated from the
// lowered checkpoint was followed by appends of a newer leader epoch, which
// the comparison detects) and the log's first segment is not below S. A
// checkpoint that cannot be trusted or read counts as F = log start offset:
// everything is dirty again.
//
// It is replaced like the other checkpoints: written to a .tmp file,
// synced, renamed into place, and the directory synced by the flush cycle
// (Open deletes a leftover .tmp file).
const (
	cleanerCheckpointName = "cleaner-checkpoint"
	keyFirstDirtyOffset   = "first-dirty-offset"
	keyEpoch              = "epoch"
	keyFirstSegmentOffset = "first-segment-offset"
)

// cleanerCheckpoint is the content of the cleaner checkpoint.
type cleanerCheckpoint struct {
	firstDirty   int64
	epoch        int32
	firstSegment int64
}

func (c cleanerCheckpoint) encode() []byte {
	return encodeCheckpointLines([]string{
		keyFirstDirtyOffset + " " + strconv.FormatInt(c.firstDirty, 10),
		keyEpoch + " " + strconv.FormatInt(int64(c.epoch), 10),
		keyFirstSegmentOffset + " " + strconv.FormatInt(c.firstSegment, 10),
	})
}

func parseCleanerCheckpoint(data []byte) (cleanerCheckpoint, error) {
	lines, err := parseCheckpointLines(data, 2)
	if err != nil {
		return cleanerCheckpoint{}, err
	}
	c := cleanerCheckpoint{firstDirty: -1, epoch: UndefinedEpoch, firstSegment: -1}
	seenEpoch := false
	for _, f := range lines {
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return cleanerCheckpoint{}, fmt.Errorf("%s value %q is not a number", f[0], f[1])
		}
		switch f[0] {
		case keyFirstDirtyOffset:
			if v < 0 {
				return cleanerCheckpoint{}, fmt.Errorf("%s %d is negative", f[0], v)
			}
			c.firstDirty = v
		case keyEpoch:
			if v < int64(UndefinedEpoch) || v > int64(^uint32(0)>>1) {
				return cleanerCheckpoint{}, fmt.Errorf("%s %d is not a leader epoch", f[0], v)
			}
			c.epoch, seenEpoch = int32(v), true
		case keyFirstSegmentOffset:
			if v < 0 {
				return cleanerCheckpoint{}, fmt.Errorf("%s %d is negative", f[0], v)
			}
			c.firstSegment = v
		default:
			return cleanerCheckpoint{}, fmt.Errorf("unknown entry %q", f[0])
		}
	}
	if c.firstDirty < 0 || !seenEpoch || c.firstSegment < 0 {
		return cleanerCheckpoint{}, errors.New("missing first-dirty-offset, epoch or first-segment-offset")
	}
	return c, nil
}

// loadCleanerCheckpoint reads the cleaner checkpoint once per Log. A
// missing file means nothing was cleaned; one that does not parse or read
// is logged and counts as missing: the cost is a full cleaning, never data.
func (l *Log) loadCleanerCheckpoint() {
	c := l.clean
	if c.loaded {
		return
	}
	c.loaded = true
	c.ckpt = cleanerCheckpoint{firstDirty: 0, epoch: UndefinedEpoch}
	name := l.path(cleanerCheckpointName)
	data, ok, err := readCheckpointFile(l.disk, name)
	if err == nil && ok {
		var ck cleanerCheckpoint
		if ck, err = parseCleanerCheckpoint(data); err == nil {
			c.ckpt = ck
		}
	}
	if err != nil {
		l.logger.Warn("ignoring the cleaner checkpoint; the whole log counts as dirty", "file", name, "err", err)
	}
}

// writeCleanerCheckpoint makes ck the durable cleaner checkpoint and calls
// done on the loop, never inline. A full disk is returned as is; any other
// failure fails the log, as every failed write, Sync or SyncDir does.
func (l *Log) writeCleanerCheckpoint(ck cleanerCheckpoint, done func(error)) {
	tmp := l.path(cleanerCheckpointName + tmpSuffix)
	f, err := l.disk.Open(tmp, true)
	if err == nil {
		l.dirChanged()
		if err = f.Truncate(0); err == nil {
			err = f.WriteAt(ck.encode(), 0)
		}
	}
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		err = fmt.Errorf("log %s: write %s: %w", l.dir, tmp, err)
		if !errors.Is(err, env.ErrNoSpace) {
			err = l.fail(err)
		}
		l.e.Post(func() { done(err) })
		return
	}
	f.Sync(func(err error) {
		_ = f.Close()
		if err == nil {
			err = l.usable()
		}
		if err == nil {
			if err = l.disk.Rename(tmp, l.path(cleanerCheckpointName)); err != nil {
				err = fmt.Errorf("rename %s: %w", tmp, err)
			}
		}
		if err != nil {
			done(l.failUnlessClosed(err))
			return
		}
		l.dirChanged()
		l.syncDirChanges(done)
	})
}

// failUnlessClosed fails the log with err, unless the log is already
// closed or failed, whose error it returns instead.
func (l *Log) failUnlessClosed(err error) error {
	if uerr := l.usable(); uerr != nil {
		return uerr
	}
	return l.fail(err)
}
