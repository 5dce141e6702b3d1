//go:build !race

package proccluster

// raceEnabled: the test binary runs without the race detector.
const raceEnabled = false
