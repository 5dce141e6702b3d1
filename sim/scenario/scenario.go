// Package scenario holds the simulation scenarios that `strata sim` and the
// tests run: a cluster of processes, a workload, a nemesis schedule and the
// checks that decide whether the seed passed.
//
// A scenario is deterministic code like the rest of sim/: a seed and a
// commit determine its trace hash.
package scenario

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/strata-log/strata/sim"
)

// Options configure one run of a scenario. Zero values pick the scenario's
// defaults.
type Options struct {
	Seed uint64
	// Nodes is the cluster size (for the kraft shapes, the voters).
	Nodes int
	// Observers is, for the kraft shapes, how many brokers run as
	// observers of the metadata quorum besides the voters: 0 picks the
	// shape's default, a negative value none.
	Observers int
	// FaultPhase is how long the nemesis injects faults.
	FaultPhase time.Duration
	// HealPhase is how long the healed cluster runs before liveness is
	// checked.
	HealPhase time.Duration
	// NoFaults turns the nemesis off (a baseline run).
	NoFaults bool
	// Log receives the processes' logs; nil discards them.
	Log io.Writer
	// Idle runs the cluster without a workload: nodes only exchange
	// heartbeats. It measures the simulator's own overhead.
	Idle bool
}

// Default is the scenario `make sim` and `strata sim` run when none is
// named: the richest one, so that a first replay exercises the real
// broker.
const Default = "log"

// Func runs a scenario and summarizes it. Summary.Wall is left for the
// caller to fill in (the simulator cannot read the wall clock).
type Func func(Options) sim.Summary

var registry = map[string]Func{
	"idle":   Idle,
	"kraft":  KRaft,
	"kraft5": KRaft5,
	"log":    Log,
}

// Names lists the registered scenarios, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Run runs the named scenario.
func Run(name string, o Options) (sim.Summary, error) {
	f, ok := registry[name]
	if !ok {
		return sim.Summary{}, fmt.Errorf("unknown scenario %q (have %v)", name, Names())
	}
	return f(o), nil
}

func (o Options) withDefaults(nodes int, fault, heal time.Duration) Options {
	if o.Nodes <= 0 {
		o.Nodes = nodes
	}
	if o.FaultPhase <= 0 {
		o.FaultPhase = fault
	}
	if o.HealPhase <= 0 {
		o.HealPhase = heal
	}
	return o
}
