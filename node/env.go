package node

import (
	crand "crypto/rand"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/strata-log/strata/core/env"
)

// Env is the production env.Env: the real clock, randomness seeded from
// crypto/rand, files under the data directory, TCP, and an optional object
// store, all delivering callbacks to one Loop.
type Env struct {
	loop   *Loop
	rnd    *rand.Rand
	disk   *Disk
	net    *Net
	bucket *Bucket // nil when no object store is configured
	work   *workPool
	log    *slog.Logger
}

var _ env.Env = (*Env)(nil)

// EnvConfig says where an Env's disk and bucket live and how its transport
// is bounded.
type EnvConfig struct {
	// DataDir is the Disk root (log.dirs).
	DataDir string
	// BucketDir, when not empty, is the directory of a filesystem object
	// store; empty means no bucket (Env.Bucket returns nil).
	BucketDir string
	// Net bounds the transport: socket.request.max.bytes, the
	// transport's share of queued.max.request.bytes and the progress
	// rule of request frames.
	Net NetConfig
	// SyncConcurrency bounds concurrent fdatasyncs; <= 0 means
	// DefaultSyncConcurrency.
	SyncConcurrency int
	// BucketConcurrency bounds concurrent object-store calls; <= 0 means
	// DefaultBucketConcurrency.
	BucketConcurrency int
	// Logger receives every log line; nil means slog.Default().
	Logger *slog.Logger
	// WorkWorkers is how many goroutines run Work jobs (validation and
	// encoding off the loop); <= 0 means GOMAXPROCS.
	WorkWorkers int
	// NoSendfile sends fetched file regions through user space (pread and
	// write) instead of sendfile(2); for measuring what zero-copy saves.
	NoSendfile bool
}

// NewEnv builds an Env whose callbacks run on loop.
func NewEnv(loop *Loop, cfg EnvConfig) (*Env, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	disk, err := NewDisk(cfg.DataDir, loop, cfg.SyncConcurrency)
	if err != nil {
		return nil, err
	}
	e := &Env{
		loop: loop,
		rnd:  rand.New(rand.NewChaCha8(seed())),
		disk: disk,
		net:  NewNet(loop, cfg.Net, log),
		work: newWorkPool(loop, cfg.WorkWorkers),
		log:  log,
	}
	e.net.UseSendfile(!cfg.NoSendfile)
	if cfg.BucketDir != "" {
		if e.bucket, err = NewFilesystemBucket(cfg.BucketDir, loop, cfg.BucketConcurrency); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// seed draws a ChaCha8 seed from the OS. The node's Rand is
// cryptographically strong (ChaCha8 from a secret seed), so core may draw
// what must not be guessed from it: SASL nonces and salts, producer ids.
// crypto/rand.Read never fails on Linux (getrandom); if it ever did, a
// process must not run with a predictable seed, so it panics (as
// crypto/rand itself does since Go 1.24).
func seed() [32]byte {
	var b [32]byte
	if _, err := crand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return b
}

// Now implements env.Env with the wall clock.
func (e *Env) Now() time.Time { return time.Now() }

// Monotonic implements env.Env: time since the loop was created.
func (e *Env) Monotonic() time.Duration { return e.loop.Monotonic() }

// AfterFunc implements env.Env on the loop's timer heap.
func (e *Env) AfterFunc(d time.Duration, f func()) env.Timer { return e.loop.AfterFunc(d, f) }

// Post implements env.Env.
func (e *Env) Post(f func()) { e.loop.Post(f) }

// Work implements env.Env on the Env's worker goroutines.
func (e *Env) Work(cost time.Duration, job, done func()) { e.work.Work(cost, job, done) }

// Rand implements env.Env. Like all Env state it belongs to the loop.
func (e *Env) Rand() *rand.Rand { return e.rnd }

// Buggify implements env.Env: fault points never fire in production.
func (e *Env) Buggify(string) bool { return false }

// Disk implements env.Env.
func (e *Env) Disk() env.Disk { return e.disk }

// Net implements env.Env.
func (e *Env) Net() env.Net { return e.net }

// Bucket implements env.Env; nil when no object store is configured.
func (e *Env) Bucket() env.Bucket {
	if e.bucket == nil {
		return nil // an untyped nil, not a nil *Bucket in an interface
	}
	return e.bucket
}

// Logger implements env.Env.
func (e *Env) Logger() *slog.Logger { return e.log }

// Close releases everything the Env started: sockets, and the goroutines
// of syncs, dials and object-store calls. Call it after the loop stopped;
// completions still in flight are dropped with the loop.
func (e *Env) Close() error {
	e.net.Close()
	e.work.close()
	e.disk.wait()
	var err error
	if e.bucket != nil {
		err = e.bucket.close()
	}
	return err
}
