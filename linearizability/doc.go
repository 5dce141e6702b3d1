// Package linearizability records what clients observed during a run and
// decides whether those observations are consistent with a sequential
// specification.
//
// # What it owns
//
//   - Histories: a [History] records each client operation with the virtual
//     time it was invoked and the virtual time its response arrived, or notes
//     that the response never came ([History.Fail], [History.Timeout]). An
//     operation whose outcome is unknown may have taken effect at any instant
//     after its call, so it is exported with a return time of [UnknownReturn]
//     (plus infinity) and an [Unknown] output.
//   - Models: sequential specifications in porcupine's terms. [KVModel]
//     specifies a map from string keys to string values with Put, Get,
//     Delete and CreateIfAbsent; it is the model for topic administration
//     (CreateTopics, DeleteTopics, Metadata and Describe reads).
//     [PartitionLogModel] specifies each partition as an append-only log:
//     an Append returns the offset its value was given, a Read at an
//     offset returns the record there or nothing yet; it is partitioned
//     by partition, and a [LogOps] records its operations.
//   - Checkers: [Check] runs porcupine's linearizability search over a
//     history, within [Limits], and [Visualize] writes porcupine's HTML
//     picture of a failing history to an [io.Writer]. Check does not hand
//     porcupine unknown outcomes as operations open until infinity, which
//     makes refuting a history exponential in their number; it arms each as
//     an effect that may fire before any later operation, an equivalent
//     encoding (see unknown.go) whose cost for KVModel grows with the square
//     of their number per key rather than exponentially. [CheckLog] checks
//     a LogOps against PartitionLogModel with an encoding of its own:
//     an unknown append whose value was read becomes an append at the
//     offset read, one never read an anonymous record that may take an
//     offset no operation names; 200 unknown appends to one partition
//     check in milliseconds (see [CheckLog] and logops.go).
//   - Log histories: a [LogHistory] records a produce/consume workload
//     against Kafka-style partitions (every produce build and send
//     outcome, every record read, every high watermark a reader is told)
//     and checks each observation as it arrives: durability of
//     acknowledged records, one value per offset, no phantom values, no
//     value at two offsets (no batch written twice) and dense, increasing
//     offsets per reader session, the Jepsen Kafka anomalies of lost,
//     duplicated and reordered records. Those checks stop at the first
//     violation; [LogHistory.Anomalies] analyses everything recorded,
//     which is kept as it arrived, and reports each Jepsen class
//     separately in an [AnomalyReport] (lost, duplicate,
//     inconsistent-offsets, poll-skip, nonmonotonic-poll,
//     nonmonotonic-send, unseen, read-past-hw) with counts and the first
//     few examples of each.
//
// Later this package will also hold exactly-once checkers for
// transactional producers and read_committed consumers.
//
// # What it never does
//
// It never talks to a node, a cluster or the simulator: callers feed it
// observations and read back verdicts. It never reads the wall clock, sleeps,
// opens files or sockets, or starts goroutines of its own; its source obeys
// the deterministic-core rules enforced by the repository's determinism
// guard. (porcupine runs one goroutine per partition internally; the verdict
// does not depend on their scheduling.) It never uses porcupine's
// wall-clock timeouts: a search is bounded by the size of the history
// instead, so one seed and one commit always give one verdict. Writing the
// HTML visualisation to a file is the caller's job.
//
// # Invariants
//
//   - An operation's return time is never before its call time, and an
//     operation completes at most once; violating either is a bug in the
//     caller and panics.
//   - The same history always yields the same [Result], including the bytes
//     written by [Visualize], and the same [AnomalyReport].
//
// A History, a LogOps and a LogHistory are not safe for concurrent use;
// the simulator drives them from its single event loop.
package linearizability
