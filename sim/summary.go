package sim

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Summary is what a run reports when it ends.
type Summary struct {
	Scenario string
	Seed     uint64
	SimTime  time.Duration
	Events   uint64
	Faults   []FaultCount
	// Wall is the wall-clock time the run took. The simulator cannot read
	// the wall clock, so the caller measures and fills it in.
	Wall      time.Duration
	TraceHash uint64
	// Err is the run's failure (an invariant violation, a failed check), or
	// nil.
	Err error
	// Replay is the command that reproduces the run.
	Replay string
	// Buggify is the run's buggify rate (Config.BuggifyRate).
	Buggify float64
	// Mix describes the run's fault schedule (Sim.SetFaultMix), "" if
	// none was set.
	Mix string
	// Visualize writes an HTML view of the run's client history
	// (porcupine's), for a failed run; nil if the scenario records none.
	// It may take a while: call it only when the view is wanted.
	Visualize func(w io.Writer) error
	// HTML is the file the caller wrote Visualize's view to, printed
	// beside the replay command; "" if none.
	HTML string
}

// Summarize captures the run's figures so far.
func (s *Sim) Summarize(scenario string) Summary {
	return Summary{
		Scenario:  scenario,
		Seed:      s.cfg.Seed,
		SimTime:   s.now,
		Events:    s.events,
		Faults:    s.Faults(),
		TraceHash: s.TraceHash(),
		Replay:    fmt.Sprintf("make sim SEED=%d SCENARIO=%s", s.cfg.Seed, scenario),
		Buggify:   s.cfg.BuggifyRate,
		Mix:       s.mix,
	}
}

// Speedup is simulated seconds per wall-clock second.
func (m Summary) Speedup() float64 {
	if m.Wall <= 0 {
		return 0
	}
	return m.SimTime.Seconds() / m.Wall.Seconds()
}

// FaultTotal is the number of faults injected.
func (m Summary) FaultTotal() uint64 {
	var n uint64
	for _, f := range m.Faults {
		n += f.Count
	}
	return n
}

// Print writes the summary; its last line is always the trace hash, so that
// scripts and people can compare runs by it.
func (m Summary) Print(w io.Writer) {
	status := "PASS"
	if m.Err != nil {
		status = "FAIL"
	}
	kinds := make([]string, len(m.Faults))
	for i, f := range m.Faults {
		kinds[i] = fmt.Sprintf("%s=%d", f.Kind, f.Count)
	}
	fmt.Fprintf(w, "scenario:    %s\n", m.Scenario)
	fmt.Fprintf(w, "seed:        %d\n", m.Seed)
	fmt.Fprintf(w, "result:      %s\n", status)
	if m.Err != nil {
		fmt.Fprintf(w, "failure:     %v\n", m.Err)
		fmt.Fprintf(w, "replay:      %s\n", m.Replay)
		if m.HTML != "" {
			fmt.Fprintf(w, "history:     %s\n", m.HTML)
		}
	}
	fmt.Fprintf(w, "sim time:    %v\n", m.SimTime)
	fmt.Fprintf(w, "events:      %d\n", m.Events)
	fmt.Fprintf(w, "faults:      %d (%s)\n", m.FaultTotal(), strings.Join(kinds, " "))
	fmt.Fprintf(w, "buggify:     %.3f\n", m.Buggify)
	if m.Mix != "" {
		fmt.Fprintf(w, "fault mix:   %s\n", m.Mix)
	}
	fmt.Fprintf(w, "wall time:   %v\n", m.Wall.Round(time.Millisecond))
	fmt.Fprintf(w, "speed:       %.1f sim-s/wall-s\n", m.Speedup())
	fmt.Fprintf(w, "trace hash:  %016x\n", m.TraceHash)
}
