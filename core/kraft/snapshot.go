package kraft

import (
	"errors"
	"fmt"
	"time"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/quorum"
)

// This file is the member's side of snapshots: writing one of its image
// when the Raft asks (Ready.SnapshotDue, every
// Quorum.SnapshotIntervalBytes of applied batches) or when
// Config.SnapshotIntervalRecords records were applied since the last, and
// loading one (Ready.LoadSnapshot) after a snapshot was fetched.

// snapshotRetryBackoff is the wait before writing a snapshot again after
// the disk was full.
const snapshotRetryBackoff = 5 * time.Second

// snapshotState is the member's snapshot writer: one write at a time.
type snapshotState struct {
	writing bool
	// again is set when a snapshot was asked for during a write.
	again bool
	// records counts the records applied since the latest snapshot, for
	// Config.SnapshotIntervalRecords.
	records int64
}

// maybeSnapshot writes a snapshot if the Raft asked for one (due) or the
// record-count interval passed.
func (m *Member) maybeSnapshot(due bool) {
	if due || (m.cfg.SnapshotIntervalRecords > 0 && m.snap.records >= m.cfg.SnapshotIntervalRecords) {
		m.takeSnapshot()
	}
}

// takeSnapshot writes a snapshot of the image at its applied position,
// which is committed, and reports it to the Raft once it is durable.
func (m *Member) takeSnapshot() {
	if m.snap.writing {
		m.snap.again = true
		return
	}
	pos := m.image.Position()
	id := quorum.SnapshotID{EndOffset: pos.Offset + 1, Epoch: pos.Epoch}
	if latest, ok := m.journal.LatestSnapshot(); id.EndOffset <= 0 || (ok && id.EndOffset <= latest.EndOffset) {
		return
	}
	st := m.raft.Status()
	assert.That(id.EndOffset <= st.HighWatermark && id.EndOffset <= st.Applied,
		"kraft: snapshot %s past the high watermark %d or the applied offset %d", id, st.HighWatermark, st.Applied)
	start := m.e.Monotonic()
	data, err := encodeSnapshotFile(id, meta.EncodeSnapshot(m.image))
	if err != nil {
		m.fail(err)
		return
	}
	m.snap.writing, m.snap.records = true, 0
	encoded := m.e.Monotonic() - start
	m.journal.writeSnapshot(id, data, func(err error) {
		m.snap.writing = false
		if m.err != nil || m.closed {
			return
		}
		if errors.Is(err, env.ErrNoSpace) {
			m.log.Warn("snapshot not written: disk full; retrying", "snapshot", id.String(), "err", err, "retry_in", snapshotRetryBackoff)
			m.e.AfterFunc(snapshotRetryBackoff, func() { m.step(m.takeSnapshot) })
			return
		}
		if err != nil {
			m.fail(fmt.Errorf("kraft: write snapshot %s: %w", id, err))
			return
		}
		m.step(func() {
			m.journal.stageSnapshot(id)
			if err := m.raft.SnapshotTaken(id); err != nil {
				m.fail(fmt.Errorf("kraft: snapshot %s refused: %w", id, err))
				return
			}
			if latest, _ := m.journal.LatestSnapshot(); latest != id {
				m.journal.discardStaged() // a newer one was fetched meanwhile
			} else {
				m.log.Info("snapshot taken", "snapshot", id.String(), "bytes", len(data),
					"encode", encoded, "log_start", m.journal.StartOffset())
			}
			if m.snap.again {
				m.snap.again = false
				m.takeSnapshot()
			}
		})
	})
}

// loadSnapshot replaces the image with snapshot id's (Ready.LoadSnapshot).
// At start the image was already loaded from it.
func (m *Member) loadSnapshot(id quorum.SnapshotID) error {
	pos := meta.Position{Offset: id.EndOffset - 1, Epoch: id.Epoch}
	if m.image.Position() == pos {
		return nil
	}
	assert.That(!m.ctrl.IsLeader(), "kraft: active controller asked to load snapshot %s", id)
	assert.That(pos.Offset > m.image.Position().Offset, "kraft: snapshot %s to load is behind the image at %s", id, m.image.Position())
	start := m.e.Monotonic()
	img, err := m.journal.loadSnapshot(id)
	if err != nil {
		return fmt.Errorf("kraft: load snapshot %s: %w", id, err)
	}
	m.setImage(img)
	m.snap.records = 0
	m.log.Info("snapshot loaded", "snapshot", id.String(), "took", m.e.Monotonic()-start)
	return nil
}
