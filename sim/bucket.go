package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/thanos-io/objstore"

	"github.com/strata-log/strata/core/env"
)

// Bucket is the simulated object store all processes share, implementing
// the failure model documented on env.Bucket over objstore's in-memory
// bucket.
//
// Every operation goes through three instants: the call; after a seeded
// request latency, the instant it takes effect on the store (a
// simulator-level event, so an upload whose caller crashed meanwhile still
// lands, as it would on S3); and after a seeded response latency, the
// completion on the caller's loop, dropped if the caller's incarnation ended
// meanwhile. Reads observe the store at their effect instant.
//
// Injected faults (see BucketFaults) make an operation fail without effect,
// or take effect and still report an error (ambiguous), and make listings
// stale.
type Bucket struct {
	sim    *Sim
	store  *objstore.InMemBucket
	faults BucketFaults

	// uploadedAt and deletedAt remember when objects were last uploaded
	// and deleted, for stale listings. Entries older than the staleness
	// window are pruned.
	uploadedAt map[string]time.Duration
	deletedAt  map[string]time.Duration

	rngs  map[string]*rand.Rand // per process name
	stats BucketStats
}

// Defaults of the simulated bucket.
const (
	// defaultBucketLatencyMin and defaultBucketLatencyMax bound each of an
	// operation's two legs (request and response) when BucketFaults leaves
	// them zero: a nearby object store answers in a few milliseconds.
	defaultBucketLatencyMin = 1 * time.Millisecond
	defaultBucketLatencyMax = 5 * time.Millisecond
	// staleListOmitProbability is the chance that a listing within the
	// staleness window omits a recent upload or shows a recent delete.
	staleListOmitProbability = 0.5
)

// BucketFaults configures how the Bucket misbehaves. The zero value is a
// perfect store with the default latency.
type BucketFaults struct {
	// LatencyMin and LatencyMax bound the uniformly drawn latency of each
	// leg of an operation (call to effect, effect to completion). Both
	// zero means 1–5 ms per leg. A Max below Min is treated as Min.
	LatencyMin, LatencyMax time.Duration

	// ErrorProbability is the chance that an operation fails without
	// taking effect; its error wraps env.ErrIO.
	ErrorProbability float64

	// AmbiguousProbability is the chance that an Upload or Delete takes
	// effect but reports an error anyway (a timeout after the store
	// applied it). Its error wraps env.ErrTimeout and ErrBucketApplied; for
	// reads it is an ordinary failure. Core must treat every Upload and
	// Delete error as ambiguous and can never tell the two apart
	// (ErrBucketApplied exists for the simulator's own tests and checkers).
	AmbiguousProbability float64

	// StaleListWindow makes listings eventually consistent: an object
	// uploaded, or deleted, less than this long before a List takes effect
	// is omitted, or still shown, each with probability one half.
	StaleListWindow time.Duration
}

// BucketStats counts what the Bucket did.
type BucketStats struct {
	Ops        uint64 // operations issued
	Failed     uint64 // injected failures without effect
	Ambiguous  uint64 // injected errors after the effect
	StaleLists uint64 // listings that omitted or added an object
}

// ErrBucketApplied marks an injected bucket error whose operation took
// effect regardless. Only the simulator's tests and checkers may look for
// it: production stores give no such hint.
var ErrBucketApplied = errors.New("operation applied despite the error")

func newBucket(s *Sim) *Bucket {
	return &Bucket{
		sim:        s,
		store:      objstore.NewInMemBucket(),
		uploadedAt: map[string]time.Duration{},
		deletedAt:  map[string]time.Duration{},
		rngs:       map[string]*rand.Rand{},
	}
}

// handle returns p's view of the bucket; its completions are scheduled on
// the incarnation that issued each operation.
func (b *Bucket) handle(p *Process) env.Bucket { return &bucketHandle{b: b, p: p, inc: p.inc} }

// SetFaults replaces the fault configuration; it applies to operations
// issued from now on.
func (b *Bucket) SetFaults(f BucketFaults) { b.faults = f }

// Faults returns the current fault configuration.
func (b *Bucket) Faults() BucketFaults { return b.faults }

// Stats returns the bucket's counters.
func (b *Bucket) Stats() BucketStats { return b.stats }

// Objects lists the names of the stored objects, sorted: the truth, not a
// (possibly stale) listing.
func (b *Bucket) Objects() []string {
	objs := b.store.Objects()
	names := make([]string, 0, len(objs))
	for name := range objs { // sorted below
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Object returns a copy of a stored object.
func (b *Bucket) Object(name string) ([]byte, bool) {
	data, ok := b.store.Objects()[name]
	if !ok {
		return nil, false
	}
	return append([]byte{}, data...), true
}

// rng is the randomness of the operations issued by one process: a stream
// per process keeps one node's bucket traffic from reshuffling another's.
func (b *Bucket) rng(p *Process) *rand.Rand {
	r := b.rngs[p.name]
	if r == nil {
		r = b.sim.Rand("bucket/" + p.name)
		b.rngs[p.name] = r
	}
	return r
}

func (b *Bucket) latency(r *rand.Rand) time.Duration {
	return drawLatency(r, b.faults.LatencyMin, b.faults.LatencyMax, defaultBucketLatencyMin, defaultBucketLatencyMax)
}

// drawLatency draws a latency uniformly from [lo, hi]: a negative lo
// counts as 0 and a hi below lo as lo, and the defaults [defLo, defHi]
// stand for a range with neither bound set (both at or below 0).
func drawLatency(r *rand.Rand, lo, hi, defLo, defHi time.Duration) time.Duration {
	if lo <= 0 && hi <= 0 {
		lo, hi = defLo, defHi
	}
	if lo < 0 {
		lo = 0
	}
	if hi < lo {
		hi = lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// outcome is the fate drawn for one operation when it is issued.
type outcome int

const (
	outcomeOK        outcome = iota
	outcomeFail              // no effect, error
	outcomeAmbiguous         // effect, error
)

// op runs one operation: effect after the request latency (unless it
// fails), completion after the response latency on the issuing
// incarnation. effect acts on the store and returns the completion to
// deliver; fail turns an injected error into the completion instead.
func (b *Bucket) op(h *bucketHandle, kind, name string, mutates bool, effect func(r *rand.Rand) func(), fail func(error) func()) {
	p, inc := h.p, h.inc
	if !p.up || p.inc != inc {
		return // a handle of an ended incarnation: no code of it can be waiting
	}
	b.stats.Ops++
	r := b.rng(p)
	reqLat, respLat := b.latency(r), b.latency(r)
	fate := outcomeOK
	if u := r.Float64(); u < b.faults.ErrorProbability {
		fate = outcomeFail
	} else if u < b.faults.ErrorProbability+b.faults.AmbiguousProbability {
		fate = outcomeAmbiguous
		if !mutates {
			fate = outcomeFail // for a read, an effect nobody sees is no effect
		}
	}
	label := "bucket:" + kind + ":" + p.name + ":" + name
	b.sim.schedule(nil, reqLat, label, func() {
		var complete func()
		switch fate {
		case outcomeFail:
			b.stats.Failed++
			b.sim.Fault("bucket-error", kind+" "+name)
			complete = fail(fmt.Errorf("sim bucket: %s %q: injected failure: %w", kind, name, env.ErrIO))
		case outcomeAmbiguous:
			effect(r) // takes effect; its completion is replaced by the error
			b.stats.Ambiguous++
			b.sim.Fault("bucket-ambiguous", kind+" "+name)
			complete = fail(fmt.Errorf("sim bucket: %s %q: injected timeout after the store applied it: %w (%w)",
				kind, name, env.ErrTimeout, ErrBucketApplied))
		default:
			complete = effect(r)
		}
		// The completion belongs to the incarnation that issued the op,
		// while schedule stamps the owner's current one: drop it here if
		// the process restarted meanwhile. (If it is merely down, the
		// kernel drops the event at delivery.)
		if p.inc != inc {
			return
		}
		b.sim.schedule(p, respLat, p.label("bucket-done:"+kind), complete)
	})
}

// bucketHandle is one process's env.Bucket.
type bucketHandle struct {
	b   *Bucket
	p   *Process
	inc uint64 // the incarnation the handle belongs to
}

var _ env.Bucket = (*bucketHandle)(nil)

func errDone(done func(error)) func(error) func() {
	return func(err error) func() { return func() { done(err) } }
}

func errData(done func([]byte, error)) func(error) func() {
	return func(err error) func() { return func() { done(nil, err) } }
}

func (h *bucketHandle) Upload(name string, data []byte, done func(error)) {
	b := h.b
	b.op(h, "upload", name, true, func(*rand.Rand) func() {
		// objstore copies the reader's bytes; the caller gave up data.
		if err := b.store.Upload(context.Background(), name, bytes.NewReader(data)); err != nil {
			return func() { done(fmt.Errorf("sim bucket: upload %q: %w", name, err)) }
		}
		if b.faults.StaleListWindow > 0 {
			b.uploadedAt[name] = b.sim.now
		}
		delete(b.deletedAt, name)
		return func() { done(nil) }
	}, errDone(done))
}

func (h *bucketHandle) Get(name string, done func([]byte, error)) {
	b := h.b
	b.op(h, "get", name, false, func(*rand.Rand) func() {
		data, err := b.read(name, func() (io.ReadCloser, error) { return b.store.Get(context.Background(), name) })
		return func() { done(data, err) }
	}, errData(done))
}

func (h *bucketHandle) GetRange(name string, off, length int64, done func([]byte, error)) {
	b := h.b
	if off < 0 || length < 0 {
		if !h.p.up || h.p.inc != h.inc {
			return
		}
		// A caller bug, reported at once (on the loop, never inline).
		err := fmt.Errorf("sim bucket: get %q range %d+%d: negative offset or length: %w", name, off, length, errInvalid)
		b.sim.schedule(h.p, 0, h.p.label("bucket-done:getrange"), func() { done(nil, err) })
		return
	}
	b.op(h, "getrange", name, false, func(*rand.Rand) func() {
		data, err := b.read(name, func() (io.ReadCloser, error) {
			if length == 0 {
				// objstore rejects an empty range; S3 returns nothing.
				if ok, _ := b.store.Exists(context.Background(), name); !ok {
					return b.store.Get(context.Background(), name) // the not-found error
				}
				return io.NopCloser(bytes.NewReader(nil)), nil
			}
			return b.store.GetRange(context.Background(), name, off, length)
		})
		return func() { done(data, err) }
	}, errData(done))
}

// read runs an objstore read and maps its not-found error to env.ErrNotExist.
func (b *Bucket) read(name string, get func() (io.ReadCloser, error)) ([]byte, error) {
	rc, err := get()
	if err != nil {
		if b.store.IsObjNotFoundErr(err) {
			return nil, fmt.Errorf("sim bucket: get %q: %w", name, env.ErrNotExist)
		}
		return nil, fmt.Errorf("sim bucket: get %q: %w", name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("sim bucket: get %q: %w", name, err)
	}
	return data, nil
}

func (h *bucketHandle) Delete(name string, done func(error)) {
	b := h.b
	b.op(h, "delete", name, true, func(*rand.Rand) func() {
		// objstore's Delete fails for a missing object; env's succeeds.
		if ok, _ := b.store.Exists(context.Background(), name); ok {
			if err := b.store.Delete(context.Background(), name); err != nil {
				return func() { done(fmt.Errorf("sim bucket: delete %q: %w", name, err)) }
			}
			if b.faults.StaleListWindow > 0 {
				b.deletedAt[name] = b.sim.now
			}
		}
		delete(b.uploadedAt, name)
		return func() { done(nil) }
	}, errDone(done))
}

// List treats prefix as a directory, as objstore's S3 and filesystem
// buckets do: "a" and "a/" both list the objects under "a/", and "" lists
// everything.
func (h *bucketHandle) List(prefix string, done func([]string, error)) {
	b := h.b
	b.op(h, "list", prefix, false, func(r *rand.Rand) func() {
		dir := prefix
		if dir != "" && !strings.HasSuffix(dir, objstore.DirDelim) {
			dir += objstore.DirDelim
		}
		var names []string
		err := b.store.Iter(context.Background(), dir, func(name string) error {
			names = append(names, name)
			return nil
		}, objstore.WithRecursiveIter())
		if err != nil {
			err = fmt.Errorf("sim bucket: list %q: %w", prefix, err)
			return func() { done(nil, err) }
		}
		names = b.stale(r, dir, names)
		return func() { done(names, nil) }
	}, func(err error) func() { return func() { done(nil, err) } })
}

// stale applies eventual consistency to a listing of dir: recent uploads
// may be missing and recent deletes may still show. It returns the names
// sorted.
func (b *Bucket) stale(r *rand.Rand, dir string, names []string) []string {
	window := b.faults.StaleListWindow
	if window <= 0 {
		return names
	}
	now := b.sim.now
	changed := false
	kept := names[:0]
	for _, name := range names {
		if at, ok := b.uploadedAt[name]; ok && now-at < window && r.Float64() < staleListOmitProbability {
			changed = true
			continue
		}
		kept = append(kept, name)
	}
	for _, name := range sortedKeys(b.deletedAt) {
		at := b.deletedAt[name]
		if now-at >= window {
			delete(b.deletedAt, name)
			continue
		}
		if strings.HasPrefix(name, dir) && r.Float64() < staleListOmitProbability {
			kept = append(kept, name)
			changed = true
		}
	}
	for _, name := range sortedKeys(b.uploadedAt) {
		if now-b.uploadedAt[name] >= window {
			delete(b.uploadedAt, name)
		}
	}
	if changed {
		b.stats.StaleLists++
		b.sim.Fault("bucket-stale-list", dir)
	}
	sort.Strings(kept)
	return kept
}

func sortedKeys(m map[string]time.Duration) []string {
	keys := make([]string, 0, len(m))
	for k := range m { // sorted below
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
