package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/sim"
)

// The broker epoch note: missing or unreadable is -1 (a new data
// directory), a written one survives a power loss once synced, and a newer
// write replaces it.
func TestBrokerEpochNote(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1})
	var e env.Env
	p := s.AddProcess("n1", func(pe env.Env) { e = pe })
	p.Start()
	require.NoError(t, s.RunFor(0))
	require.Equal(t, int64(-1), readBrokerEpoch(e.Disk()), "a new directory")

	writeBrokerEpoch(e, 42)
	require.NoError(t, s.RunFor(time.Second))
	p.Crash() // power loss: the synced, renamed note survives
	p.Start()
	require.NoError(t, s.RunFor(0))
	require.Equal(t, int64(42), readBrokerEpoch(e.Disk()))

	writeBrokerEpoch(e, 57)
	require.NoError(t, s.RunFor(time.Second))
	require.Equal(t, int64(57), readBrokerEpoch(e.Disk()))

	f, err := e.Disk().Open(brokerEpochFile, true)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(0))
	require.NoError(t, f.WriteAt([]byte("garbage"), 0))
	require.NoError(t, f.Close())
	require.Equal(t, int64(-1), readBrokerEpoch(e.Disk()), "an unreadable note counts as none")
}
