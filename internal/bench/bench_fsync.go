package bench

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of the fsync ceiling.
const (
	// defaultFsyncWriteBytes is --fsync-write-bytes: one write before
	// each fdatasync, 1 MiB (the producer's batch size) until the
	// node's measured group-commit size replaces it.
	defaultFsyncWriteBytes = 1 << 20
	// fsyncFileBytesMax is where the loop starts a new file, as a log
	// rolls a segment (Kafka's segment.bytes default, 1 GiB), so a long
	// run does not grow one file without bound.
	fsyncFileBytesMax = 1 << 30
)

// fsyncRun is one run of the fsync ceiling: appends of a fixed size, each
// followed by fdatasync, for a fixed time. It is the most a log that
// makes every acknowledged write durable can do on this disk at that
// write size.
type fsyncRun struct {
	WriteBytes int     `json:"write_bytes"`
	Loops      int     `json:"loops"`
	Fsyncs     int64   `json:"fsyncs"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	MiBPerSec  float64 `json:"mib_per_s"`
	FsyncsPerS float64 `json:"fsyncs_per_s"`
	P50Ms      float64 `json:"fsync_p50_ms"`
	P99Ms      float64 `json:"fsync_p99_ms"`
}

// fsyncCeiling runs loops fsync loops in parallel, each appending
// writeBytes of random data to a file of its own in dir and fdatasyncing
// it, again and again for duration (or until ctx ends), and reports their
// throughput together and the fdatasync latencies of all. The files are
// removed. Several loops are the ceiling of as many nodes sharing the
// disk, each with its own log.
func fsyncCeiling(ctx context.Context, dir string, writeBytes int, duration time.Duration, loops int) (fsyncRun, error) {
	res := fsyncRun{WriteBytes: writeBytes, Loops: loops}
	buf := make([]byte, writeBytes)
	if _, err := crand.Read(buf); err != nil {
		return res, fmt.Errorf("random data: %w", err)
	}
	lat := make([][]time.Duration, loops)
	start := time.Now()
	deadline := start.Add(duration)
	err := inParallel(loops, func(i int) (err error) {
		lat[i], err = fsyncLoop(ctx, dir, fmt.Sprintf("fsync-ceiling-%d", i+1), buf, deadline)
		return err
	})
	if err != nil {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	elapsed := time.Since(start)
	latencies := slices.Concat(lat...)
	res.Fsyncs = int64(len(latencies))
	res.Bytes = res.Fsyncs * int64(writeBytes)
	res.Seconds = elapsed.Seconds()
	res.MiBPerSec = float64(res.Bytes) / (1 << 20) / res.Seconds
	res.FsyncsPerS = float64(res.Fsyncs) / res.Seconds
	res.P50Ms = percentileMs(latencies, 0.50)
	res.P99Ms = percentileMs(latencies, 0.99)
	return res, nil
}

// fsyncLoop appends buf to files named prefix-<n> in dir, each followed
// by fdatasync, until deadline or ctx ends, starting a new file every
// fsyncFileBytesMax bytes, and returns the fdatasync latencies.
func fsyncLoop(ctx context.Context, dir, prefix string, buf []byte, deadline time.Time) ([]time.Duration, error) {
	var (
		f         *os.File
		fileBytes int64
		files     int
	)
	open := func() error {
		if f != nil {
			name := f.Name()
			if err := f.Close(); err != nil {
				return fmt.Errorf("fsync ceiling: %w", err)
			}
			if err := os.Remove(name); err != nil {
				return fmt.Errorf("fsync ceiling: %w", err)
			}
		}
		files++
		var err error
		f, err = os.OpenFile(filepath.Join(dir, fmt.Sprintf("%s-%d", prefix, files)), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("fsync ceiling: %w", err)
		}
		fileBytes = 0
		return nil
	}
	if err := open(); err != nil {
		return nil, err
	}
	defer func() {
		name := f.Name()
		_ = f.Close()
		_ = os.Remove(name)
	}()

	var latencies []time.Duration
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if fileBytes >= fsyncFileBytesMax {
			if err := open(); err != nil {
				return nil, err
			}
		}
		if _, err := f.Write(buf); err != nil {
			return nil, fmt.Errorf("fsync ceiling: %w", err)
		}
		t0 := time.Now()
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return nil, fmt.Errorf("fsync ceiling: fdatasync %s: %w", f.Name(), err)
		}
		latencies = append(latencies, time.Since(t0))
		fileBytes += int64(len(buf))
	}
	return latencies, nil
}
