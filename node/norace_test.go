//go:build !race

package node_test

// raceEnabled: the race detector is off.
const raceEnabled = false
