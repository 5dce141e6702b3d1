package log_test

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/node"
)

// The benchmarks run the log on a real disk through the production env
// (package node: a loop goroutine, files under a temp directory, fdatasync
// on helper goroutines), driving it from the benchmark goroutine with
// Loop.Call. They write in os.TempDir(); set TMPDIR to measure another disk.

// realLog is a log on the node's env over a fresh temp directory.
type realLog struct {
	dir  string
	loop *node.Loop
	env  *node.Env
	l    *log.Log
}

func openRealLog(b *testing.B, dir string, cfg log.Config) *realLog {
	b.Helper()
	rl := &realLog{dir: dir, loop: node.NewLoop()}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rl.loop.Run()
	}()
	b.Cleanup(func() {
		rl.loop.Stop()
		wg.Wait()
		_ = rl.env.Close()
	})
	var err error
	rl.env, err = node.NewEnv(rl.loop, node.EnvConfig{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	rl.open(b, cfg)
	return rl
}

// open opens (recovers) the log and waits until it has settled.
func (rl *realLog) open(b *testing.B, cfg log.Config) {
	b.Helper()
	var err error
	if cerr := rl.loop.Call(func() { rl.l, err = log.Open(rl.env, "topic-0", cfg) }); cerr != nil || err != nil {
		b.Fatal(cerr, err)
	}
	if err := rl.flush(); err != nil {
		b.Fatal(err)
	}
}

// do runs f on the loop and waits for the completion it reports.
func (rl *realLog) do(f func(done func(error))) error {
	ch := make(chan error, 1)
	if err := rl.loop.Call(func() { f(func(err error) { ch <- err }) }); err != nil {
		return err
	}
	return <-ch
}

func (rl *realLog) flush() error {
	return rl.do(func(done func(error)) { rl.l.Flush(rl.l.LogEndOffset(), done) })
}

// fill appends batch until the log holds size bytes, then flushes.
func (rl *realLog) fill(b *testing.B, batch []byte, size int64) {
	if err := rl.loop.Call(func() {
		for rl.l.Size() < size {
			if _, err := rl.l.Append(batch, 0); err != nil {
				b.Error(err)
				return
			}
		}
	}); err != nil {
		b.Fatal(err)
	}
	if err := rl.flush(); err != nil {
		b.Fatal(err)
	}
}

func (rl *realLog) shutdown() error { return rl.do(func(done func(error)) { rl.l.Shutdown(done) }) }

// benchBatch is one batch of 1 KiB records, about size bytes.
func benchBatch(b *testing.B, size int) []byte {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 1024-40)
	bld := record.NewBuilder()
	for bld.UncompressedSize() < size-1024 {
		for i := range value {
			value[i] = byte(rng.Uint32())
		}
		bld.Append(1_700_000_000_000, []byte("key-0000"), value)
	}
	out, err := bld.AppendTo(nil)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkAppendFlush appends one batch of 1 KiB records and flushes it,
// waiting for the flush before the next append, and beside it writes the
// same bytes to a plain file in the same directory with write+fdatasync,
// the raw baseline. The two alternate in blocks of appendBlock operations,
// so both see the same disk conditions (the disk of a shared machine varies
// by the second). Within a block the log's operations chain on its loop
// (the next append runs in the previous flush's callback), as a broker
// serving one producer with acks=all would. It reports both throughputs
// and their ratio.
//
//	go test -run '^$' -bench AppendFlush -benchtime 400x ./core/log
func BenchmarkAppendFlush(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("batch=%dKiB", size>>10), func(b *testing.B) {
			dir := b.TempDir()
			cfg := log.DefaultConfig()
			cfg.MessageMaxBytes = 2 << 20
			rl := openRealLog(b, dir, cfg)
			batch := benchBatch(b, size)
			raw, err := os.Create(filepath.Join(dir, "raw-baseline"))
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			fd := int(raw.Fd())
			var logTime, rawTime time.Duration
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			for done := 0; done < b.N; done += appendBlock {
				n := min(appendBlock, b.N-done)
				start := time.Now()
				if err := rl.do(func(finish func(error)) { appendChain(rl.l, batch, n, finish) }); err != nil {
					b.Fatal(err)
				}
				logTime += time.Since(start)
				start = time.Now()
				for i := 0; i < n; i++ {
					if _, err := raw.Write(batch); err != nil {
						b.Fatal(err)
					}
					if err := unix.Fdatasync(fd); err != nil {
						b.Fatal(err)
					}
				}
				rawTime += time.Since(start)
			}
			b.StopTimer()
			mb := float64(b.N) * float64(len(batch)) / 1e6
			logRate, rawRate := mb/logTime.Seconds(), mb/rawTime.Seconds()
			b.ReportMetric(logRate, "log-MB/s")
			b.ReportMetric(rawRate, "raw-MB/s")
			b.ReportMetric(logRate/rawRate, "log/raw")
		})
	}
}

// appendBlock is how many operations the log and the baseline each run in
// turn: one, since longer blocks let the disk's drift favour either side.
const appendBlock = 1

// appendChain appends batch and flushes it n times, each append in the
// callback of the previous flush, then calls finish. It runs on the loop.
func appendChain(l *log.Log, batch []byte, n int, finish func(error)) {
	if n == 0 {
		finish(nil)
		return
	}
	if _, err := l.Append(batch, 0); err != nil {
		finish(err)
		return
	}
	l.Flush(l.LogEndOffset(), func(err error) {
		if err != nil {
			finish(err)
			return
		}
		appendChain(l, batch, n-1, finish)
	})
}

// BenchmarkReadLookup measures Read at random offsets of a multi-segment
// log (16 segments of 8 MiB, 4 KiB batches): finding the segment, the index
// entry and the region of up to 1 MiB of whole batches, reading a few batch
// headers. It does not read the region itself (the node sendfiles it).
//
//	go test -run '^$' -bench ReadLookup ./core/log
func BenchmarkReadLookup(b *testing.B) {
	for _, budget := range []int{64, 8} {
		b.Run(fmt.Sprintf("maxOpenFiles=%d", budget), func(b *testing.B) {
			cfg := log.DefaultConfig()
			cfg.SegmentBytes = 8 << 20
			cfg.MaxOpenFiles = budget
			rl := openRealLog(b, b.TempDir(), cfg)
			rl.fill(b, benchBatch(b, 4<<10), 128<<20)
			leo := rl.l.LogEndOffset()
			rng := rand.New(rand.NewPCG(3, 4))
			const perCall = 1000
			b.ResetTimer()
			for i := 0; i < b.N; i += perCall {
				n := min(perCall, b.N-i)
				if err := rl.loop.Call(func() {
					for j := 0; j < n; j++ {
						res, err := rl.l.Read(rng.Int64N(leo), 1<<20, -1)
						if err != nil || res.Size == 0 {
							b.Errorf("read: %v (size %d)", err, res.Size)
							return
						}
						res.Release()
					}
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
		})
	}
}

// BenchmarkReplicaFetchVerify measures what a leader adds to a replica
// fetch by checking the region before it is sent (ReadResult.Verify: one
// read of up to 1 MiB from the page cache and a CRC32C of every batch),
// beside the lookup alone (the baseline, as BenchmarkReadLookup), and
// prints the bytes verified per second.
//
//	go test -run '^$' -bench ReplicaFetchVerify ./core/log
func BenchmarkReplicaFetchVerify(b *testing.B) {
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 8 << 20
	rl := openRealLog(b, b.TempDir(), cfg)
	rl.fill(b, benchBatch(b, 16<<10), 64<<20)
	leo := rl.l.LogEndOffset()
	for _, verify := range []bool{false, true} {
		b.Run(fmt.Sprintf("verify=%v", verify), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(5, 6))
			var bytes int64
			var scratch []byte
			b.ResetTimer()
			if err := rl.loop.Call(func() {
				for i := 0; i < b.N; i++ {
					res, err := rl.l.Read(rng.Int64N(leo), 1<<20, -1)
					if err == nil && verify {
						scratch, err = res.Verify(scratch)
					}
					if err != nil || res.Size == 0 {
						b.Errorf("read: %v (size %d)", err, res.Size)
						return
					}
					bytes += res.Size
					res.Release()
				}
			}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(bytes)/b.Elapsed().Seconds()/(1<<20), "MiB/s")
		})
	}
}

// BenchmarkRecovery1GiB measures Open of a 1 GiB log (4 segments of 256
// MiB, 1 MiB batches) in the page cache: after a clean Shutdown (the
// recovery point is the log end: Open checks a few index entries and
// batch headers) and after a crash with no recovery checkpoint (Open reads
// and CRC-checks every byte, twice to rule out read flips, and rebuilds
// the indexes). It needs about 1 GiB in TMPDIR; -short skips it.
//
//	go test -run '^$' -bench Recovery1GiB -benchtime 3x ./core/log
func BenchmarkRecovery1GiB(b *testing.B) {
	if testing.Short() {
		b.Skip("writes 1 GiB")
	}
	dir := b.TempDir()
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 256 << 20
	cfg.MessageMaxBytes = 2 << 20
	rl := openRealLog(b, dir, cfg)
	batch := benchBatch(b, 1<<20)
	for rl.l.Size() < 1<<30 {
		rl.fill(b, batch, rl.l.Size()+64*int64(len(batch))) // a flush every 64 batches
	}
	size := rl.l.Size()
	if err := rl.shutdown(); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"clean", "crash"} {
		b.Run(mode, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if mode == "crash" {
					if err := os.Remove(filepath.Join(dir, "topic-0", "recovery-checkpoint")); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				rl.open(b, cfg)
				b.StopTimer()
				if rl.l.Size() != size {
					b.Fatalf("recovered %d bytes, wrote %d", rl.l.Size(), size)
				}
				if err := rl.shutdown(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
