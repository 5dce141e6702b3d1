package proccluster

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchRuns is how many runs a real-process benchmark makes: the number
// in the environment variable env. Unset (or not positive), the test
// skips, saying that make target runs it.
func BenchRuns(t testing.TB, env, target string) int {
	t.Helper()
	runs := 0
	if v := os.Getenv(env); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, env)
		runs = n
	}
	if runs <= 0 {
		t.Skipf("a benchmark: set %s=N (make %s)", env, target)
	}
	return runs
}

// Median is the median of xs (the mean of the middle two of an even
// count); xs is not changed.
func Median[T int64 | float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// Spread is "median M, min A, max B" of ds, each to the millisecond.
func Spread(ds []time.Duration) string {
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("median %v, min %v, max %v", ms(Median(ds)), ms(slices.Min(ds)), ms(slices.Max(ds)))
}
