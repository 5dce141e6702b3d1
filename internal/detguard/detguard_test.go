package detguard

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBadFixtureReportsEveryRule(t *testing.T) {
	findings, err := Check(".", "./testdata/bad")
	require.NoError(t, err)
	got := map[string]int{}
	var lines []string
	for _, f := range findings {
		got[f.Rule]++
		lines = append(lines, fmt.Sprintf("%s:%d %s", filepath.Base(f.Pos.Filename), f.Pos.Line, f.Rule))
	}
	t.Logf("findings:\n%v", lines)
	require.Equal(t, 3, got["import"], "crypto/rand, os, sync, and nothing else")
	require.Equal(t, 1, got["goroutine"])
	require.Equal(t, 4, got["channel"], "chan type, send, receive, select")
	require.Equal(t, 3, got["wall-clock"], "Sleep, Since, Now")
	require.Equal(t, 1, got["randomness"])
	require.Equal(t, 5, got["map-range"], "unsorted collect, decision, annotation without reason, two 'sorted below' that are not verifiable")
	require.Equal(t, 2, got["map-iter"], "maps.Keys collected unsorted, maps.All ranged")
}

func TestGoodFixtureIsClean(t *testing.T) {
	findings, err := Check(".", "./testdata/good")
	require.NoError(t, err)
	require.Empty(t, findings)
}
