package log

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/strata-log/strata/core/assert"
)

// UndefinedEpoch and UndefinedEpochOffset are Kafka's answers to an
// OffsetForLeaderEpoch about an epoch the log cannot place.
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// epochEntry says that leader epoch epoch wrote its first batch at
// startOffset.
type epochEntry struct {
	epoch       int32
	startOffset int64
}

// epochCache is Kafka's leader-epoch cache: for each leader epoch that
// wrote to the log, the offset of its first batch. Epochs and start offsets
// strictly increase. It is kept in leader-epoch-checkpoint, in Kafka's
// format:
//
//	0
//	2
//	0 0
//	3 1200
//
// The cache is rebuilt from batch headers for the part of the log that
// recovery scans, so the file only has to cover the epochs that start below
// the recovery point (the flush cycle writes it before the recovery point
// passes them).
//
// The log start offset moves the first epoch's start (Kafka's
// truncateFromStart). The log applies that only to answers (view) and to
// the file up to the log start offset already durable, and prunes the
// entries once the checkpoint holding the new log start offset is: were
// the file to run ahead of the checkpoint, a crash could bring back an old
// log start offset whose first batches no epoch covers.
type epochCache struct {
	entries []epochEntry
	// version counts changes, so the flusher knows whether the file is
	// current.
	version uint64
}

func (c *epochCache) latest() (epochEntry, bool) {
	if len(c.entries) == 0 {
		return epochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// latestEpoch is the latest epoch, or UndefinedEpoch.
func (c *epochCache) latestEpoch() int32 {
	if e, ok := c.latest(); ok {
		return e.epoch
	}
	return UndefinedEpoch
}

// assign records that epoch starts at startOffset, if epoch is newer than
// the latest. Callers check their input first: an older epoch, or a start
// below the latest one's, is an invariant violation here.
func (c *epochCache) assign(epoch int32, startOffset int64) {
	last, ok := c.latest()
	if ok && epoch == last.epoch {
		return
	}
	if ok {
		assert.That(epoch > last.epoch, "leader epoch moved backwards: %d after %d", epoch, last.epoch)
		assert.That(startOffset >= last.startOffset, "leader epoch %d starts at %d, before epoch %d's start %d",
			epoch, startOffset, last.epoch, last.startOffset)
		if startOffset == last.startOffset {
			// The previous epoch wrote nothing; Kafka replaces it.
			c.entries = c.entries[:len(c.entries)-1]
		}
	}
	c.entries = append(c.entries, epochEntry{epoch: epoch, startOffset: startOffset})
	c.version++
}

// truncateFromEnd removes the epochs that start at or after endOffset (a
// truncation of the log to endOffset).
func (c *epochCache) truncateFromEnd(endOffset int64) {
	n := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].startOffset >= endOffset })
	if n < len(c.entries) {
		c.entries = c.entries[:n]
		c.version++
	}
}

// truncateFromStart drops the epochs that end at or before startOffset and
// moves the start of the epoch holding it to startOffset, as Kafka does when
// the log start offset advances.
func (c *epochCache) truncateFromStart(startOffset int64) {
	n := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].startOffset > startOffset })
	if n == 0 {
		return // every epoch starts after startOffset
	}
	first := c.entries[n-1]
	if n == 1 && first.startOffset == startOffset {
		return
	}
	first.startOffset = startOffset
	c.entries = append([]epochEntry{first}, c.entries[n:]...)
	c.version++
}

// view returns a copy with the start moved to logStart, as answers see it.
func (c *epochCache) view(logStart int64) *epochCache {
	v := &epochCache{entries: append([]epochEntry(nil), c.entries...)}
	v.truncateFromStart(logStart)
	return v
}

// prune drops what lies before logStart for good (once a checkpoint with
// that log start offset is durable). The file need not follow at once.
func (c *epochCache) prune(logStart int64) {
	version := c.version
	c.truncateFromStart(logStart)
	c.version = version
}

// clear empties the cache.
func (c *epochCache) clear() {
	if len(c.entries) > 0 {
		c.entries = nil
		c.version++
	}
}

// endOffsetFor answers OffsetForLeaderEpoch as Kafka's endOffsetFor does:
// for the latest epoch, the log end offset; for an older epoch, the start
// offset of the first newer epoch, together with the largest epoch not
// above the one asked for; for an epoch newer than any, undefined.
func (c *epochCache) endOffsetFor(epoch int32, logEndOffset int64) (int32, int64) {
	if epoch == UndefinedEpoch {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	last, ok := c.latest()
	if ok && last.epoch == epoch {
		return epoch, logEndOffset
	}
	higher := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].epoch > epoch })
	if higher == len(c.entries) {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if higher == 0 {
		return epoch, c.entries[0].startOffset
	}
	return c.entries[higher-1].epoch, c.entries[higher].startOffset
}

// epochFor returns the epoch that wrote offset, or UndefinedEpoch.
func (c *epochCache) epochFor(offset int64) int32 {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].startOffset > offset }) - 1
	if i < 0 {
		return UndefinedEpoch
	}
	return c.entries[i].epoch
}

func (c *epochCache) encode() []byte {
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = strconv.FormatInt(int64(e.epoch), 10) + " " + strconv.FormatInt(e.startOffset, 10)
	}
	return encodeCheckpointLines(lines)
}

// parseEpochCheckpoint parses a leader-epoch-checkpoint file.
func parseEpochCheckpoint(data []byte) ([]epochEntry, error) {
	lines, err := parseCheckpointLines(data, 2)
	if err != nil {
		return nil, err
	}
	entries := make([]epochEntry, 0, len(lines))
	for i, f := range lines {
		epoch, err1 := strconv.ParseInt(f[0], 10, 32)
		start, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || start < 0 {
			return nil, fmt.Errorf("entry %d %q is not an epoch and an offset", i, f[0]+" "+f[1])
		}
		e := epochEntry{epoch: int32(epoch), startOffset: start}
		if n := len(entries); n > 0 && (e.epoch <= entries[n-1].epoch || e.startOffset <= entries[n-1].startOffset) {
			return nil, fmt.Errorf("entry %d (%d, %d) does not follow (%d, %d)", i, e.epoch, e.startOffset,
				entries[n-1].epoch, entries[n-1].startOffset)
		}
		entries = append(entries, e)
	}
	return entries, nil
}
