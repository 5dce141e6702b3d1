package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/quorum"
)

// reset-state rewrites a poisoned quorum-state (epoch 2147483647, as a
// Strata before issue 22 persisted from a forged Vote) found under
// log.dirs, and leaves a usable one alone unless forced.
func TestQuorumResetState(t *testing.T) {
	dataDir := t.TempDir()
	metaDir := filepath.Join(dataDir, "__cluster_metadata-0")
	require.NoError(t, os.Mkdir(metaDir, 0o755))
	path := filepath.Join(metaDir, kraft.StateFileName)
	poisoned := quorum.QuorumState{Epoch: math.MaxInt32, VotedFor: 2, LeaderID: quorum.NoNode}
	require.NoError(t, os.WriteFile(path, kraft.EncodeStateFile(poisoned), 0o644))

	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, quorumCommand([]string{"reset-state", "--dir", dataDir, "--epoch", "8"}, &out, &errOut), errOut.String())
	got, ok := kraft.DecodeStateFile(must(os.ReadFile(path)))
	require.True(t, ok)
	require.Equal(t, quorum.QuorumState{Epoch: 8, VotedFor: quorum.NoNode, LeaderID: quorum.NoNode}, got)

	errOut.Reset()
	require.Equal(t, exitError, quorumCommand([]string{"reset-state", "--dir", metaDir, "--epoch", "9"}, &out, &errOut))
	require.Contains(t, errOut.String(), "usable")
	require.Equal(t, exitOK, quorumCommand([]string{"reset-state", "--dir", metaDir, "--epoch", "9", "--force"}, &out, &errOut))
	got, _ = kraft.DecodeStateFile(must(os.ReadFile(path)))
	require.Equal(t, int32(9), got.Epoch)

	require.Equal(t, exitUsage, quorumCommand([]string{"reset-state", "--dir", metaDir, "--epoch", "2147483647"}, &out, &errOut))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
