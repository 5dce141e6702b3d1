package scenario

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var updatePins = flag.Bool("update-pins", false, "rewrite testdata/pinned.txt with the pinned seeds' current fault mixes and trace hashes")

// pinnedFile records, for every pinned regression seed, the fault mix it
// drew and the trace hash it printed when its pin was last acknowledged.
const pinnedFile = "testdata/pinned.txt"

type pinRecord struct {
	hash, mix string
}

// TestPinnedSeedsKeepTheirFaultMix runs every pinned seed (log and the
// kraft shapes) and compares its fault mix with the one recorded: a change
// that re-draws a pinned seed's faults (a new nemesis draw, a new
// scenario option) fails here, since the seed may no longer reproduce
// what it was pinned for; whoever made it checks that, and acknowledges
// with -update-pins. A changed trace hash alone is only logged: every
// code change moves it.
func TestPinnedSeedsKeepTheirFaultMix(t *testing.T) {
	if testing.Short() && !*updatePins {
		t.Skip("short tier: the regression tests run every pinned seed; make test also checks their fault mixes here")
	}
	t.Parallel()
	recorded := map[string]pinRecord{}
	if f, err := os.Open(pinnedFile); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			parts := strings.SplitN(line, " ", 4)
			require.Len(t, parts, 4, "%s: bad line %q", pinnedFile, line)
			recorded[parts[0]+" "+parts[1]] = pinRecord{hash: parts[2], mix: parts[3]}
		}
		require.NoError(t, sc.Err())
		require.NoError(t, f.Close())
	}
	type pinned struct {
		scenario string
		seed     uint64
	}
	var pins []pinned
	for _, s := range logRegressionSeeds {
		pins = append(pins, pinned{"log", s})
	}
	for _, s := range kraftRegressionSeeds {
		pins = append(pins, pinned{s.scenario, s.seed})
	}
	for _, s := range replicatedRegressionSeeds {
		pins = append(pins, pinned{"replicated", s})
	}
	for _, s := range replicated5RegressionSeeds {
		pins = append(pins, pinned{"replicated5", s})
	}
	for _, s := range groupsRegressionSeeds {
		pins = append(pins, pinned{"groups", s})
	}
	for _, s := range txnRegressionSeeds {
		pins = append(pins, pinned{"txn", s})
	}
	var out strings.Builder
	out.WriteString("# scenario seed trace-hash fault-mix, per pinned seed (go test ./sim/scenario -run TestPinnedSeeds -update-pins)\n")
	for _, p := range pins {
		sum, err := Run(p.scenario, Options{Seed: p.seed})
		require.NoError(t, err)
		hash := fmt.Sprintf("%016x", sum.TraceHash)
		key := p.scenario + " " + strconv.FormatUint(p.seed, 10)
		fmt.Fprintf(&out, "%s %s %s\n", key, hash, sum.Mix)
		if *updatePins {
			continue
		}
		rec, ok := recorded[key]
		if !ok {
			t.Errorf("%s is pinned but not recorded in %s: run with -update-pins", key, pinnedFile)
			continue
		}
		if rec.mix != sum.Mix {
			t.Errorf("%s's fault mix was re-drawn:\n  was %s\n  now %s\ncheck that the seed still exercises what it was pinned for, then run with -update-pins", key, rec.mix, sum.Mix)
		}
		if rec.hash != hash {
			t.Logf("%s: trace hash %s, recorded %s (expected after any change to the code it runs)", key, hash, rec.hash)
		}
	}
	if *updatePins {
		require.NoError(t, os.WriteFile(pinnedFile, []byte(out.String()), 0o644))
	}
}
