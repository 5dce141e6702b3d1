package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
)

// The transaction index (Kafka's TransactionIndex, a segment's .txnindex
// file) lists the aborted transactions whose ABORT marker the segment
// holds, in marker order. read_committed fetches use it (AbortedTxns) to
// tell the consumer which batches to drop, and the cleaner to find the
// aborted batches it may remove.
//
// # Who writes it
//
// An entry needs the first offset of its transaction, which only the
// owner's producer state knows, so the owner writes the entries
// (AppendAbortedTxn) in the turn of the loop that appends (or replicates)
// the marker, and the log keeps them: in memory for every segment (they
// are few: one per aborted transaction) and in the segment's .txnindex
// file, created with its first entry, synced by the flush cycles with the
// segment's other files, deleted, truncated and swapped with its segment.
//
// # What a crash leaves, and the index end
//
// The recovery checkpoint carries a third entry, txn-index-end T: every
// aborted transaction with its marker below T has its entry in the files,
// durably (the entries below the checkpoint's offsets are synced in the
// same step as the checkpoint, as the indexes are). Open trusts the entries
// below min(T, recovery point) and drops the rest (a torn tail, entries a
// crash may have lost half of); a .txnindex that does not decode (a torn
// or damaged entry below that point) is emptied, with a warning, and the
// index end lowered to its segment's base. AbortedIndexEnd reports where
// the trusted entries end. The owner, after loading its producer snapshot
// at or below that offset and replaying the log from there to the log end,
// appends the entries of the aborted transactions it found at or past it
// and calls CompleteAbortedIndex: from then on the index is complete to the
// log end and later checkpoints say so. A log whose checkpoint has no
// txn-index-end (one written with Config.TxnIndex off, or before the index
// existed) trusts no entry and the owner replays the whole log once.
//
// Because the owner starts its replay at a snapshot at or below the index
// end, a producer snapshot that is durable beyond the index end never
// loses an entry below it: the snapshot is simply not the replay's start.

// txnIndexEntryBytes is the size of an entry in Kafka's layout, big-endian:
// version (int16, 0), producer id, first offset, last offset, last stable
// offset (int64 each).
const txnIndexEntryBytes = 34

// txnIndexVersion is the only entry version Kafka has written.
const txnIndexVersion = 0

// AbortedTxn is one entry of the transaction index (Kafka's AbortedTxn).
type AbortedTxn struct {
	ProducerID int64
	// FirstOffset is the offset of the transaction's first batch,
	// LastOffset the offset of its ABORT marker.
	FirstOffset, LastOffset int64
	// LastStableOffset is the partition's last stable offset once the
	// marker was appended.
	LastStableOffset int64
}

// txnIndex is a segment's transaction index: entries are all in memory,
// the first written of them in the .txnindex file (page cache).
type txnIndex struct {
	entries []AbortedTxn
	written int
	dirty   bool     // writes or truncations no Sync was issued for yet
	file    env.File // open handle, or nil
}

func encodeAbortedTxn(dst []byte, t AbortedTxn) []byte {
	dst = binary.BigEndian.AppendUint16(dst, txnIndexVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(t.LastStableOffset))
}

// decodeTxnIndex parses a .txnindex file of the segment holding offsets
// [base, next) and returns its entries with a marker below end. Entries
// at or past end are a tail the index does not vouch for (written after
// the last checkpoint, or of batches recovery cut), and so is a partial
// entry at the end (a torn write, which the caller treats as the end of
// what the file vouches for): both are dropped. It returns an error
// when an entry below end cannot be valid (an unknown version, offsets
// outside the segment, out of order): damage at rest.
func decodeTxnIndex(buf []byte, base, next, end int64) ([]AbortedTxn, error) {
	n := len(buf) / txnIndexEntryBytes
	entries := make([]AbortedTxn, 0, n)
	tail := false
	for k := 0; k < n; k++ {
		i := k * txnIndexEntryBytes
		t := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(buf[i+2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(buf[i+10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(buf[i+18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(buf[i+26:])),
		}
		if t.LastOffset >= end {
			tail = true // the rest must be tail too
			continue
		}
		if tail {
			return nil, fmt.Errorf("entry %d with its marker at %d follows one past the index end %d", k, t.LastOffset, end)
		}
		if v := binary.BigEndian.Uint16(buf[i:]); v != txnIndexVersion {
			return nil, fmt.Errorf("entry %d has version %d, want %d", k, v, txnIndexVersion)
		}
		if err := t.check(base, next); err != nil {
			return nil, fmt.Errorf("entry %d: %w", k, err)
		}
		if len(entries) > 0 && t.LastOffset <= entries[len(entries)-1].LastOffset {
			return nil, fmt.Errorf("entry %d with its marker at %d does not follow the marker at %d", k, t.LastOffset, entries[len(entries)-1].LastOffset)
		}
		entries = append(entries, t)
	}
	return entries, nil
}

// check reports an entry that cannot belong to the segment holding
// offsets [base, next).
func (t AbortedTxn) check(base, next int64) error {
	switch {
	case t.ProducerID < 0:
		return fmt.Errorf("producer id %d", t.ProducerID)
	case t.FirstOffset < 0 || t.FirstOffset > t.LastOffset:
		return fmt.Errorf("first offset %d, marker at %d", t.FirstOffset, t.LastOffset)
	case t.LastOffset < base || t.LastOffset >= next:
		return fmt.Errorf("marker at %d outside the segment's [%d, %d)", t.LastOffset, base, next)
	case t.LastStableOffset < 0:
		return fmt.Errorf("last stable offset %d", t.LastStableOffset)
	}
	return nil
}

// txnHandle returns the .txnindex handle of s, opening it (creating it
// with create) within the open-file budget; nil without error when the
// file does not exist and create is false.
func (l *Log) txnHandle(s *segment, create bool) (env.File, error) {
	l.touch(s)
	if s.txns.file != nil {
		return s.txns.file, nil
	}
	name := l.path(segmentFile(s.base, txnIndexSuffix))
	f, err := l.disk.Open(name, false)
	if errors.Is(err, env.ErrNotExist) {
		if !create {
			return nil, nil
		}
		if f, err = l.disk.Open(name, true); err == nil {
			l.dirChanged()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("log: open %s: %w", name, err)
	}
	s.txns.file = f
	l.openFiles++
	l.enforceBudget(s)
	return f, nil
}

// closeTxnFile closes the .txnindex handle of s, if open.
func (l *Log) closeTxnFile(s *segment) {
	if f := s.txns.file; f != nil {
		l.closeLogged(f, "closing segment file")
		s.txns.file = nil
		l.openFiles--
	}
}

// writeTxnEntries appends the entries of s not yet in its file.
func (l *Log) writeTxnEntries(s *segment) error {
	if s.txns.written == len(s.txns.entries) {
		return nil
	}
	f, err := l.txnHandle(s, true)
	if err != nil {
		return l.fail(err)
	}
	buf := l.indexBuf[:0]
	for _, t := range s.txns.entries[s.txns.written:] {
		buf = encodeAbortedTxn(buf, t)
	}
	l.indexBuf = buf
	if err := f.WriteAt(buf, int64(s.txns.written)*txnIndexEntryBytes); err != nil {
		return l.fail(fmt.Errorf("write %s: %w", f.Name(), err))
	}
	s.txns.written = len(s.txns.entries)
	s.txns.dirty = true
	return nil
}

// truncateTxns keeps the entries of s whose marker lies below end, in
// memory and in its file.
func (l *Log) truncateTxns(s *segment, end int64) error {
	n := sort.Search(len(s.txns.entries), func(i int) bool { return s.txns.entries[i].LastOffset >= end })
	if n == len(s.txns.entries) {
		return nil
	}
	s.txns.entries = s.txns.entries[:n]
	s.txns.written = min(s.txns.written, n)
	f, err := l.txnHandle(s, false)
	if err != nil || f == nil {
		return err
	}
	if keep := int64(n) * txnIndexEntryBytes; f.Size() > keep {
		if err := f.Truncate(keep); err != nil {
			return l.fail(fmt.Errorf("truncate %s: %w", f.Name(), err))
		}
		s.txns.dirty = true
	}
	return nil
}

// SetLastStableOffset tells the cleaner the partition's last stable
// offset: it cleans only segments wholly below it, as Kafka's cleaner
// stops at the first unstable offset, so that a read_committed consumer
// (which reads below it) never finds a record gone because of a later one
// it cannot see yet. With Config.TxnIndex, a log that was never told
// cleans nothing past its log start; without, the bound is not used.
func (l *Log) SetLastStableOffset(lso int64) { l.txn.lso, l.txn.lsoSet = lso, true }

// cleanBound is where the last stable offset stops the cleaner.
func (l *Log) cleanBound() int64 {
	switch {
	case !l.cfg.TxnIndex:
		return math.MaxInt64
	case !l.txn.lsoSet:
		return l.logStart
	}
	return l.txn.lso
}

// txnState is the log's side of the index end (see the top of this file).
type txnState struct {
	// end: the entries of every aborted transaction with its marker below
	// it are in the segments' indexes; complete: the owner completed the
	// index, so it tracks the log end from then on.
	end      int64
	complete bool
	// last is the marker offset of the newest entry, -1 for none.
	last int64
	// lso is the last stable offset the owner last set (lsoSet).
	lso    int64
	lsoSet bool
}

// AbortedIndexEnd is the offset below which the transaction index is
// complete: the owner appends the entries of the aborted transactions
// whose markers lie at or beyond it and then calls CompleteAbortedIndex.
// After that (and with Config.TxnIndex off) it is the log end offset.
func (l *Log) AbortedIndexEnd() int64 {
	if !l.cfg.TxnIndex || l.txn.complete {
		return l.LogEndOffset()
	}
	return max(l.txn.end, l.logStart)
}

// AbortedIndexComplete reports whether the owner completed the index
// (CompleteAbortedIndex) since Open.
func (l *Log) AbortedIndexComplete() bool { return !l.cfg.TxnIndex || l.txn.complete }

// CompleteAbortedIndex says that the owner has appended the entries of
// every aborted transaction whose marker lies below end, which must be the
// log end offset: from now on the owner appends each entry in the turn it
// appends its marker, and checkpoints carry the index end with their
// recovery point.
func (l *Log) CompleteAbortedIndex(end int64) error {
	if err := l.mutable(); err != nil {
		return err
	}
	if !l.cfg.TxnIndex {
		return fmt.Errorf("%w: %s has no transaction index (Config.TxnIndex)", ErrInvalidArgument, l.dir)
	}
	if end != l.LogEndOffset() {
		return fmt.Errorf("%w: %s: the transaction index completed to %d, the log ends at %d", ErrInvalidArgument, l.dir, end, l.LogEndOffset())
	}
	l.txn.complete = true
	l.txn.end = end
	if l.fl.checkpointed.txnIndexEnd < l.fl.checkpointed.recoveryPoint {
		// Say so durably, or every Open until the next checkpoint
		// replays from the old index end.
		l.fl.forceCheckpoint = true
		l.requestBackground()
	}
	return nil
}

// AppendAbortedTxn adds the entry of an aborted transaction to the index
// of the segment holding its marker. Entries come in marker order; before
// CompleteAbortedIndex only those at or past AbortedIndexEnd are taken.
// The entry reaches the disk with the next flush cycle, in the same step
// as the data below the checkpoint that covers it.
func (l *Log) AppendAbortedTxn(t AbortedTxn) error {
	if err := l.mutable(); err != nil {
		return err
	}
	if !l.cfg.TxnIndex {
		return fmt.Errorf("%w: %s has no transaction index (Config.TxnIndex)", ErrInvalidArgument, l.dir)
	}
	if t.LastOffset < l.logStart {
		return nil // gone with its segment, as if retention had run after
	}
	i := l.segmentFor(t.LastOffset)
	s := l.segs[i]
	next := l.LogEndOffset()
	if i+1 < len(l.segs) {
		next = l.segs[i+1].base
	}
	if err := t.check(s.base, next); err != nil {
		return fmt.Errorf("%w: %s: aborted transaction: %w", ErrInvalidArgument, l.dir, err)
	}
	if t.LastOffset <= l.txn.last {
		return fmt.Errorf("%w: %s: aborted transaction with its marker at %d after one at %d", ErrInvalidArgument, l.dir, t.LastOffset, l.txn.last)
	}
	if !l.txn.complete && t.LastOffset < l.AbortedIndexEnd() {
		return fmt.Errorf("%w: %s: aborted transaction with its marker at %d, below the index end %d", ErrInvalidArgument, l.dir, t.LastOffset, l.AbortedIndexEnd())
	}
	s.txns.entries = append(s.txns.entries, t)
	l.txn.last = t.LastOffset
	return l.writeTxnEntries(s)
}

// AbortedTxns lists the aborted transactions whose marker is at or after
// from and whose first batch is below upto, in marker order (Kafka's
// collectAbortedTransactions).
func (l *Log) AbortedTxns(from, upto int64) []AbortedTxn {
	out := []AbortedTxn{}
	for _, s := range l.segs[l.segmentFor(from):] {
		j := sort.Search(len(s.txns.entries), func(i int) bool { return s.txns.entries[i].LastOffset >= from })
		for _, t := range s.txns.entries[j:] {
			if t.FirstOffset < upto {
				out = append(out, t)
			}
		}
	}
	return out
}

// txnEndFor is the index end a checkpoint with recovery point rp claims.
func (l *Log) txnEndFor(rp int64) int64 {
	if l.txn.complete {
		return rp
	}
	return min(l.txn.end, rp)
}

// loadTxnIndexes applies the transaction index's recovery (see the top of
// this file) once the segments are recovered: it reads every segment's
// .txnindex, trusts the entries below min(the checkpoint's index end, the
// recovery point) and cuts the rest from memory and the files. A file that
// does not decode or cannot be read is emptied and the index end lowered
// to its segment; one that ends in a torn entry lowers it to after its
// last whole entry.
func (l *Log) loadTxnIndexes(names []string, end int64) error {
	has := make(map[int64]bool)
	for _, name := range names {
		if base, suffix, ok := parseSegmentFile(name); ok && suffix == txnIndexSuffix {
			has[base] = true
		}
	}
	raw := make([][]byte, len(l.segs)) // what each file held, nil when none
	for i, s := range l.segs {
		if !has[s.base] {
			continue
		}
		next := l.LogEndOffset()
		if i+1 < len(l.segs) {
			next = l.segs[i+1].base
		}
		f, err := l.txnHandle(s, false)
		if err != nil {
			return err
		}
		if f == nil {
			continue
		}
		buf, err := readFileStable(f)
		var entries []AbortedTxn
		switch {
		case errors.Is(err, env.ErrIO) && !errors.Is(err, ErrCorrupt):
			// Unreadable (a latent sector error): rewritten below.
			err = fmt.Errorf("unreadable: %w", err)
		case err != nil:
			return err
		default:
			entries, err = decodeTxnIndex(buf, s.base, next, end)
		}
		if err == nil && i > 0 {
			if prev := l.segs[i-1].txns.entries; len(prev) > 0 && len(entries) > 0 && entries[0].LastOffset <= prev[len(prev)-1].LastOffset {
				err = errors.New("its first entry does not follow the previous segment's last")
			}
		}
		if err != nil {
			if s.base < end {
				l.logger.Warn("emptying a damaged transaction index; the owner rebuilds its entries", "file", f.Name(), "err", err)
				end = s.base
			}
			entries = nil
		} else if len(buf)%txnIndexEntryBytes != 0 {
			// A torn entry: its marker lies after the last whole one, and
			// may lie below the index end, so the owner rebuilds from there.
			cut := s.base
			if n := len(entries); n > 0 {
				cut = entries[n-1].LastOffset + 1
			}
			if cut < end {
				l.logger.Warn("a transaction index ends in a torn entry; the owner rebuilds the entries after it", "file", f.Name(), "bytes", len(buf))
				end = cut
			}
		}
		s.txns.entries = entries
		raw[i] = append(buf[:0:0], buf...)
		if raw[i] == nil {
			raw[i] = []byte{}
		}
	}
	for i, s := range l.segs {
		n := sort.Search(len(s.txns.entries), func(k int) bool { return s.txns.entries[k].LastOffset >= end })
		s.txns.entries = s.txns.entries[:n]
		if n > 0 {
			l.txn.last = s.txns.entries[n-1].LastOffset
		}
		if raw[i] != nil {
			if err := l.reconcileTxnFile(s, raw[i]); err != nil {
				return err
			}
		}
	}
	l.txn.end = end
	assert.That(l.txn.last < end, "transaction index entry at %d kept past the index end %d", l.txn.last, end)
	return nil
}

// reconcileTxnFile makes the .txnindex of s, which held data, hold exactly
// its entries: rewritten whole when it differs, and always after a failure
// (failure.go: the page cache may show entries that never reach the disk).
// A rewritten file is dirty, so the settle syncs it before the checkpoint
// vouches for it.
func (l *Log) reconcileTxnFile(s *segment, data []byte) error {
	var want []byte
	for _, t := range s.txns.entries {
		want = encodeAbortedTxn(want, t)
	}
	s.txns.written = len(s.txns.entries)
	if string(data) != string(want) || len(l.fl.markers) > 0 {
		f, err := l.txnHandle(s, true)
		if err != nil {
			return err
		}
		if err := f.Truncate(0); err != nil {
			return fmt.Errorf("truncate %s: %w", f.Name(), err)
		}
		if err := f.WriteAt(want, 0); err != nil {
			return fmt.Errorf("write %s: %w", f.Name(), err)
		}
		s.txns.dirty = true
	}
	if !s.txns.dirty {
		l.closeTxnFile(s)
	}
	return nil
}

// txnTruncated adjusts the index end and the newest marker after a
// truncation to end (the segments' entries are cut with them).
func (l *Log) txnTruncated(end int64) {
	l.txn.end = min(l.txn.end, end)
	l.txn.last = -1
	for i := len(l.segs) - 1; i >= 0; i-- {
		if n := len(l.segs[i].txns.entries); n > 0 {
			l.txn.last = l.segs[i].txns.entries[n-1].LastOffset
			break
		}
	}
	assert.That(l.txn.last < end, "transaction index entry at %d survived the truncation to %d", l.txn.last, end)
}
