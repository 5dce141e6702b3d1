package main

import (
	"os"

	"github.com/strata-log/strata/internal/cli"
	"github.com/strata-log/strata/internal/top"
)

func init() {
	register("top", top.Summary, func(args []string) int {
		ctx, stop := cli.InterruptContext()
		defer stop()
		return top.Command(ctx, args, os.Stdout, os.Stderr)
	})
}
