package main

import (
	"bytes"
	crand "crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/scenario"
)

func init() {
	register("sim", "run a seeded simulation scenario and print its summary and trace hash", runSim)
}

func runSim(args []string) int { return simMain(args, os.Stdout, os.Stderr) }

func simMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 0, "seed to run (0 picks a random one and prints it)")
	name := fs.String("scenario", scenario.Default, "scenario: "+strings.Join(scenario.Names(), ", "))
	parsed := scenario.BindFlags(fs)
	verbose := fs.Bool("v", false, "print the processes' logs to stderr")
	sweep := fs.Int("sweep", 0, "run this many consecutive seeds (from -seed, or 1) and print one line each")
	htmlDir := fs.String("html-dir", ".", "where a failed seed's history is drawn (porcupine's HTML, log and replicated scenarios), as SCENARIO-seedN.html")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	opts := *parsed
	if *verbose {
		opts.Log = stderr
	}
	if *sweep > 0 {
		first := *seed
		if first == 0 {
			first = 1
		}
		return simSweep(*name, opts, first, *sweep, *htmlDir, stdout, stderr)
	}
	picked := *seed == 0
	if picked {
		*seed = randomSeed()
	}
	opts.Seed = *seed
	if picked {
		fmt.Fprintf(stdout, "no seed given; picked %d (replay: %s)\n", *seed, scenario.ReplayCommand(*name, opts))
	}
	sum, err := runScenario(*name, opts)
	if err != nil {
		fmt.Fprintln(stderr, "strata sim:", err)
		return exitUsage
	}
	drawHistory(&sum, *htmlDir)
	sum.Print(stdout)
	if sum.Err != nil {
		if f, ok := sum.Err.(*sim.Failure); ok && f.Stack != "" {
			fmt.Fprintf(stderr, "\n%s\n", f.Stack)
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

// drawHistory writes a failed run's client history as porcupine's HTML
// to dir/SCENARIO-seedN.html and names the file in sum.HTML, which Print
// shows beside the replay command (or why it was not drawn).
func drawHistory(sum *sim.Summary, dir string) {
	if sum.Err == nil || sum.Visualize == nil {
		return
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-seed%d.html", sum.Scenario, sum.Seed))
	var buf bytes.Buffer
	if err := sum.Visualize(&buf); err != nil {
		sum.HTML = "not drawn: " + err.Error()
		return
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		sum.HTML = "not written: " + err.Error()
		return
	}
	sum.HTML = path
}

func simSweep(name string, opts scenario.Options, first uint64, n int, htmlDir string, w, stderr io.Writer) int {
	failed := 0
	var total sim.Summary
	for i := 0; i < n; i++ {
		opts.Seed = first + uint64(i)
		sum, err := runScenario(name, opts)
		if err != nil {
			fmt.Fprintln(stderr, "strata sim:", err)
			return exitUsage
		}
		drawHistory(&sum, htmlDir)
		status := "ok"
		if sum.Err != nil {
			status = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "seed %-8d %-4s sim=%-8v events=%-9d faults=%-4d %6.0fx hash=%016x\n",
			sum.Seed, status, sum.SimTime, sum.Events, sum.FaultTotal(), sum.Speedup(), sum.TraceHash)
		if sum.Err != nil {
			fmt.Fprintf(w, "    %v\n    replay: %s\n", sum.Err, sum.Replay)
			if sum.HTML != "" {
				fmt.Fprintf(w, "    history: %s\n", sum.HTML)
			}
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
