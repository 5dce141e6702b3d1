// Package node is Strata's production runtime: it runs one whole server
// of the deterministic core (core/server: quorum member, controller,
// broker and partitions) on a real event loop with real time, files, TCP
// sockets and an object store.
//
// It owns everything that blocks or runs concurrently: the Loop goroutine
// that owns core state, socket reader and writer goroutines, the off-loop
// workers that run fdatasync and object-store calls, startup and shutdown
// (Start, Run, Shutdown; signals are cmd/strata's business),
// the process's own config rows (keys.go: listeners, sockets, workers,
// the metrics endpoint; the broker keys are core/server's rows), and the
// meta.properties file that ties a data
// directory to one cluster and one node, with the bootstrap records
// `strata storage format` leaves beside it for the first controller
// (format.go).
//
// # What it must never do
//
//   - Call into core from any goroutine but the loop's: every completion,
//     accepted connection, received frame and timer is posted to the Loop,
//     which runs callbacks one at a time (the env loop contract).
//   - Run a callback inline inside the env call that registered it.
//   - Block the loop on I/O that can take long: fdatasync, directory fsync,
//     object-store calls, dials and socket writes run on helper goroutines.
//     File reads and writes are synchronous on the loop, as the env.Disk
//     contract says (they act on the page cache).
//   - Allocate on a peer's say-so: a frame's size prefix is checked against
//     socket.request.max.bytes before any buffer is allocated, and buffers
//     grow only as bytes actually arrive (netread.go).
//   - Change the semantics of core/env: this package implements them.
//
// # Bounds
//
// Every queue has a named bound with a documented default: frames read but
// not yet handled per connection (MaxQueuedFramesPerConn), response bytes
// queued for a socket before its reader pauses (WriteQueueHighWaterBytes),
// concurrent fdatasyncs (DefaultSyncConcurrency), concurrent object-store
// calls (DefaultBucketConcurrency), the frame size itself
// (socket.request.max.bytes), the bytes of frames being received on
// accepted connections (queued.max.request.bytes, shared) and how slowly a
// frame may arrive (strata.socket.request.read.timeout.ms and
// .min.bytes.per.sec). The Loop's own queue is unbounded on purpose:
// Post must never block or fail, or a callback that posts could deadlock
// the loop; what feeds it is bounded by the limits above.
package node
