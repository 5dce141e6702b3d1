package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSimFailureDrawsHistory: a seed that fails (log seed 7 in Kafka's
// page-cache mode loses read records, and their offsets are reused) writes
// porcupine's HTML view of its history to -html-dir, named after the
// scenario and seed, and prints its path right under the replay command,
// in a single run and in a sweep.
func TestSimFailureDrawsHistory(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := simMain([]string{"-scenario", "log", "-seed", "7", "-page-cache", "-html-dir", dir}, &out, &errb)
	require.Equal(t, exitError, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	path := filepath.Join(dir, "log-seed7.html")
	require.Contains(t, out.String(), "replay:      make sim SEED=7 SCENARIO=log SIM_ARGS='-page-cache'\nhistory:     "+path+"\n")
	html, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(html), "<html")
	require.Contains(t, string(html), `Append(events-0, \"p`)
	require.NoError(t, os.Remove(path))

	out.Reset()
	code = simMain([]string{"-scenario", "log", "-seed", "7", "-sweep", "1", "-page-cache", "-html-dir", dir}, &out, &errb)
	require.Equal(t, exitError, code)
	require.Contains(t, out.String(), "    replay: make sim SEED=7 SCENARIO=log SIM_ARGS='-page-cache'\n    history: "+path+"\n")
	_, err = os.Stat(path)
	require.NoError(t, err)
}

// TestSimPassDrawsNothing: a passing seed writes no file.
func TestSimPassDrawsNothing(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	require.Equal(t, exitOK, simMain([]string{"-scenario", "log", "-seed", "1", "-html-dir", dir}, &out, &errb), errb.String())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
	require.False(t, strings.Contains(out.String(), "history:"))
}
