package log

import (
	"fmt"
	"strings"

	"github.com/strata-log/strata/core/record"
)

// CleanupPolicy is a topic's cleanup.policy: what happens to old data.
type CleanupPolicy uint8

const (
	// CleanupDelete ("delete", Kafka's default and the zero value):
	// ApplyRetention deletes whole segments by retention.ms and
	// retention.bytes.
	CleanupDelete CleanupPolicy = iota
	// CleanupCompact ("compact"): the cleaner (CleanStep) keeps the latest
	// record of each key; retention.ms and retention.bytes do not apply.
	// Append rejects records without a key.
	CleanupCompact
	// CleanupCompactDelete ("compact,delete"): both.
	CleanupCompactDelete
)

// ParseCleanupPolicy parses Kafka's cleanup.policy value: "delete",
// "compact", or both as a comma-separated list in either order.
func ParseCleanupPolicy(s string) (CleanupPolicy, error) {
	compact, del := false, false
	for _, part := range strings.Split(s, ",") {
		switch strings.TrimSpace(part) {
		case "compact":
			compact = true
		case "delete":
			del = true
		default:
			return 0, fmt.Errorf("%w: cleanup.policy = %q, want delete, compact or compact,delete", ErrInvalidConfig, s)
		}
	}
	switch {
	case compact && del:
		return CleanupCompactDelete, nil
	case compact:
		return CleanupCompact, nil
	}
	return CleanupDelete, nil
}

// String returns Kafka's spelling.
func (p CleanupPolicy) String() string {
	switch p {
	case CleanupDelete:
		return "delete"
	case CleanupCompact:
		return "compact"
	case CleanupCompactDelete:
		return "compact,delete"
	}
	return fmt.Sprintf("CleanupPolicy(%d)", uint8(p))
}

// Compacts reports whether the policy runs the cleaner.
func (p CleanupPolicy) Compacts() bool { return p == CleanupCompact || p == CleanupCompactDelete }

// Deletes reports whether retention.ms and retention.bytes apply.
func (p CleanupPolicy) Deletes() bool { return p == CleanupDelete || p == CleanupCompactDelete }

func (p CleanupPolicy) valid() bool { return p <= CleanupCompactDelete }

// checkKeys applies Kafka's rule for compacted topics to a producer's
// batch, by its validation summary (Append, before any offset is
// assigned): every record must have a key, since compaction keeps records
// by key and would drop keyless ones (INVALID_RECORD, "Compacted topic
// cannot accept message without key").
func (l *Log) checkKeys(sum record.ProduceSummary) error {
	if !l.cfg.CleanupPolicy.Compacts() || sum.NullKeys == 0 {
		return nil
	}
	return fmt.Errorf("%w: compacted topic cannot accept message without key (%d of %d records, the first is record %d)",
		record.ErrInvalidRecord, sum.NullKeys, sum.Records, sum.FirstNullKey)
}

// checkCoordinatorKeys is checkKeys for a batch a coordinator writes,
// reading its records (a few, and only on a compacted topic). Control
// batches are exempt.
func (l *Log) checkCoordinatorKeys(b record.Batch) error {
	if !l.cfg.CleanupPolicy.Compacts() || b.Attributes().IsControl() {
		return nil
	}
	rr := l.recordReader()
	if err := rr.Reset(b); err != nil {
		return err
	}
	for rr.Next() {
		if rr.Record().Key == nil {
			return fmt.Errorf("%w: compacted topic cannot accept message without key (offset delta %d)",
				record.ErrInvalidRecord, rr.Record().OffsetDelta)
		}
	}
	return rr.Err()
}
