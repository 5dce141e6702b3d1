package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/node"
)

// TestServeFlagsAreTheRows: every flag of `strata serve` but --config and
// --cluster-id is a row's key (node.ConfigKeys: core/server's broker keys
// and node's), and every row is a flag.
func TestServeFlagsAreTheRows(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	keyFlags(fs)
	var flags, rows []string
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f.Name) })
	for _, k := range node.ConfigKeys() {
		rows = append(rows, k.Name)
	}
	require.ElementsMatch(t, rows, flags)
	require.NotEmpty(t, rows)
	require.Equal(t, exitUsage, serve([]string{"--replica.lag.time.max.ms", "0"}), "a flag's value goes through its row's check")
}
