package log

import (
	"errors"
	"fmt"

	"github.com/strata-log/strata/core/env"
)

// dropSwapCovered is the recovery rule that merging swaps need (recovery
// rule 1, see clean.go): before a committed swap of the segment based at
// base is completed, the segments it replaces besides base itself, those
// based in (base, E) where E is the offset after the swap's last batch,
// are deleted. names is the directory listing. The .log.swap file was
// synced whole before its rename committed the swap, so anything but whole
// batches in increasing offsets is corruption, reported with file and
// position. The deletions come before the renames, so a crash meanwhile
// leaves the .log.swap file that makes the next Open do it again.
func (l *Log) dropSwapCovered(base int64, names []string) error {
	end, err := l.swapEnd(base)
	if err != nil {
		return err
	}
	for _, name := range names {
		b, suffix, ok := parseSegmentFile(name)
		if !ok || b <= base || b >= end || (suffix != logSuffix && suffix != indexSuffix && suffix != timeIndexSuffix && suffix != txnIndexSuffix) {
			continue
		}
		l.logger.Info("deleting a segment file a committed swap replaces", "file", name, "swap", segmentFile(base, logSuffix+swapSuffix))
		if err := l.disk.Remove(l.path(name)); err != nil && !errors.Is(err, env.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", name, err)
		}
		l.dirChanged()
	}
	return nil
}

// swapEnd walks the batch headers of base's .log.swap file and returns the
// offset after its last batch.
func (l *Log) swapEnd(base int64) (int64, error) {
	name := l.path(segmentFile(base, logSuffix+swapSuffix))
	f, err := l.disk.Open(name, false)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", name, err)
	}
	defer f.Close()
	size := f.Size()
	if size == 0 {
		return 0, corruptAt(name, 0, nil, "a committed swap file holds no batch")
	}
	var p, scratch [headerReadBytes]byte
	next := base
	for pos := int64(0); pos < size; {
		if size-pos < headerReadBytes {
			return 0, corruptAt(name, pos, nil, "%d bytes cannot hold a batch", size-pos)
		}
		if err := readStable(f, p[:], scratch[:], pos); err != nil {
			return 0, err
		}
		h := parseHeader(p[:])
		if !h.plausible(size-pos) || h.baseOffset < next {
			return 0, corruptAt(name, pos, nil, "no batch header after offset %d in a committed swap file", next)
		}
		next, pos = h.lastOffset()+1, pos+h.size()
	}
	return next, nil
}
