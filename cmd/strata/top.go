package main

import "github.com/strata-log/strata/internal/top"

func init() {
	registerStreams("top", top.Summary, withoutStdin(top.Command))
}
