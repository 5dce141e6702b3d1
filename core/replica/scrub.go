package replica

import (
	"fmt"
	"slices"
	"strings"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/metrics"
)

// Scrub checks every partition directory in the data directory with
// log.Scrub before the broker registers (core/server), one partition at a
// time: reads are synchronous on the loop, so scrubbing several at once
// would only interleave them, and one at a time holds one read buffer.
// Directories in Config.KeepDirs (the metadata log) and partitions being
// deleted are left alone. A damaged log gets a failure marker from its
// first damaged batch, so that its Open drops the damage, and counts in
// damaged; a partition the scrub could not finish (an I/O error) counts
// too, since its damage is unknown. done runs on the loop; the returned
// function abandons the scrub (done never runs after it).
//
// damaged > 0 means the broker may have dropped records it acknowledged:
// it must register as a broker whose disk was replaced
// (PreviousBrokerEpoch -1), so that the controller no longer counts it as
// holding every committed record (its eligible leader replica places, an
// ISR's last place) before its logs open.
func (m *Manager) Scrub(done func(damaged int)) (stop func()) {
	sc := &scrubAll{m: m, done: done}
	sc.damagedLogs = m.cfg.Metrics.Counter(metrics.LogScrubDamaged)
	sc.bytesRead = m.cfg.Metrics.Counter(metrics.LogScrubBytes)
	names, err := m.e.Disk().List("")
	if err != nil {
		m.log.Error("cannot list the data directory to scrub it; counting it as damaged", "err", err)
		sc.damaged++
	}
	for _, n := range names {
		dir, isDir := strings.CutSuffix(n, "/")
		if !isDir || strings.HasSuffix(dir, deleteSuffix) || slices.Contains(m.cfg.KeepDirs, dir) {
			continue
		}
		if _, _, ok := parsePartitionDir(dir); ok {
			sc.dirs = append(sc.dirs, dir)
		}
	}
	slices.Sort(sc.dirs)
	m.log.Info("scrubbing the partition logs before registering", "partitions", len(sc.dirs))
	m.e.Post(sc.next)
	return func() {
		sc.stopped = true
		if sc.stopScrub != nil {
			sc.stopScrub()
		}
	}
}

// scrubAll is one Manager.Scrub in progress.
type scrubAll struct {
	m           *Manager
	done        func(damaged int)
	dirs        []string
	i           int
	damaged     int
	bytes       int64
	stopped     bool
	stopScrub   func()
	damagedLogs *metrics.Counter
	bytesRead   *metrics.Counter
}

func (sc *scrubAll) next() {
	if sc.stopped {
		return
	}
	if sc.i == len(sc.dirs) {
		sc.m.log.Info("scrubbed the partition logs", "partitions", len(sc.dirs), "damaged", sc.damaged, "bytes", sc.bytes)
		sc.done(sc.damaged)
		return
	}
	dir := sc.dirs[sc.i]
	sc.i++
	sc.stopScrub = log.Scrub(sc.m.e, dir, func(res log.ScrubResult, err error) {
		sc.stopScrub = nil
		sc.bytes += res.Bytes
		sc.bytesRead.Add(float64(res.Bytes))
		switch {
		case err != nil:
			sc.damaged++
			sc.damagedLogs.Inc()
			sc.m.log.Error("cannot scrub a partition log; counting it as damaged", "dir", dir, "err", err)
		case res.Damaged:
			sc.damaged++
			sc.damagedLogs.Inc()
			sc.m.log.Error("DAMAGED partition log: its next open drops the damaged batch and everything after it, and the broker registers as one whose disk was replaced, to fetch them again from the leader",
				"dir", dir, "offset", res.Offset, "err", fmt.Sprint(res.Err))
		}
		sc.next()
	})
}
