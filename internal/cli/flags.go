package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
)

// Command is one strata command's voice: the messages it prints to
// Stderr start with "strata <Name>: ".
type Command struct {
	// Name is the command after "strata ", such as "topic create".
	Name   string
	Stderr io.Writer
}

// NewFlagSet is the flag set of `strata <name>`, writing to stderr, whose
// usage prints "Usage: strata <synopsis>", about and the flags; the
// Command prints the command's messages.
func NewFlagSet(name, synopsis, about string, stderr io.Writer) (*flag.FlagSet, Command) {
	fs := flag.NewFlagSet("strata "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: strata %s\n\n%s\n\n", synopsis, about)
		fs.PrintDefaults()
	}
	return fs, Command{Name: name, Stderr: stderr}
}

// UsageError prints a command-line mistake and returns ExitUsage.
func (c Command) UsageError(format string, args ...any) int {
	c.say(format, args...)
	return ExitUsage
}

// Fail prints a failed step and returns ExitError.
func (c Command) Fail(format string, args ...any) int {
	c.say(format, args...)
	return ExitError
}

func (c Command) say(format string, args ...any) {
	fmt.Fprintf(c.Stderr, "strata %s: %s\n", c.Name, fmt.Sprintf(format, args...))
}

// Parse parses args into fs, flags before the positional arguments. It
// returns false and the exit code when the command should stop: ExitOK
// after -h, ExitUsage after a bad flag (which fs has printed).
func Parse(fs *flag.FlagSet, args []string) (int, bool) {
	return parseCode(fs.Parse(args))
}

// ParseArgs is Parse with the flags anywhere among the positional
// arguments (ParseInterleaved), which it returns.
func ParseArgs(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	positional, err := ParseInterleaved(fs, args)
	code, ok := parseCode(err)
	return positional, code, ok
}

// ParseFlags is ParseArgs for a command that takes flags alone: a
// positional argument is a usage error.
func (c Command) ParseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	extra, code, ok := ParseArgs(fs, args)
	if ok && len(extra) > 0 {
		return c.UsageError("unexpected arguments %q", extra), false
	}
	return code, ok
}

// parseCode is Parse's answer for a parse error.
func parseCode(err error) (int, bool) {
	switch {
	case err == nil:
		return ExitOK, true
	case errors.Is(err, flag.ErrHelp):
		return ExitOK, false
	default:
		return ExitUsage, false
	}
}

// NewTable is a table of the commands' layout (columns two spaces apart)
// on w with header, tab-separated, as its first line. Flush prints it.
func NewTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}
