// Package interop holds Strata's interoperability tests: real Kafka
// clients, unchanged, against real Strata nodes on free 127.0.0.1 ports.
// It has no code of its own outside its tests.
//
// What it owns: the proof that existing clients use Strata as they use
// Kafka. Each test starts nodes (in process with node.Start, or as child
// processes of the test binary where a test kills one with SIGKILL),
// drives a client through produce, consume, offsets and admin requests,
// and compares what it reads back with what it wrote byte for byte: keys
// (null and empty apart where the client tells them apart), values,
// headers in order, timestamps, partitions and offsets.
//
// The clients and what each test covers:
//
//   - franz_test.go: franz-go kgo and kadm (every compression with acks 0,
//     1 and all, idempotent or not; consuming from earliest, latest, an
//     offset and a timestamp; ListOffsets; topic administration; a
//     restart that keeps every acknowledged record).
//   - cluster_test.go: three combined broker+controller processes (the
//     README's recipe): partitions spread over the brokers, kgo routes to
//     leaders, and after a SIGKILL of one process the others keep serving
//     their partitions; the killed node comes back with its data.
//   - sarama_test.go: IBM/sarama's sync and async producers and partition
//     consumer, at a recent Kafka version and at sarama's default.
//   - kafkago_test.go: segmentio/kafka-go's Writer, partition Reader and
//     Conn.
//   - librdkafka_test.go: librdkafka through Debian's kcat and
//     python3-confluent-kafka (testdata/confluent_interop.py). These skip,
//     saying why, where the program or module is missing, and fail instead
//     when CI=true, where .ci/run installs them.
//
// What it must never do: listen or dial anywhere but 127.0.0.1, run
// unbounded (every client call and wait has a deadline, and a child node
// exits when the test binary dies), or weaken a check to get a client
// through: a client that fails against Strata is a Strata bug until
// proven otherwise.
package interop
