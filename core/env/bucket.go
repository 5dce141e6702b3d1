package env

// Bucket is an asynchronous object store (S3, GCS, Azure, a filesystem
// directory, or the simulator's in-memory bucket). Every completion runs on
// the loop.
//
// # Failure model
//
//   - An object is immutable once written: Upload of an existing name
//     replaces it whole, and a reader sees either the old or the new object.
//     (objstore's filesystem bucket is not atomic; package tier never
//     overwrites and counts an object only once its metadata is committed.)
//   - An error from Upload or Delete is ambiguous: the operation may or may
//     not have taken effect (a timeout after the store applied it). Callers
//     must retry idempotently and must not infer absence from a failure.
//   - A Get of a missing object fails with an error wrapping ErrNotExist.
//   - Listings are not a source of truth: they may omit recent uploads or
//     show recent deletes. Strata replicates what exists in its metadata log.
type Bucket interface {
	// Upload stores data under name. The bucket owns data from now on.
	Upload(name string, data []byte, done func(error))

	// Get reads a whole object.
	Get(name string, done func(data []byte, err error))

	// GetRange reads length bytes at off of an object (fewer at its end).
	GetRange(name string, off, length int64, done func(data []byte, err error))

	// Delete removes an object. Deleting a missing object succeeds.
	Delete(name string, done func(error))

	// List returns the object names under prefix (recursively), sorted.
	List(prefix string, done func(names []string, err error))
}
