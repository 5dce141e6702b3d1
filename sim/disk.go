package sim

import "github.com/strata-log/strata/core/env"

// PLACEHOLDER: replaced by the simulated disk implementation.

// Disk is a process's simulated disk.
type Disk struct {
	sim   *Sim
	owner *Process
}

func newDisk(s *Sim, owner *Process) *Disk { return &Disk{sim: s, owner: owner} }

// handle returns the env.Disk of the owner's current incarnation.
func (d *Disk) handle() env.Disk { return nil }

// crash applies power-loss semantics.
func (d *Disk) crash() {}
