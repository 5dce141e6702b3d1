//go:build race

package proccluster

// raceEnabled: the test binary runs with the race detector, so the
// strata binary it builds does too.
const raceEnabled = true
