package main

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"os"
	"path/filepath"
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
	Fsyncs     int64   `json:"fsyncs"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	MiBPerSec  float64 `json:"mib_per_s"`
	FsyncsPerS float64 `json:"fsyncs_per_s"`
	P50Ms      float64 `json:"fsync_p50_ms"`
	P99Ms      float64 `json:"fsync_p99_ms"`
}

// fsyncCeiling appends writeBytes of random data to a file in dir and
// fdatasyncs it, again and again for duration (or until ctx ends), and
// reports the throughput and the fdatasync latencies. The files are
// removed.
func fsyncCeiling(ctx context.Context, dir string, writeBytes int, duration time.Duration) (fsyncRun, error) {
	res := fsyncRun{WriteBytes: writeBytes}
	buf := make([]byte, writeBytes)
	if _, err := crand.Read(buf); err != nil {
		return res, fmt.Errorf("random data: %w", err)
	}
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
		f, err = os.OpenFile(filepath.Join(dir, fmt.Sprintf("fsync-ceiling-%d", files)), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("fsync ceiling: %w", err)
		}
		fileBytes = 0
		return nil
	}
	if err := open(); err != nil {
		return res, err
	}
	defer func() {
		name := f.Name()
		_ = f.Close()
		_ = os.Remove(name)
	}()

	var latencies []time.Duration
	start := time.Now()
	deadline := start.Add(duration)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if fileBytes >= fsyncFileBytesMax {
			if err := open(); err != nil {
				return res, err
			}
		}
		if _, err := f.Write(buf); err != nil {
			return res, fmt.Errorf("fsync ceiling: %w", err)
		}
		t0 := time.Now()
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return res, fmt.Errorf("fsync ceiling: fdatasync %s: %w", f.Name(), err)
		}
		latencies = append(latencies, time.Since(t0))
		fileBytes += int64(writeBytes)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	elapsed := time.Since(start)
	res.Fsyncs = int64(len(latencies))
	res.Bytes = res.Fsyncs * int64(writeBytes)
	res.Seconds = elapsed.Seconds()
	res.MiBPerSec = float64(res.Bytes) / (1 << 20) / res.Seconds
	res.FsyncsPerS = float64(res.Fsyncs) / res.Seconds
	res.P50Ms = percentileMs(latencies, 0.50)
	res.P99Ms = percentileMs(latencies, 0.99)
	return res, nil
}
