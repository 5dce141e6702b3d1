package node

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
)

type bucketResult struct {
	data  []byte
	names []string
	err   error
}

func newTestBucket(t *testing.T) (*Bucket, *Loop, string) {
	t.Helper()
	l := startLoop(t)
	dir := filepath.Join(t.TempDir(), "objects")
	b, err := NewFilesystemBucket(dir, l, 0)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.close()) })
	return b, l, dir
}

// call runs one bucket operation from the loop and waits for its
// completion, which must arrive on the loop.
func call(t *testing.T, l *Loop, op func(done func(bucketResult))) bucketResult {
	t.Helper()
	res := make(chan bucketResult, 1)
	onLoop(t, l, func() { op(func(r bucketResult) { res <- r }) })
	return waitFor(t, res, "bucket op")
}

func upload(t *testing.T, l *Loop, b *Bucket, name, data string) error {
	return call(t, l, func(done func(bucketResult)) {
		b.Upload(name, []byte(data), func(err error) { done(bucketResult{err: err}) })
	}).err
}

func get(t *testing.T, l *Loop, b *Bucket, name string) bucketResult {
	return call(t, l, func(done func(bucketResult)) {
		b.Get(name, func(d []byte, err error) { done(bucketResult{data: d, err: err}) })
	})
}

func getRange(t *testing.T, l *Loop, b *Bucket, name string, off, length int64) bucketResult {
	return call(t, l, func(done func(bucketResult)) {
		b.GetRange(name, off, length, func(d []byte, err error) { done(bucketResult{data: d, err: err}) })
	})
}

func list(t *testing.T, l *Loop, b *Bucket, prefix string) bucketResult {
	return call(t, l, func(done func(bucketResult)) {
		b.List(prefix, func(n []string, err error) { done(bucketResult{names: n, err: err}) })
	})
}

func del(t *testing.T, l *Loop, b *Bucket, name string) error {
	return call(t, l, func(done func(bucketResult)) {
		b.Delete(name, func(err error) { done(bucketResult{err: err}) })
	}).err
}

func TestBucketFilesystem(t *testing.T) {
	b, l, dir := newTestBucket(t)
	require.NoError(t, upload(t, l, b, "topic/0/00000000000000000000.log", "segment bytes"))
	require.NoError(t, upload(t, l, b, "topic/0/00000000000000000100.log", "more"))
	require.NoError(t, upload(t, l, b, "topic/1/00000000000000000000.log", "p1"))
	require.NoError(t, upload(t, l, b, "other", "x"))

	// Objects are plain files under the directory.
	raw, err := os.ReadFile(filepath.Join(dir, "topic", "0", "00000000000000000000.log"))
	require.NoError(t, err)
	require.Equal(t, "segment bytes", string(raw))

	r := get(t, l, b, "topic/0/00000000000000000000.log")
	require.NoError(t, r.err)
	require.Equal(t, "segment bytes", string(r.data))

	r = getRange(t, l, b, "topic/0/00000000000000000000.log", 8, 5)
	require.NoError(t, r.err)
	require.Equal(t, "bytes", string(r.data))
	r = getRange(t, l, b, "topic/0/00000000000000000000.log", 8, 100) // fewer at the end
	require.NoError(t, r.err)
	require.Equal(t, "bytes", string(r.data))
	r = getRange(t, l, b, "topic/0/00000000000000000000.log", 3, 0)
	require.NoError(t, r.err)
	require.Empty(t, r.data)

	r = list(t, l, b, "")
	require.NoError(t, r.err)
	require.Equal(t, []string{"other", "topic/0/00000000000000000000.log",
		"topic/0/00000000000000000100.log", "topic/1/00000000000000000000.log"}, r.names)
	r = list(t, l, b, "topic/0/")
	require.NoError(t, r.err)
	require.Equal(t, []string{"topic/0/00000000000000000000.log", "topic/0/00000000000000000100.log"}, r.names)
	// A prefix is a string prefix, not only a directory.
	r = list(t, l, b, "topic/0/000000000000000001")
	require.NoError(t, r.err)
	require.Equal(t, []string{"topic/0/00000000000000000100.log"}, r.names)
	r = list(t, l, b, "nothing/")
	require.NoError(t, r.err)
	require.Empty(t, r.names)

	// Upload replaces.
	require.NoError(t, upload(t, l, b, "other", "y"))
	require.Equal(t, "y", string(get(t, l, b, "other").data))

	require.NoError(t, del(t, l, b, "other"))
	require.NoError(t, del(t, l, b, "other"), "deleting a missing object succeeds")
}

func TestBucketMissingObject(t *testing.T) {
	b, l, _ := newTestBucket(t)
	r := get(t, l, b, "missing")
	require.ErrorIs(t, r.err, env.ErrNotExist)
	require.Contains(t, r.err.Error(), "missing")
	r = getRange(t, l, b, "missing", 0, 10)
	require.ErrorIs(t, r.err, env.ErrNotExist)
	r = getRange(t, l, b, "missing", 0, 0)
	require.ErrorIs(t, r.err, env.ErrNotExist)
}

func TestBucketRejectsBadNames(t *testing.T) {
	b, l, _ := newTestBucket(t)
	for _, name := range []string{"", "/abs", "../escape", "a/../../b", "dir/"} {
		require.ErrorIs(t, upload(t, l, b, name, "x"), ErrInvalidPath, "Upload(%q)", name)
		require.ErrorIs(t, get(t, l, b, name).err, ErrInvalidPath, "Get(%q)", name)
		require.ErrorIs(t, del(t, l, b, name), ErrInvalidPath, "Delete(%q)", name)
	}
	require.ErrorIs(t, getRange(t, l, b, "ok", -1, 3).err, ErrInvalidPath)
	require.ErrorIs(t, list(t, l, b, "../").err, ErrInvalidPath)
}
