package log

import (
	"path"
	"strconv"
	"strings"
)

// File names inside a partition directory, Kafka's where Kafka has them.
const (
	// logSuffix, indexSuffix and timeIndexSuffix end a segment's data, offset
	// index and time index files: 00000000000000000000.log and so on.
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	// txnIndexSuffix ends a segment's transaction index (txnindex.go),
	// created with its first entry.
	txnIndexSuffix = ".txnindex"

	// cleanedSuffix marks a file a cleaner is still writing (Kafka's
	// .cleaned). Recovery deletes it: the segment it would replace is
	// intact.
	cleanedSuffix = ".cleaned"
	// swapSuffix marks a finished replacement file whose swap was
	// interrupted (Kafka's .swap). Recovery completes the swap once the
	// .log file of the set is a .swap.
	swapSuffix = ".swap"
	// deletedSuffix marks a file scheduled for deletion (Kafka's
	// .deleted). Recovery deletes it.
	deletedSuffix = ".deleted"
	// tmpSuffix marks a checkpoint being written. Recovery deletes it: a
	// checkpoint counts only once renamed into place.
	tmpSuffix = ".tmp"

	// checkpointName holds the recovery point and the log start offset.
	checkpointName = "recovery-checkpoint"
	// epochCheckpointName is Kafka's leader-epoch-checkpoint.
	epochCheckpointName = "leader-epoch-checkpoint"

	// failedMarkerPrefix starts the name of a failure marker,
	// .sync-failed-<D>: an empty file a log creates when it fails (see
	// failure.go), D being the offset below which its flushes had made
	// everything durable. Its presence tells the next Open to distrust what
	// the page cache shows at or beyond D.
	failedMarkerPrefix = ".sync-failed-"
	// .damaged-<D>: the failure marker Scrub leaves (damagedMarkerFile).
	damagedMarkerPrefix = ".damaged-"
	// flushedHintName is a page-cache note of the durable offset (see
	// failure.go), never synced.
	flushedHintName = ".flushed-offset"
	// compactedMarkerName: an empty file a log opened with a compacting
	// cleanup.policy creates, never removed: the log may hold gaps in
	// its offsets (Scrub holds only logs without it to contiguous
	// offsets).
	compactedMarkerName = ".compacted"

	// offsetNameDigits is the width of the zero-padded base offset in a
	// segment file name: enough for any int64.
	offsetNameDigits = 20
)

// segmentFile returns the name of a segment file: the base offset padded to
// 20 digits, then suffix (e.g. ".log", ".index.swap").
func segmentFile(base int64, suffix string) string {
	s := strconv.FormatInt(base, 10)
	return strings.Repeat("0", offsetNameDigits-len(s)) + s + suffix
}

// parseSegmentFile splits a segment file name into its base offset and
// suffix (everything after the digits: ".log", ".index.swap", ...). ok is
// false for names that do not start with exactly 20 digits and a dot.
func parseSegmentFile(name string) (base int64, suffix string, ok bool) {
	if len(name) <= offsetNameDigits || name[offsetNameDigits] != '.' {
		return 0, "", false
	}
	digits := name[:offsetNameDigits]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, "", false
		}
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, "", false
	}
	return base, name[offsetNameDigits:], true
}

// failedMarkerFile returns the name of the failure marker for durable
// offset d.
func failedMarkerFile(d int64) string {
	return failedMarkerPrefix + strconv.FormatInt(d, 10)
}

// damagedMarkerFile returns the name of the marker Scrub leaves for damage
// found at offset d: a failure marker to Open, which drops everything
// from d, and, until an Open settles it, the sign that the log drops data
// it may have acknowledged (a failed Sync's marker drops only what was
// never durable).
func damagedMarkerFile(d int64) string {
	return damagedMarkerPrefix + strconv.FormatInt(d, 10)
}

// parseFailedMarkerFile returns the durable offset a failure marker's name
// records (a failed Sync's or Scrub's); ok is false for other names.
func parseFailedMarkerFile(name string) (int64, bool) {
	digits, found := strings.CutPrefix(name, failedMarkerPrefix)
	if !found {
		digits, found = strings.CutPrefix(name, damagedMarkerPrefix)
	}
	if !found || digits == "" {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	d, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return d, true
}

// join returns the disk path of name inside the log directory.
func (l *Log) path(name string) string { return path.Join(l.dir, name) }
