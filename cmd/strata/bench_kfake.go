//go:build kfake

package main

import "github.com/strata-log/strata/internal/bench/kfakebaseline"

// A build with -tags kfake (bin/strata-bench, `make bench-strata`) links
// franz-go's kfake for `strata bench`'s kfake target.
func init() { kfakeBaseline = kfakebaseline.Start }
