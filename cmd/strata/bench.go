package main

import (
	"context"
	"io"

	"github.com/strata-log/strata/internal/bench"
)

// kfakeBaseline starts `strata bench`'s kfake target; bench_kfake.go sets
// it in a build with -tags kfake, and the production binary leaves it nil
// so that it does not link kfake.
var kfakeBaseline bench.Kfake

func init() {
	registerStreams("bench", bench.Summary, withoutStdin(func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return bench.Command(ctx, args, stdout, stderr, kfakeBaseline)
	}))
	registerStreams("bench-flood", bench.FloodSummary, bench.FloodCommand)
}
