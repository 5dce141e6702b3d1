package log

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/strata-log/strata/core/env"
)

// # The start-up scrub
//
// Open trusts the segments below the recovery point (rules 4 and 6: a
// header walk, no CRC check) and Read serves stored bytes unchecked, as
// Kafka does. A medium that damages data at rest (a bit flipped by a
// successful write, a misdirected write; both show once a power loss
// drops the page cache) would then keep a damaged batch below the
// recovery point: the replica serves it, followers refuse it, consumers
// refuse it. Scrub finds such damage before the log opens: it reads every
// batch of every segment, checks it as recovery does (framing, CRC with
// core/record, offsets in order within their segment, segments that
// continue each other), and at the first bad one leaves a failure marker
// (failure.go) for the offset where the bad batch starts, so that the
// next Open drops it and everything after it, whether it lies below the
// recovery point or not.
//
// A replica that drops records it had acknowledged must not count as
// holding them: its owner registers the broker as one whose disk was
// replaced (core/server), so that the controller takes it out of every
// eligible leader replica set and replaces it as an ISR's last member
// before the log reopens, and the replica fetches what it dropped again.
//
// Beyond the recovery point, a bad batch may be a torn tail (a power loss
// kept part of unsynced appends, or with page-granular writeback, holes)
// rather than damage: the recovery checkpoint lags the flushes, so nothing
// durable tells the two apart. Scrub reports both as damage; the cost is
// that a broker with a torn tail forgets its eligible leader places, as
// Kafka's brokers do after every unclean shutdown (KIP-966).
//
// Reads are repeated until two agree (a read may flip a bit, the stored
// data does not change), and a batch that fails is read once more from
// scratch, as recovery reads. An unreadable page (an error wrapping
// env.ErrIO) counts as damage at the batch that holds it. Scrub reads on
// the loop, at most scrubStepBytes per turn.

// scrubStepBytes bounds what Scrub reads in one turn of the loop (each
// range is read at least twice).
const scrubStepBytes = 4 << 20

// ScrubResult is what Scrub found in one log directory.
type ScrubResult struct {
	// Segments and Bytes count the segment files and bytes checked.
	Segments int
	Bytes    int64
	// Damaged is set when a bad batch (or an unreadable page) was found;
	// Offset is where it starts, from which the next Open drops every
	// offset, and Err says what and where (a *CorruptError, or an I/O
	// error naming the file and position).
	Damaged bool
	Offset  int64
	Err     error
}

// Scrub checks the partition log in dir on e's Disk (see "The start-up
// scrub" above) and, at its first damaged batch, creates a failure marker
// for the offset it starts at, unless a marker already drops it. done runs
// on the loop, on a later turn, with what it found; an error means the
// scrub could not finish (a listing or a marker failed), and the log's
// damage is then unknown. A directory holding no log is clean. The
// returned stop function abandons the scrub: done never runs after it.
//
// Scrub must run before Open, never on a directory whose log is open.
//
// A batch's CRC does not cover its base offset or its partition leader
// epoch, so a bit flipped there passes it: Scrub also requires leader
// epochs never to decrease and, in a log that was never compacted, every
// batch of a segment to start where the one before it ended, and its
// first at its base offset (or at the checkpointed log start offset,
// where a replica that began at its leader's log start appended into a
// segment based lower). A log opened with a compacting policy, here or on
// a leader it copied cleaned segments from, may hold gaps: it has a
// .compacted marker (Open), and is not held to contiguous offsets. Any
// log, compacted or not, is held to its leader-epoch-checkpoint: a gap
// over the start of an epoch the file lists below the recovery point is
// damage (missingEpochStart), since every such epoch starts at a batch the
// log keeps.
func Scrub(e env.Env, dir string, done func(ScrubResult, error)) (stop func()) {
	sc := &scrub{e: e, disk: e.Disk(), dir: dir, done: done, contiguous: true, epoch: -1}
	e.Post(sc.start)
	return func() { sc.stopped = true }
}

// scrub is one Scrub in progress.
type scrub struct {
	e       env.Env
	disk    env.Disk
	dir     string
	done    func(ScrubResult, error)
	stopped bool
	res     ScrubResult

	bases []int64 // segment base offsets, sorted
	limit int64   // offsets at or beyond it are dropped by a marker already
	i     int     // the segment being read
	f     env.File
	sc    *scanner
	next  int64 // the offset the next batch of segment i must not start below
	// contiguous: the next batch must start at next exactly; epoch is
	// the largest partition leader epoch read so far.
	contiguous bool
	epoch      int32
	// prevNext is where the previous batch of this segment had to start
	// (-1 at a segment's first batch); logStart is the checkpointed log
	// start offset (0 without one).
	prevNext int64
	logStart int64
	// damagedMarker: a marker a previous scrub left is still there.
	damagedMarker bool
	// epochs is the leader-epoch-checkpoint as the disk holds it and
	// recoveryPoint the recovery checkpoint's; epochsOK is set when both
	// were read (see checkEpoch).
	epochs        []epochEntry
	recoveryPoint int64
	epochsOK      bool
}

func (s *scrub) start() {
	if s.stopped {
		return
	}
	if err := s.list(); err != nil {
		s.finish(err)
		return
	}
	s.step()
}

// list finds the segments, skips those Open deletes unread (wholly below
// the checkpointed log start offset), and the offset beyond which a
// failure marker already drops everything.
func (s *scrub) list() error {
	names, err := s.disk.List(s.dir)
	if errors.Is(err, env.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("log: scrub: list %s: %w", s.dir, err)
	}
	s.limit = math.MaxInt64
	trusted := int64(-1)
	for _, name := range names {
		if name == compactedMarkerName {
			s.contiguous = false // compaction may have left gaps
			continue
		}
		if d, ok := parseFailedMarkerFile(name); ok {
			trusted = max(trusted, d) // the largest counts (failure.go)
			if strings.HasPrefix(name, damagedMarkerPrefix) {
				s.damagedMarker = true
			}
			continue
		}
		if base, suffix, ok := parseSegmentFile(name); ok && suffix == logSuffix {
			s.bases = append(s.bases, base)
		}
	}
	if trusted >= 0 {
		s.limit = trusted
	}
	slices.Sort(s.bases)
	data, ok, err := readCheckpointFile(s.disk, path.Join(s.dir, checkpointName))
	if err == nil && ok {
		if ckpt, perr := parseCheckpoint(data); perr == nil {
			s.logStart, s.recoveryPoint = ckpt.logStartOffset, ckpt.recoveryPoint
			for len(s.bases) > 1 && s.bases[1] <= ckpt.logStartOffset {
				s.bases = s.bases[1:]
			}
			s.readEpochs()
		}
	}
	// An unreadable or damaged checkpoint is Open's to report: the scrub
	// then reads every segment.
	if len(s.bases) > 0 {
		s.next = s.bases[0]
	}
	return nil
}

// step reads up to scrubStepBytes and posts the next step.
func (s *scrub) step() {
	if s.stopped {
		s.closeFile()
		return
	}
	budget := int64(scrubStepBytes)
	for budget > 0 {
		if s.sc == nil {
			if s.i < len(s.bases) && s.bases[s.i] >= s.limit && !s.res.Damaged {
				s.pendingDrop()
			}
			if s.i == len(s.bases) || s.bases[s.i] >= s.limit {
				s.finish(nil)
				return
			}
			if err := s.openSegment(); err != nil {
				s.finish(err)
				return
			}
			if s.res.Damaged {
				s.finish(nil)
				return
			}
		}
		n, err := s.nextBatch()
		if err != nil {
			s.finish(err)
			return
		}
		if s.res.Damaged {
			s.finish(nil)
			return
		}
		budget -= n
	}
	s.e.Post(s.step)
}

// openSegment opens segment i for reading; a segment that does not start
// where the one before it ended (the one before lost its tail) is damage
// where that one ended.
func (s *scrub) openSegment() error {
	base := s.bases[s.i]
	if s.i > 0 && s.next < base {
		s.damaged(s.next, corruptAt(path.Join(s.dir, segmentFile(base, logSuffix)), 0, nil,
			"the segment before it ends at offset %d, before its base offset %d", s.next, base))
		return nil
	}
	name := path.Join(s.dir, segmentFile(base, logSuffix))
	f, err := s.disk.Open(name, false)
	if err != nil {
		return fmt.Errorf("log: scrub: open %s: %w", name, err)
	}
	s.f, s.sc, s.next, s.prevNext = f, newScanner(f, 0, f.Size()), base, -1
	s.res.Segments++
	return nil
}

// nextBatch checks the next batch of the open segment and returns the
// bytes it took.
func (s *scrub) nextBatch() (int64, error) {
	base := s.bases[s.i]
	b, pos, err := s.sc.next()
	if errors.Is(err, io.EOF) {
		s.endSegment()
		return 0, nil
	}
	if err != nil {
		if errors.Is(err, ErrCorrupt) || errors.Is(err, env.ErrIO) {
			s.damaged(s.next, fmt.Errorf("%s at %d: %w", s.f.Name(), pos, err))
			return 0, nil
		}
		return 0, fmt.Errorf("log: scrub: %w", err)
	}
	if b.BaseOffset() < s.next || b.LastOffset()-base > maxRelativeOffset {
		at := s.next
		if s.prevNext >= 0 && b.BaseOffset() < s.next && b.BaseOffset() >= s.prevNext {
			// The batch before is the suspect: a base offset flipped
			// higher (outside the CRC) makes the next batch look out of
			// order, yet this one starts past where that one should
			// have. Drop from there.
			at = s.prevNext
		}
		s.damaged(at, corruptAt(s.f.Name(), pos, nil, "batch with offsets [%d, %d] cannot follow offset %d in the segment based at %d",
			b.BaseOffset(), b.LastOffset(), s.next-1, base))
		return 0, nil
	}
	if s.contiguous && b.BaseOffset() != s.next && (s.prevNext >= 0 || b.BaseOffset() != max(s.next, s.logStart)) {
		s.damaged(s.next, corruptAt(s.f.Name(), pos, nil, "batch at offset %d leaves a gap after offset %d in a log that is never compacted",
			b.BaseOffset(), s.next-1))
		return 0, nil
	}
	if e := b.PartitionLeaderEpoch(); e < s.epoch {
		s.damaged(s.next, corruptAt(s.f.Name(), pos, nil, "batch at offset %d has leader epoch %d, after a batch of epoch %d",
			b.BaseOffset(), e, s.epoch))
		return 0, nil
	}
	if why := s.checkEpoch(b.BaseOffset(), b.PartitionLeaderEpoch()); why != "" {
		s.damaged(s.next, corruptAt(s.f.Name(), pos, nil, "batch at offset %d has leader epoch %d: %s",
			b.BaseOffset(), b.PartitionLeaderEpoch(), why))
		return 0, nil
	}
	if e, missing := s.missingEpochStart(b.BaseOffset()); missing {
		s.damaged(s.next, corruptAt(s.f.Name(), pos, nil, "batch at offset %d follows offset %d, but the leader epoch checkpoint has epoch %d from offset %d, where no batch starts",
			b.BaseOffset(), s.next-1, e.epoch, e.startOffset))
		return 0, nil
	}
	if s.prevNext < 0 && s.i+1 < len(s.bases) && b.LastOffset() >= s.bases[s.i+1] {
		// A truncation leftover (below) follows the batches the cut
		// kept; a segment's first batch past the next segment's base is
		// a base offset flipped higher or a misdirected batch (txn seed
		// 45: a compacted log, where no contiguity rule sees it, kept
		// it, and the producer state refused the segment at every open).
		s.damaged(s.next, corruptAt(s.f.Name(), pos, nil, "the first batch of the segment based at %d holds offsets [%d, %d], past the next segment's base %d",
			base, b.BaseOffset(), b.LastOffset(), s.bases[s.i+1]))
		return 0, nil
	}
	s.epoch = b.PartitionLeaderEpoch()
	s.prevNext = s.next
	size := s.sc.pos - pos
	s.res.Bytes += size
	if s.i+1 < len(s.bases) && b.LastOffset() >= s.bases[s.i+1] {
		// Open cuts it (recovery rule 4: a truncation whose cut of this
		// file had not reached the disk); not damage.
		s.next = s.bases[s.i+1]
		s.endSegment()
		return size, nil
	}
	s.next = b.LastOffset() + 1
	if s.next > s.limit {
		s.pendingDrop()
		s.endSegment()
		s.i = len(s.bases) // the rest is dropped by the marker
	}
	return size, nil
}

// readEpochs reads the leader-epoch-checkpoint. A missing file lists no
// epoch; an unreadable or damaged one is Open's to report, and the epoch
// rules of checkEpoch are then off.
func (s *scrub) readEpochs() {
	data, ok, err := readCheckpointFile(s.disk, path.Join(s.dir, epochCheckpointName))
	if err != nil {
		return
	}
	if ok {
		entries, perr := parseEpochCheckpoint(data)
		if perr != nil {
			return
		}
		s.epochs = entries
	}
	s.epochsOK = true
}

// checkEpoch checks a batch's partition leader epoch, a field outside its
// CRC, against the leader-epoch-checkpoint (replicated seed 3455: a last
// batch's epoch flipped from 4 to 4096 at rest passed the order rule, and
// its leader could append nothing after it). The flush cycle that makes a
// batch of a new epoch durable also makes durable a recovery checkpoint
// past it and the epoch checkpoint listing that epoch (checkpointDue), so:
//
//   - below the recovery point, a batch's epoch is the one the checkpoint
//     lists for its offset (the batches below the first entry lie below
//     the log start offset, which the file's entries start at);
//   - anywhere, an epoch past the latest listed is a batch that was never
//     made durable or damage; the scrub cannot tell them apart, and
//     reports damage, as it does for a torn tail.
//
// It returns why the epoch is wrong, or "" when it fits.
func (s *scrub) checkEpoch(base int64, epoch int32) string {
	if !s.epochsOK || epoch < 0 {
		return ""
	}
	latest := UndefinedEpoch
	if n := len(s.epochs); n > 0 {
		latest = s.epochs[n-1].epoch
	}
	if epoch > latest {
		return fmt.Sprintf("the leader epoch checkpoint lists no epoch past %d", latest)
	}
	if base >= s.recoveryPoint {
		return ""
	}
	i, _ := slices.BinarySearchFunc(s.epochs, base, func(e epochEntry, o int64) int {
		if e.startOffset <= o {
			return -1
		}
		return 1
	})
	if i == 0 {
		return "" // below the first listed epoch: below the log start offset
	}
	if want := s.epochs[i-1]; want.epoch != epoch {
		return fmt.Sprintf("the leader epoch checkpoint has epoch %d from offset %d", want.epoch, want.startOffset)
	}
	return ""
}

// missingEpochStart reports the first leader epoch the checkpoint lists
// below the recovery point whose first batch the log lacks: one that
// starts at or after the offset the next batch may start at (s.next) and
// before the batch read, whose base offset is base. Every listed epoch
// starts at a batch (the log assigns an epoch at the batch that starts it,
// and the cleaner keeps that batch: recovery rule 5 checks it), so a gap
// over an epoch's start is damage even in a compacted log, where gaps are
// otherwise allowed (txn seed 284 at 2553f75: a misdirected write put a
// later, valid batch of __consumer_offsets at the start of the segment,
// followed by zeros; the scrub marked the zeros and kept the batch, so the
// log lost offsets 0 to 25 without a word, and the replica, fetching only
// past its log end, led with the hole). The first listed epoch may have
// been moved to the log start offset (truncateFromStart), which may lie
// in a compacted log's gap (retention or DeleteRecords moved it): a start
// at the log start offset is held to that only when the log start is 0,
// where nothing was moved. Entries below the log start offset (the file is
// pruned only once a checkpoint with the new log start is durable) and at
// or past the recovery point (batches a power loss may have taken) are
// not held to it. The crash and state-machine tests check every healthy
// log they leave against this rule (epochStartsKept).
func (s *scrub) missingEpochStart(base int64) (epochEntry, bool) {
	if !s.epochsOK {
		return epochEntry{}, false
	}
	from := max(s.next, s.logStart)
	if from == s.logStart && s.logStart > 0 {
		from++
	}
	i, _ := slices.BinarySearchFunc(s.epochs, from, func(e epochEntry, o int64) int {
		return cmp.Compare(e.startOffset, o)
	})
	if i == len(s.epochs) {
		return epochEntry{}, false
	}
	e := s.epochs[i]
	return e, e.startOffset < base && e.startOffset < s.recoveryPoint
}

// pendingDrop reports a log that holds data past a damage marker a
// previous scrub left (not a failed Sync's, which drops only what was
// never durable): the next Open drops it. That is damage too, until an
// Open settles the marker: a scrub that found damage, then a start that died
// before the log opened, must not make the next start register as if
// nothing were dropped (replicated seed 7: the broker came back with an
// empty log, registered as intact, and was elected).
func (s *scrub) pendingDrop() {
	if !s.damagedMarker {
		return // a failed Sync's marker drops only what was never durable
	}
	s.res.Damaged, s.res.Offset = true, s.limit
	s.res.Err = fmt.Errorf("log: %s: a failure marker drops everything from offset %d at the next open", s.dir, s.limit)
}

func (s *scrub) endSegment() {
	s.closeFile()
	s.i++
}

func (s *scrub) closeFile() {
	if s.f != nil {
		_ = s.f.Close()
	}
	s.f, s.sc = nil, nil
}

// damaged records the first damage, at offset d.
func (s *scrub) damaged(d int64, why error) {
	s.closeFile()
	s.res.Damaged, s.res.Offset, s.res.Err = true, d, why
}

// finish leaves the failure marker for damage found (removing markers that
// drop less, so that the largest marker, the one Open obeys, is the new
// one) and reports.
func (s *scrub) finish(err error) {
	s.closeFile()
	if err == nil && s.res.Damaged && s.res.Offset < s.limit {
		err = s.mark(s.res.Offset)
	}
	if !s.stopped {
		s.done(s.res, err)
	}
}

func (s *scrub) mark(d int64) error {
	if err := MarkDamaged(s.e, s.dir, d); err != nil {
		return fmt.Errorf("log: scrub: %w", err)
	}
	return nil
}

// MarkDamaged leaves a damage marker in the log directory dir (not open)
// so that its next Open drops offset d and everything after it, as the
// scrub does for damage it finds, and removes the markers that drop less
// (Open obeys the largest).
func MarkDamaged(e env.Env, dir string, d int64) error {
	if err := createMarker(e, dir, damagedMarkerFile(d)); err != nil {
		return fmt.Errorf("mark %s damaged from offset %d: %w", dir, d, err)
	}
	names, err := e.Disk().List(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, name := range names {
		if other, ok := parseFailedMarkerFile(name); ok && other > d {
			if err := e.Disk().Remove(path.Join(dir, name)); err != nil {
				return fmt.Errorf("remove %s: %w", name, err)
			}
		}
	}
	return nil
}

// SegmentBase is the base offset a segment file's name (a path in the log
// directory, of any of the segment's files) carries.
func SegmentBase(name string) (int64, bool) {
	base, _, ok := parseSegmentFile(path.Base(name))
	return base, ok
}
