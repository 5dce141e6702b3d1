package log_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/internal/fuzzcorpus"
	"github.com/strata-log/strata/sim"
)

// FuzzRecover writes arbitrary bytes as a segment file, its two index files
// and the two checkpoints of a partition directory, then opens the log. Open
// must return a log or an error, never panic (an assertion is a panic too);
// a log it returns must settle, serve reads (whole valid batches, or an
// error), answer ListOffsets and take an append.
//
//	go test ./core/log -run '^$' -fuzz FuzzRecover -fuzztime 60s
func FuzzRecover(f *testing.F) {
	for _, s := range recoverSeeds(f) {
		f.Add(s.segment, s.index, s.timeIndex, s.checkpoint, s.epochs)
	}
	f.Fuzz(func(t *testing.T, segment, index, timeIndex, checkpoint, epochs []byte) {
		checkRecover(t, segment, index, timeIndex, checkpoint, epochs)
	})
}

func checkRecover(t *testing.T, segment, index, timeIndex, checkpoint, epochs []byte) {
	defer func() {
		if r := recover(); r != nil {
			if v, ok := r.(assert.Violation); ok {
				t.Fatalf("invariant violated on disk input: %v", v)
			}
			panic(r)
		}
	}()
	s := sim.New(sim.Config{Seed: 1})
	var e env.Env
	p := s.AddProcess("n1", func(pe env.Env) { e = pe })
	p.Start()
	require.NoError(t, s.RunFor(0))
	d := e.Disk()
	require.NoError(t, d.MkdirAll(testDir))
	write := func(name string, data []byte) {
		if data == nil {
			return
		}
		f, err := d.Open(testDir+"/"+name, true)
		require.NoError(t, err)
		require.NoError(t, f.WriteAt(data, 0))
		require.NoError(t, f.Close())
	}
	write("00000000000000000000.log", segment)
	write("00000000000000000000.index", index)
	write("00000000000000000000.timeindex", timeIndex)
	if len(checkpoint) > 0 {
		write("recovery-checkpoint", checkpoint)
	}
	if len(epochs) > 0 {
		write("leader-epoch-checkpoint", epochs)
	}
	cfg := log.DefaultConfig()
	cfg.IndexIntervalBytes = 64
	l, err := log.Open(e, testDir, cfg)
	if err != nil {
		return // a clear error is a fine answer to garbage
	}
	settled := false
	l.Flush(l.LogEndOffset(), func(err error) {
		require.NoError(t, err)
		settled = true
	})
	// Step with a budget: a flush cycle that never ends (or restarts
	// forever at one instant) is a bug, not a slow input.
	for i := 0; i < maxSettleEvents && !settled; i++ {
		if !s.Step() {
			break
		}
	}
	require.True(t, settled, "the log never settled (virtual time %v, %d events pending)", s.Now(), s.Pending())
	require.LessOrEqual(t, l.LogStartOffset(), l.LogEndOffset())
	// Reads return whole valid batches or an error.
	for off, n := l.LogStartOffset(), 0; off < l.LogEndOffset() && n < 100; n++ {
		res, err := l.Read(off, 1<<16, -1)
		if err != nil {
			require.True(t, errors.Is(err, log.ErrCorrupt), "read at %d: %v", off, err)
			break
		}
		if res.Size == 0 {
			break
		}
		buf := readRegion(t, &res)
		sp := record.NewSplitter(buf, len(buf)+1, record.CheckFraming)
		last := off - 1
		for sp.Next() {
			last = sp.Batch().LastOffset()
		}
		if sp.Err() != nil || last < off {
			break // what recovery trusted below the recovery point is not checked
		}
		off = last + 1
	}
	_ = l.Verify(l.LogStartOffset(), l.LogEndOffset())
	_, _ = l.OffsetForTimestamp(0)
	_, _ = l.OffsetForTimestamp(log.MaxTimestamp)
	b := build(batchSpec{records: 2, valueSize: 10, timestamp: 1})
	info, err := l.Append(b, max(0, l.LatestEpoch()))
	if err == nil {
		res, err := l.Read(info.FirstOffset, 1<<20, -1)
		require.NoError(t, err)
		res.Release()
	}
}

// maxSettleEvents bounds the simulator events a recovered log may take to
// settle in FuzzRecover.
const maxSettleEvents = 10000

// recoverSeed is one seed of FuzzRecover.
type recoverSeed struct {
	name                                          string
	segment, index, timeIndex, checkpoint, epochs []byte
}

// recoverSeeds builds seeds from a real log: its files after a clean
// shutdown, torn, flipped, and garbage.
func recoverSeeds(t require.TestingT) []recoverSeed {
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 64
	r := newRig(&tHelper{t}, 7, cfg)
	for i := 0; i < 12; i++ {
		_, err := r.l.Append(build(batchSpec{records: 1 + i%3, valueSize: 20 + 9*i, timestamp: 1_700_000_000_000 + int64(i), seed: byte(i)}), int32(i/4))
		require.NoError(t, err)
	}
	r.shutdown()
	read := func(name string) []byte {
		b, ok := r.Proc.Disk().ReadFile(testDir + "/" + name)
		require.True(t, ok, name)
		return b
	}
	seg, idx, tidx := read("00000000000000000000.log"), read("00000000000000000000.index"), read("00000000000000000000.timeindex")
	ck, ep := read("recovery-checkpoint"), read("leader-epoch-checkpoint")
	flipped := append([]byte(nil), seg...)
	flipped[len(flipped)/2] ^= 0x10
	garbage := make([]byte, 700)
	for i := range garbage {
		garbage[i] = byte(i*131 + i/7)
	}
	return []recoverSeed{
		{name: "clean", segment: seg, index: idx, timeIndex: tidx, checkpoint: ck, epochs: ep},
		{name: "no-checkpoints", segment: seg, index: idx, timeIndex: tidx},
		{name: "no-indexes", segment: seg, checkpoint: ck, epochs: ep},
		{name: "torn-after-recovery-point", segment: seg[:len(seg)-37], index: idx, timeIndex: tidx},
		{name: "torn-before-recovery-point", segment: seg[:len(seg)/2], index: idx, timeIndex: tidx, checkpoint: ck, epochs: ep},
		{name: "bit-flip", segment: flipped, index: idx, timeIndex: tidx},
		{name: "bit-flip-before-recovery-point", segment: flipped, index: idx, timeIndex: tidx, checkpoint: ck, epochs: ep},
		{name: "index-garbage", segment: seg, index: garbage[:96], timeIndex: garbage[:120], checkpoint: ck},
		{name: "partial-index-entries", segment: seg, index: idx[:len(idx)-3], timeIndex: tidx[:len(tidx)-5], checkpoint: ck},
		{name: "bad-checkpoint", segment: seg, checkpoint: []byte("0\n2\nrecovery-point x\n"), epochs: []byte("7\n")},
		{name: "checkpoint-beyond-log", segment: seg, checkpoint: []byte("0\n2\nrecovery-point 9999\nlog-start-offset 5000\n")},
		{name: "garbage", segment: garbage, index: garbage[:64], timeIndex: garbage[:48]},
		{name: "empty", segment: []byte{}},
	}
}

// tHelper adapts require.TestingT to the rig's tb.
type tHelper struct{ require.TestingT }

func (tHelper) Helper() {}

// TestGenerateFuzzCorpus rewrites testdata/fuzz/FuzzRecover from
// recoverSeeds:
//
//	go test ./core/log -run TestGenerateFuzzCorpus -update-fuzz-corpus
func TestGenerateFuzzCorpus(t *testing.T) {
	var seeds []fuzzcorpus.Seed
	for _, s := range recoverSeeds(t) {
		seeds = append(seeds, fuzzcorpus.Seed{Name: s.name, Args: []any{s.segment, s.index, s.timeIndex, s.checkpoint, s.epochs}})
	}
	fuzzcorpus.Generate(t, "FuzzRecover", seeds...)
}
