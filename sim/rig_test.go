package sim_test

import (
	"testing"
	"time"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/simtest"
)

// rig is one process (simtest.Rig) whose disk and bucket a test drives;
// every call it waits for completes within a second.
type rig struct{ *simtest.Rig }

func newRig(t *testing.T, seed uint64) *rig {
	r := &rig{simtest.New(t, sim.Config{Seed: seed})}
	r.Bound = time.Second
	return r
}

// durableThenUnsynced creates name in the root directory, durably with
// the content durable, then appends unsynced; it returns the open file.
func (r *rig) durableThenUnsynced(name, durable, unsynced string) env.File {
	f := r.open(name)
	r.syncDir("")
	r.write(f, durable)
	r.sync(f)
	r.write(f, unsynced)
	return f
}
