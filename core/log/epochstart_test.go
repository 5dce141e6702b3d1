package log_test

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/sim"
)

// epochStartRule is what the scrub says when a leader epoch the epoch
// checkpoint lists below the recovery point starts where the log holds no
// batch (scrub.go, missingEpochStart).
const epochStartRule = "where no batch starts"

// epochStartsKept checks the premise of that rule on a log no damage at
// rest touched: every epoch the checkpoint lists starts at a batch the log
// keeps, whatever appends, follower copies with gaps, truncations,
// retention, DeleteRecords, cleanings and power losses did to it. It runs
// log.Scrub over a copy of dir as d holds it now (the page cache: after a
// power loss, what survived), with a .compacted marker, so that gaps pass
// and the rule is what sees them, on a simulator of its own: the scrub's
// marker lands in the copy, and the test's run draws nothing for it.
// Other damage the scrub reports (a torn tail) is not this check's
// business; the rule firing is an error.
func epochStartsKept(d *sim.Disk, dir string) error {
	files := map[string][]byte{}
	var names []string
	for _, name := range d.Files() {
		if strings.HasPrefix(name, dir+"/") {
			data, _ := d.ReadFile(name)
			files[name] = data
			names = append(names, name)
		}
	}
	s := sim.New(sim.Config{Seed: 1})
	var (
		res     log.ScrubResult
		err     error
		started bool
		done    bool
	)
	s.AddProcess("scrub", func(e env.Env) {
		disk := e.Disk()
		if err = disk.MkdirAll(dir); err != nil {
			return
		}
		for _, name := range append(names, dir+"/.compacted") {
			if err = disk.MkdirAll(path.Dir(name)); err != nil {
				return
			}
			f, oerr := disk.Open(name, true)
			if oerr != nil {
				err = oerr
				return
			}
			if len(files[name]) > 0 {
				if err = f.WriteAt(files[name], 0); err != nil {
					return
				}
			}
			if err = f.Close(); err != nil {
				return
			}
		}
		started = true
		log.Scrub(e, dir, func(got log.ScrubResult, serr error) {
			res, err, done = got, serr, true
		})
	}).Start()
	if rerr := s.RunFor(time.Minute); rerr != nil {
		return fmt.Errorf("scrub of a copy: %w", rerr)
	}
	switch {
	case err != nil:
		return fmt.Errorf("scrub of a copy: %w", err)
	case !started || !done:
		return fmt.Errorf("scrub of a copy did not finish")
	case res.Damaged && strings.Contains(res.Err.Error(), epochStartRule):
		return fmt.Errorf("a healthy log breaks the scrub's epoch-start rule: %w", res.Err)
	}
	return nil
}
