package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/filesystem"

	"github.com/strata-log/strata/core/env"
)

// DefaultBucketConcurrency bounds object-store calls in flight. Tiered
// uploads are large and few; 8 keeps a remote store's pipe busy without
// letting a backlog of uploads hold hundreds of segments in memory.
const DefaultBucketConcurrency = 8

// Bucket is env.Bucket over a thanos-io/objstore bucket. Every call runs on
// a helper goroutine and posts its completion to the loop.
type Bucket struct {
	bkt     objstore.Bucket
	loop    *Loop
	workers *offLoop
	ctx     context.Context // cancelled by close: aborts calls in flight
	cancel  context.CancelFunc
}

var _ env.Bucket = (*Bucket)(nil)

// NewFilesystemBucket returns a Bucket storing objects as files under dir
// (objstore's filesystem provider), creating dir if needed.
// concurrency <= 0 means DefaultBucketConcurrency.
func NewFilesystemBucket(dir string, loop *Loop, concurrency int) (*Bucket, error) {
	bkt, err := filesystem.NewBucket(dir)
	if err != nil {
		return nil, fmt.Errorf("filesystem bucket %s: %w", dir, err)
	}
	if err := mkdirAll(dir); err != nil {
		return nil, fmt.Errorf("filesystem bucket: %w", err)
	}
	return NewBucket(bkt, loop, concurrency), nil
}

// NewBucket wraps any objstore bucket (S3, GCS, Azure, in-memory).
// concurrency <= 0 means DefaultBucketConcurrency.
func NewBucket(bkt objstore.Bucket, loop *Loop, concurrency int) *Bucket {
	if concurrency <= 0 {
		concurrency = DefaultBucketConcurrency
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Bucket{bkt: bkt, loop: loop, workers: newOffLoop(concurrency), ctx: ctx, cancel: cancel}
}

// close aborts calls in flight, waits for their goroutines and closes the
// underlying bucket.
func (b *Bucket) close() error {
	b.cancel()
	b.workers.Wait()
	return b.bkt.Close()
}

// objectName validates an object name: relative, no "..", not a directory.
func objectName(name string) error {
	if strings.HasSuffix(name, "/") {
		return fmt.Errorf("%w: object name %q ends with /", ErrInvalidPath, name)
	}
	_, err := cleanName(name, false)
	return err
}

// bucketErr maps "object not found" to env.ErrNotExist, keeping the store's
// own error text.
func (b *Bucket) bucketErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	if b.bkt.IsObjNotFoundErr(err) {
		return fmt.Errorf("bucket %s %q: %w: %w", op, name, env.ErrNotExist, err)
	}
	return fmt.Errorf("bucket %s %q: %w", op, name, err)
}

// Upload implements env.Bucket.
func (b *Bucket) Upload(name string, data []byte, done func(error)) {
	if err := objectName(name); err != nil {
		b.loop.Post(func() { done(fmt.Errorf("bucket upload: %w", err)) })
		return
	}
	b.workers.Go(func() {
		err := b.bkt.Upload(b.ctx, name, bytes.NewReader(data))
		err = b.bucketErr("upload", name, err)
		b.loop.Post(func() { done(err) })
	})
}

// Get implements env.Bucket.
func (b *Bucket) Get(name string, done func([]byte, error)) {
	if err := objectName(name); err != nil {
		b.loop.Post(func() { done(nil, fmt.Errorf("bucket get: %w", err)) })
		return
	}
	b.workers.Go(func() {
		data, err := b.read(b.bkt.Get(b.ctx, name))
		err = b.bucketErr("get", name, err)
		b.loop.Post(func() { done(data, err) })
	})
}

// GetRange implements env.Bucket.
func (b *Bucket) GetRange(name string, off, length int64, done func([]byte, error)) {
	err := objectName(name)
	if err == nil && (off < 0 || length < 0) {
		err = fmt.Errorf("%w: negative range off=%d length=%d", ErrInvalidPath, off, length)
	}
	if err != nil {
		b.loop.Post(func() { done(nil, fmt.Errorf("bucket get range: %w", err)) })
		return
	}
	b.workers.Go(func() {
		var data []byte
		var err error
		if length == 0 {
			// objstore reads length -1 as "to the end"; zero bytes is
			// zero bytes, but the object must still exist.
			_, err = b.bkt.Attributes(b.ctx, name)
			data = []byte{}
		} else {
			data, err = b.read(b.bkt.GetRange(b.ctx, name, off, length))
		}
		err = b.bucketErr("get range", name, err)
		b.loop.Post(func() { done(data, err) })
	})
}

func (b *Bucket) read(rc io.ReadCloser, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return data, nil
}

// Delete implements env.Bucket. Deleting a missing object succeeds.
func (b *Bucket) Delete(name string, done func(error)) {
	if err := objectName(name); err != nil {
		b.loop.Post(func() { done(fmt.Errorf("bucket delete: %w", err)) })
		return
	}
	b.workers.Go(func() {
		err := b.bkt.Delete(b.ctx, name)
		if err != nil && b.bkt.IsObjNotFoundErr(err) {
			err = nil
		}
		err = b.bucketErr("delete", name, err)
		b.loop.Post(func() { done(err) })
	})
}

// List implements env.Bucket. prefix is a plain string prefix of object
// names (as in S3), not only a directory: the listing walks the directory
// part of prefix recursively and keeps the names that start with prefix.
func (b *Bucket) List(prefix string, done func([]string, error)) {
	if prefix != "" {
		if _, err := cleanName(strings.TrimSuffix(prefix, "/"), true); err != nil {
			b.loop.Post(func() { done(nil, fmt.Errorf("bucket list: %w", err)) })
			return
		}
	}
	dir := prefix[:strings.LastIndexByte(prefix, '/')+1]
	b.workers.Go(func() {
		var names []string
		err := b.bkt.Iter(b.ctx, dir, func(name string) error {
			if strings.HasPrefix(name, prefix) && !strings.HasSuffix(name, "/") {
				names = append(names, name)
			}
			return nil
		}, objstore.WithRecursiveIter())
		if err != nil {
			names = nil
			err = fmt.Errorf("bucket list %q: %w", prefix, err)
		}
		slices.Sort(names)
		b.loop.Post(func() { done(names, err) })
	})
}
