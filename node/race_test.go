//go:build race

package node_test

// raceEnabled: the race detector is on (its shadow memory makes RSS
// meaningless as a bound).
const raceEnabled = true
