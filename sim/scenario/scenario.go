// Package scenario holds the simulation scenarios that `strata sim` and the
// tests run: a cluster of processes, a workload, a nemesis schedule and the
// checks that decide whether the seed passed.
//
// A scenario is deterministic code like the rest of sim/: a seed and a
// commit determine its trace hash.
package scenario

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
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
	// Buggify overrides the run's buggify rate: 0 draws it from the seed
	// (sim.DrawBuggifyRate), a negative value turns it off.
	Buggify float64
	// PageCache (log, replicated) creates every topic in Kafka's
	// page-cache mode (flush.messages=1000): batches are acknowledged and
	// exposed before they are fsynced, so a correlated power loss can take
	// acknowledged records back. The run shows what that mode permits.
	PageCache bool
	// NoDamageLogs (replicated, replicated5) keeps damage at rest off the
	// partition segment files, which are otherwise declared survivable,
	// so that the damaged minority's .log files get corruption and
	// misdirected writes (docs/simulation.md, "Survivable files").
	NoDamageLogs bool
	// NoLatentLogs (replicated, replicated5, txn) keeps latent sector
	// errors (a page that becomes unreadable while the broker runs) off
	// the damaged node's partition .log files, which otherwise get them
	// besides corruption and misdirected writes (those show only after a
	// power loss): a replica then meets damage while it runs
	// (docs/architecture.md, "A replica damaged while it runs").
	NoLatentLogs bool
}

// Default is the scenario `make sim` and `strata sim` run when none is
// named: the richest one, so that a first replay exercises the real
// broker.
const Default = "log"

// Func runs a scenario and summarizes it. Summary.Wall is left for the
// caller to fill in (the simulator cannot read the wall clock).
type Func func(Options) sim.Summary

var registry = map[string]Func{
	"groups":      Groups,
	"idle":        Idle,
	"kraft":       KRaft,
	"kraft5":      KRaft5,
	"log":         Log,
	"replicated":  Replicated,
	"replicated5": Replicated5,
	"secure":      Secure,
	"txn":         Txn,
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

// Run runs the named scenario. The summary's replay command carries every
// option of the run (Options.Args).
func Run(name string, o Options) (sim.Summary, error) {
	f, ok := registry[name]
	if !ok {
		return sim.Summary{}, fmt.Errorf("unknown scenario %q (have %v)", name, Names())
	}
	sum := f(o)
	sum.Replay = ReplayCommand(name, o)
	return sum, nil
}

// ReplayCommand is the make command that replays seed o.Seed of the named
// scenario with o's options.
func ReplayCommand(name string, o Options) string {
	cmd := fmt.Sprintf("make sim SEED=%d SCENARIO=%s", o.Seed, name)
	if args := o.Args(); len(args) > 0 {
		cmd += " SIM_ARGS='" + strings.Join(args, " ") + "'"
	}
	return cmd
}

// BindFlags defines the flags of the options a run can be given (all but
// the seed, which `strata sim` takes itself) on fs; parsing fs fills the
// returned Options. `strata sim` uses it, and Args is its inverse, so a
// replay command can carry every option.
func BindFlags(fs *flag.FlagSet) *Options {
	o := &Options{}
	fs.IntVar(&o.Nodes, "nodes", 0, "cluster size; for kraft and kraft5 the voters, for log the combined broker+controller nodes (0: the scenario's default)")
	fs.IntVar(&o.Observers, "observers", 0, "kraft, kraft5: brokers observing the metadata quorum (0: the shape's default of 2, -1: none)")
	fs.DurationVar(&o.FaultPhase, "fault", 0, "virtual duration of the fault phase (0: default)")
	fs.DurationVar(&o.HealPhase, "heal", 0, "virtual duration of the healed phase before the liveness check (0: default)")
	fs.BoolVar(&o.NoFaults, "no-faults", false, "turn the nemesis off")
	fs.Float64Var(&o.Buggify, "buggify", 0, "buggify rate (0: drawn from the seed; negative: off)")
	fs.BoolVar(&o.NoDamageLogs, "no-damage-logs", false, "replicated, replicated5: no damage at rest on partition .log files (by default the damaged minority's get some)")
	fs.BoolVar(&o.NoLatentLogs, "no-latent-logs", false, "replicated, replicated5, txn: no latent sector errors on partition .log files (by default the damaged node's get pages that become unreadable while the broker runs)")
	fs.BoolVar(&o.PageCache, "page-cache", false, "log, replicated: topics in Kafka's page-cache mode (flush.messages=1000), to see what it can lose")
	return o
}

// Args are the flags (of BindFlags) that give o's options, empty for the
// defaults.
func (o Options) Args() []string {
	var args []string
	if o.Nodes != 0 {
		args = append(args, "-nodes", strconv.Itoa(o.Nodes))
	}
	if o.Observers != 0 {
		args = append(args, "-observers", strconv.Itoa(o.Observers))
	}
	if o.FaultPhase != 0 {
		args = append(args, "-fault", o.FaultPhase.String())
	}
	if o.HealPhase != 0 {
		args = append(args, "-heal", o.HealPhase.String())
	}
	if o.NoFaults {
		args = append(args, "-no-faults")
	}
	if o.Buggify != 0 {
		args = append(args, "-buggify", strconv.FormatFloat(o.Buggify, 'g', -1, 64))
	}
	if o.PageCache {
		args = append(args, "-page-cache")
	}
	if o.NoDamageLogs {
		args = append(args, "-no-damage-logs")
	}
	if o.NoLatentLogs {
		args = append(args, "-no-latent-logs")
	}
	return args
}

// buggifyRate is the run's sim.Config.BuggifyRate.
func (o Options) buggifyRate() float64 {
	switch {
	case o.Buggify < 0:
		return 0
	case o.Buggify > 0:
		return o.Buggify
	}
	return sim.DrawBuggifyRate(o.Seed)
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

// indexFilesSurvivable declares a server's index files (.index and
// .timeindex, of partitions and of the metadata log) survivable: the
// nemesis may damage them at rest (latent sector errors, corruption,
// misdirected writes) on the minority its disk mix names, because core/log
// checks every entry it uses against the batches and rebuilds the indexes
// of a segment from its .log file. The .log files themselves are not
// declared: a replica's only copy, or a Raft voter's acknowledged entries,
// cannot be rebuilt locally (a protocol-aware recovery would be needed).
// replicaFilesSurvivable adds, for replicated scenarios, the segment
// files of partition logs (not the metadata log's): the start-up scrub
// finds damage in them and the replica fetches what it drops from its
// leader again.
func replicaFilesSurvivable(name string) bool {
	if indexFilesSurvivable(name) {
		return true
	}
	return strings.HasSuffix(name, ".log") && !strings.HasPrefix(name, "__cluster_metadata")
}

func indexFilesSurvivable(name string) bool {
	return strings.HasSuffix(name, ".index") || strings.HasSuffix(name, ".timeindex")
}

// superviseRestart restarts p, named name, after delay unless it
// restarted meanwhile, and reports whether it scheduled the restart:
// what a process supervisor (systemd) does with a node that stopped on a
// fatal error (a failed fsync). The node's process exits and starts
// again, the machine's page cache intact. *scheduled is the incarnation
// a restart is scheduled for, plus one (0 for none), so that a node is
// restarted once per incarnation.
func superviseRestart(s *sim.Sim, p *sim.Process, scheduled *uint64, name string, delay time.Duration) bool {
	inc := p.Incarnation()
	if *scheduled == inc+1 {
		return false
	}
	*scheduled = inc + 1
	s.Trace(name + ":supervisor-restart")
	s.After(delay, "supervisor:restart", func() {
		if p.Incarnation() == inc && p.Up() {
			p.Kill()
			p.Start()
		}
	})
	return true
}

// drawBetween draws a duration from [lo, hi) with r.
func drawBetween(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)))
}
