// Command strata is Strata's single binary: `strata serve` runs a node, and
// other subcommands (sim, bench, topic administration, ...) live beside it.
//
// Each subcommand is a file in this package that registers itself from an
// init function:
//
//	func init() { register("bench", "measure produce/consume throughput", runBench) }
//
// or, for a command that runs until Ctrl-C on the standard streams, with
// registerStreams, which tests call in process with streams of their own.
//
// main only dispatches, so adding a subcommand never touches this file.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/strata-log/strata/internal/cli"
)

// command is one subcommand: run gets the arguments after the subcommand's
// name and returns the process exit code.
type command struct {
	name    string
	summary string
	run     func(args []string) int
	// streams is the in-process entry point of a command added by
	// registerStreams, nil for the others: run calls it with the
	// process's standard streams, tests with their own.
	streams streamCommand
}

// streamCommand is a subcommand that runs until its work is done or ctx is
// cancelled, reading stdin and writing stdout and stderr.
type streamCommand func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int

// commands holds every registered subcommand by name. It is only written by
// init functions, before main runs.
var commands = map[string]command{}

// register adds a subcommand. It panics on a duplicate name: two files
// claiming one name is a build mistake, not a runtime condition.
func register(name, summary string, run func(args []string) int) {
	add(command{name: name, summary: summary, run: run})
}

// registerStreams adds a subcommand that runs on the process's standard
// streams until it is done or Ctrl-C cancels its context.
func registerStreams(name, summary string, streams streamCommand) {
	add(command{name: name, summary: summary, streams: streams, run: func(args []string) int {
		ctx, stop := cli.InterruptContext()
		defer stop()
		return streams(ctx, args, os.Stdin, os.Stdout, os.Stderr)
	}})
}

// withoutStdin is a streamCommand that runs run, which reads no input.
func withoutStdin(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) streamCommand {
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return run(ctx, args, stdout, stderr)
	}
}

// add adds c to commands, panicking on a duplicate name.
func add(c command) {
	if _, dup := commands[c.name]; dup {
		panic("strata: subcommand registered twice: " + c.name)
	}
	commands[c.name] = c
}

// Exit codes (internal/cli's, which the commands in their own packages
// return too).
const (
	exitOK    = cli.ExitOK
	exitError = cli.ExitError
	exitUsage = cli.ExitUsage
)

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stderr))
}

// dispatch runs the subcommand named by args[0].
func dispatch(args []string, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stderr)
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "strata: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return cmd.run(args[1:])
}

// usage lists the subcommands sorted by name.
func usage(w io.Writer) {
	names := make([]string, 0, len(commands))
	width := 0
	for name := range commands {
		names = append(names, name)
		width = max(width, len(name))
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("Strata is a Kafka-compatible distributed log.\n\nUsage:\n\n  strata <command> [arguments]\n\nCommands:\n\n")
	for _, name := range names {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, name, commands[name].summary)
	}
	b.WriteString("\nRun 'strata <command> -h' for a command's flags.\n")
	_, _ = io.WriteString(w, b.String())
}
