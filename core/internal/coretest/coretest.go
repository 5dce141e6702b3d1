// Package coretest holds the helpers that the tests of core's packages
// share: running a package's datadriven scripts and damaging a stored
// byte. The simulated process a test drives is sim/simtest's Rig.
//
// Only tests import it. Like the rest of core it is deterministic.
package coretest

import (
	"path/filepath"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
)

// Commands runs one command of a datadriven script and returns what it
// prints.
type Commands = func(t *testing.T, d *datadriven.TestData) string

// RunScripts runs, each as a subtest, the datadriven scripts in testdata
// whose file names match pattern (as filepath.Match, e.g. "*.txt" or
// "txn_*.txt"); the other files there, such as fuzz corpora, are passed
// over. start is called once a script, in its subtest, and returns the
// commands that script runs against, so every script starts afresh.
func RunScripts(t *testing.T, pattern string, start func(t *testing.T) Commands) {
	t.Helper()
	if _, err := filepath.Match(pattern, ""); err != nil {
		t.Fatalf("script pattern %q: %v", pattern, err)
	}
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if ok, _ := filepath.Match(pattern, filepath.Base(path)); !ok {
			return
		}
		datadriven.RunTest(t, path, start(t))
	})
}

// FlipBits flips the bits of mask in the byte at pos of f, through f's
// page cache; the caller syncs or closes f.
func FlipBits(t require.TestingT, f env.File, pos int64, mask byte) {
	b := make([]byte, 1)
	_, err := f.ReadAt(b, pos)
	require.NoError(t, err)
	b[0] ^= mask
	require.NoError(t, f.WriteAt(b, pos))
}

// ScanOptional scans the argument key of a script command into dest when
// the command has it, leaving dest as it is otherwise.
func ScanOptional(t *testing.T, d *datadriven.TestData, key string, dest ...any) {
	t.Helper()
	if d.HasArg(key) {
		d.ScanArgs(t, key, dest...)
	}
}
