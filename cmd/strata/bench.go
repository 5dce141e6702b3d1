package main

import (
	"os"

	"github.com/strata-log/strata/internal/bench"
	"github.com/strata-log/strata/internal/cli"
)

// kfakeBaseline starts `strata bench`'s kfake target; bench_kfake.go sets
// it in a build with -tags kfake, and the production binary leaves it nil
// so that it does not link kfake.
var kfakeBaseline bench.Kfake

func init() {
	register("bench", bench.Summary, func(args []string) int {
		ctx, stop := cli.InterruptContext()
		defer stop()
		return bench.Command(ctx, args, os.Stdout, os.Stderr, kfakeBaseline)
	})
	register("bench-flood", bench.FloodSummary, func(args []string) int {
		ctx, stop := cli.InterruptContext()
		defer stop()
		return bench.FloodCommand(ctx, args, os.Stdin, os.Stdout, os.Stderr)
	})
}
