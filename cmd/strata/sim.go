package main

import (
	crand "crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/scenario"
)

func init() {
	register("sim", "run a seeded simulation scenario and print its summary and trace hash", runSim)
}

func runSim(args []string) int {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	seed := fs.Uint64("seed", 0, "seed to run (0 picks a random one and prints it)")
	name := fs.String("scenario", scenario.Default, "scenario: "+strings.Join(scenario.Names(), ", "))
	parsed := scenario.BindFlags(fs)
	verbose := fs.Bool("v", false, "print the processes' logs to stderr")
	sweep := fs.Int("sweep", 0, "run this many consecutive seeds (from -seed, or 1) and print one line each")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	opts := *parsed
	if *verbose {
		opts.Log = os.Stderr
	}
	if *sweep > 0 {
		first := *seed
		if first == 0 {
			first = 1
		}
		return simSweep(*name, opts, first, *sweep, os.Stdout)
	}
	picked := *seed == 0
	if picked {
		*seed = randomSeed()
	}
	opts.Seed = *seed
	if picked {
		fmt.Printf("no seed given; picked %d (replay: %s)\n", *seed, scenario.ReplayCommand(*name, opts))
	}
	sum, err := runScenario(*name, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata sim:", err)
		return exitUsage
	}
	sum.Print(os.Stdout)
	if sum.Err != nil {
		if f, ok := sum.Err.(*sim.Failure); ok && f.Stack != "" {
			fmt.Fprintf(os.Stderr, "\n%s\n", f.Stack)
		}
		return exitError
	}
	return exitOK
}

// runScenario runs one seed and measures its wall time, which the
// simulator itself may not read.
func runScenario(name string, opts scenario.Options) (sim.Summary, error) {
	start := time.Now()
	sum, err := scenario.Run(name, opts)
	sum.Wall = time.Since(start)
	return sum, err
}

func simSweep(name string, opts scenario.Options, first uint64, n int, w io.Writer) int {
	failed := 0
	var total sim.Summary
	for i := 0; i < n; i++ {
		opts.Seed = first + uint64(i)
		sum, err := runScenario(name, opts)
		if err != nil {
			fmt.Fprintln(os.Stderr, "strata sim:", err)
			return exitUsage
		}
		status := "ok"
		if sum.Err != nil {
			status = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "seed %-8d %-4s sim=%-8v events=%-9d faults=%-4d %6.0fx hash=%016x\n",
			sum.Seed, status, sum.SimTime, sum.Events, sum.FaultTotal(), sum.Speedup(), sum.TraceHash)
		if sum.Err != nil {
			fmt.Fprintf(w, "    %v\n    replay: %s\n", sum.Err, sum.Replay)
		}
		total.SimTime += sum.SimTime
		total.Wall += sum.Wall
		total.Events += sum.Events
	}
	fmt.Fprintf(w, "%d seeds, %d failed; %v simulated in %v (%.0f sim-s/wall-s), %d events\n",
		n, failed, total.SimTime, total.Wall.Round(time.Millisecond), total.Speedup(), total.Events)
	if failed > 0 {
		return exitError
	}
	return exitOK
}

func randomSeed() uint64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return uint64(time.Now().UnixNano())
	}
	// Keep seeds short enough to type.
	return binary.LittleEndian.Uint64(b[:]) % 1_000_000_000
}
