package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-log/strata/core/config"
)

// cliTestTimeout bounds one command run by a test, and each wait of the
// client command tests.
const cliTestTimeout = 20 * time.Second

// startKfake runs kfake, franz-go's in-memory Kafka, for the test and
// returns its address. kfake accepts any topic config key, where Kafka
// and Strata answer INVALID_CONFIG for one they do not know: the cluster
// is told to answer so for keys outside Strata's table, so that the same
// tests hold against kfake and a Strata node.
func startKfake(t *testing.T) string {
	t.Helper()
	c, addr, err := newFakeKafka()
	require.NoError(t, err)
	t.Cleanup(c.Close)
	rejectUnknownTopicConfigs(c)
	return addr
}

// rejectUnknownTopicConfigs makes c answer CreateTopics and
// IncrementalAlterConfigs requests whose every topic carries a config key
// Strata does not know with INVALID_CONFIG, as Kafka does.
func rejectUnknownTopicConfigs(c *kfake.Cluster) {
	c.ControlKey(kmsg.IncrementalAlterConfigs.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, r := range req.Resources {
			bad := unknownTopicConfig(r.Configs, func(c kmsg.IncrementalAlterConfigsRequestResourceConfig) string { return c.Name })
			if r.ResourceType != kmsg.ConfigResourceTypeTopic || bad == "" {
				return nil, nil, false
			}
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.ResourceType, r.ResourceName, kerr.InvalidConfig.Code
			rr.ErrorMessage = kmsg.StringPtr("Unknown topic config name: " + bad)
			resp.Resources = append(resp.Resources, rr)
		}
		c.KeepControl()
		return resp, nil, true
	})
	c.ControlKey(kmsg.CreateTopics.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.CreateTopicsRequest)
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range req.Topics {
			bad := unknownTopicConfig(rt.Configs, func(c kmsg.CreateTopicsRequestTopicConfig) string { return c.Name })
			if bad == "" {
				return nil, nil, false
			}
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode = rt.Topic, kerr.InvalidConfig.Code
			st.ErrorMessage = kmsg.StringPtr("Unknown topic config name: " + bad)
			resp.Topics = append(resp.Topics, st)
		}
		c.KeepControl()
		return resp, nil, true
	})
}

// unknownTopicConfig is the first of configs whose name (by name) is no
// topic config key Strata knows, or "".
func unknownTopicConfig[C any](configs []C, name func(C) string) string {
	for _, c := range configs {
		if _, ok := config.TopicRow(name(c)); !ok {
			return name(c)
		}
	}
	return ""
}

// TestCLIKfake runs the client commands against kfake.
func TestCLIKfake(t *testing.T) {
	testCLI(t, startKfake(t))
}

// TestCLIBrokerWithoutDataPath runs the commands against a broker that,
// like Strata before Produce and Fetch, lists neither in ApiVersions:
// each names what it misses, at once, instead of retrying (franz-go sends
// such a broker anything, and the broker closes the connection).
func TestCLIBrokerWithoutDataPath(t *testing.T) {
	vs := kversion.Stable()
	missing := []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.InitProducerID, kmsg.DescribeConfigs, kmsg.IncrementalAlterConfigs}
	for _, k := range missing {
		vs.SetMaxKeyVersion(k.Int16(), -1)
	}
	c, addr, err := newFakeKafka(kfake.MaxVersions(vs))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	r := cliRunner{t: t, addr: addr}
	topic := topicName(t, "t")
	r.ok("", "topic", "create", topic, "--partitions", "2")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "--topic", topic}, "does not offer Produce, InitProducerID"},
		{[]string{"produce", "--topic", topic, "--acks", "1"}, "does not offer Produce ("},
		{[]string{"consume", "--topic", topic}, "does not offer Fetch, ListOffsets"},
		{[]string{"offsets", "--topic", topic}, "does not offer ListOffsets"},
		{[]string{"topic", "describe", topic}, "does not offer DescribeConfigs"},
		{[]string{"topic", "alter", topic, "--config", "retention.ms=1"}, "does not offer IncrementalAlterConfigs"},
	} {
		start := time.Now()
		code, out, errOut := r.runIn(strings.NewReader("x\n"), tc.args...)
		require.Equal(t, exitError, code, "%q", tc.args)
		require.Contains(t, errOut, tc.want, "%q", tc.args)
		require.Less(t, time.Since(start), 5*time.Second, "%q", tc.args)
		if tc.args[1] == "describe" {
			require.Contains(t, out, "PartitionCount: 2", "describe still prints what Metadata gave")
		}
	}
}

// cliRunner runs the client commands in process against one broker.
type cliRunner struct {
	t    *testing.T
	addr string
}

// clientCommands are the commands that talk to a cluster; each is run in
// process through its registered streams entry point.
var clientCommands = []string{"topic", "produce", "consume", "offsets", "group", "txn"}

// runIn runs `strata <args>` with --bootstrap-server appended, stdin as
// its input, bounded by cliTestTimeout, and returns the exit code,
// stdout and stderr.
func (r cliRunner) runIn(stdin io.Reader, args ...string) (int, string, string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTestTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	code := commands[args[0]].streams(ctx, append(args[1:], "--bootstrap-server", r.addr), stdin, &out, &errOut)
	require.NoError(r.t, ctx.Err(), "strata %q did not finish within %v", args, cliTestTimeout)
	return code, out.String(), errOut.String()
}

func (r cliRunner) run(args ...string) (int, string, string) {
	r.t.Helper()
	return r.runIn(strings.NewReader(""), args...)
}

// ok runs a command that must exit 0 and returns its stdout.
func (r cliRunner) ok(stdin string, args ...string) string {
	r.t.Helper()
	code, out, errOut := r.runIn(strings.NewReader(stdin), args...)
	require.Equal(r.t, exitOK, code, "strata %q: %s", args, errOut)
	return out
}

// topicName is a topic name unique to the test: the tests run against
// brokers that keep their topics.
func topicName(t *testing.T, suffix string) string {
	name := regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-")
	return fmt.Sprintf("%s-%s-%d", strings.ToLower(name), suffix, time.Now().UnixNano()%1_000_000)
}

// topicWithRecords creates a topic named for the test with suffix, of
// partitions partitions, and produces records, one a line, to its
// partition 0.
func (r cliRunner) topicWithRecords(suffix string, partitions int, records string) string {
	r.t.Helper()
	topic := topicName(r.t, suffix)
	r.ok("", "topic", "create", topic, "--partitions", strconv.Itoa(partitions))
	r.ok(records, "produce", "--topic", topic, "--partition", "0")
	return topic
}

// testCLI checks the client commands (topic, produce, consume, offsets)
// against the broker at addr, which may be kfake or a Strata node.
func testCLI(t *testing.T, addr string) {
	for _, tc := range []struct {
		name string
		test func(cliRunner)
	}{
		{"topic lifecycle", testTopicLifecycle},
		{"round trip per compression", testRoundTrip},
		{"keys spread over partitions", testKeyedPartitions},
		{"offsets and consume positions", testPositions},
		{"produce streams", testProduceStreams},
		{"broker errors", testBrokerErrors},
		{"usage errors", testUsageErrors},
		{"consume stops on SIGINT", testConsumeInterrupt},
		{"consumer groups", testGroups},
		{"consumer-protocol groups", testConsumerProtocolGroup},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(cliRunner{t: t, addr: addr}) })
	}
}

// describeLines are describe's lines about topic.
func describeLines(r cliRunner, topic string) (header string, partitions []string) {
	out := r.ok("", "topic", "describe", topic)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.NotEmpty(r.t, lines)
	return lines[0], lines[1:]
}

func testTopicLifecycle(r cliRunner) {
	t := r.t
	topic := topicName(t, "t")
	require.Equal(t, "Created topic "+topic+".\n",
		r.ok("", "topic", "create", topic, "--partitions", "3", "--config", "retention.ms=3600000", "--config", "max.message.bytes=2000000"))

	out := r.ok("", "topic", "list")
	require.Equal(t, []string{"TOPIC", "PARTITIONS", "REPLICATION-FACTOR"}, strings.Fields(strings.SplitN(out, "\n", 2)[0]))
	require.Regexp(t, `(?m)^`+topic+`\s+3\s+1\s*$`, out)
	out = r.ok("", "topic", "list", "--internal")
	require.Regexp(t, `(?m)^`+topic+`\s+3\s+1\s+false\s*$`, out)

	header, parts := describeLines(r, topic)
	require.Regexp(t, `^Topic: `+topic+`\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: `, header)
	require.Contains(t, header, "max.message.bytes=2000000,retention.ms=3600000", "the topic's own configs, sorted")
	require.NotContains(t, header, "cleanup.policy", "configs at their default are not listed")
	require.Len(t, parts, 3)
	for i, line := range parts {
		// Elr and LastKnownElr come from DescribeTopicPartitions, which
		// Strata answers (kfake does not).
		require.Regexp(t, fmt.Sprintf(`^\tTopic: %s\tPartition: %d\tLeader: \d+\tLeaderEpoch: \d+\tReplicas: \d+\tIsr: \d+(\tElr: \tLastKnownElr: )?\tOffline: $`, topic, i), line)
	}

	out = r.ok("", "topic", "alter", topic, "--config", "cleanup.policy=compact", "--delete-config", "retention.ms", "--partitions", "5")
	require.Equal(t, "Altered configs of topic "+topic+".\nTopic "+topic+" now has 5 partitions.\n", out)
	header, parts = describeLines(r, topic)
	require.Contains(t, header, "PartitionCount: 5")
	require.Contains(t, header, "cleanup.policy=compact")
	require.NotContains(t, header, "retention.ms")
	require.Len(t, parts, 5)

	code, _, errOut := r.run("topic", "create", topic)
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "TOPIC_ALREADY_EXISTS")

	code, _, errOut = r.run("topic", "alter", topic, "--partitions", "2")
	require.Equal(t, exitError, code, "partitions cannot shrink")
	require.Contains(t, errOut, "INVALID_PARTITIONS")

	other := topicName(t, "u")
	r.ok("", "topic", "create", other)
	require.Equal(t, "Deleted topic "+topic+".\nDeleted topic "+other+".\n", r.ok("", "topic", "delete", topic, other))
	require.Eventually(t, func() bool {
		return !strings.Contains(r.ok("", "topic", "list"), topic)
	}, cliTestTimeout, 20*time.Millisecond)
	code, _, errOut = r.run("topic", "delete", topic)
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "UNKNOWN_TOPIC_OR_PARTITION")
}

// roundTripLines are lines that must come back byte for byte: empty
// values and keys, a '\r', a second separator inside the value, tabs and
// multi-byte text.
func roundTripLines(n int) []string {
	lines := []string{"k0:", ":empty key", "k2:carriage\r", "k3:a:b:c", "k4:tab\there", "k5:žluťoučký kůň 🐎"}
	for i := len(lines); i < n; i++ {
		lines = append(lines, fmt.Sprintf("key-%d:value %d %s", i%7, i, strings.Repeat("x", i%50)))
	}
	return lines
}

func testRoundTrip(r cliRunner) {
	t := r.t
	lines := roundTripLines(200)
	input := strings.Join(lines, "\n") + "\n"
	keyBytes := 0
	for _, l := range lines {
		keyBytes += len(l) - 1 // the separator is not sent
	}
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		topic := topicName(t, codec)
		r.ok("", "topic", "create", topic)
		code, _, errOut := r.runIn(strings.NewReader(input), "produce", "--topic", topic, "--key-separator", ":",
			"--compression", codec, "--header", "source=cli-test", "--header", "codec="+codec)
		require.Equal(t, exitOK, code, errOut)
		require.Equal(t, fmt.Sprintf("strata produce: %d records, %d bytes, 1 partitions\n", len(lines), keyBytes), errOut)

		out := r.ok("", "consume", "--topic", topic, "--from-beginning", "--max-messages", strconv.Itoa(len(lines)),
			"--print-key", "--key-separator", ":", "--timeout", "10s")
		require.Equal(t, input, out, "codec %s", codec)

		// Headers, and the codec on the wire, through a client of our own.
		recs := fetchAll(t, r.addr, topic, len(lines))
		for i, rec := range recs {
			require.Equal(t, []kgo.RecordHeader{{Key: "source", Value: []byte("cli-test")}, {Key: "codec", Value: []byte(codec)}}, rec.Headers, "record %d", i)
		}
	}

	// Without --key-separator the whole line is the value and the key
	// is null.
	topic := topicName(t, "nokey")
	r.ok("", "topic", "create", topic)
	r.ok("a:b\n\nc\n", "produce", "--topic", topic, "--acks", "1")
	out := r.ok("", "consume", "--topic", topic, "--from-beginning", "--max-messages", "3", "--print-key")
	require.Equal(t, "null\ta:b\nnull\t\nnull\tc\n", out)
}

// fetchAll reads n records of topic from the start with a client of its
// own.
func fetchAll(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), cliTestTimeout)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d records", len(recs), n)
		require.NoError(t, fs.Err())
		recs = append(recs, fs.Records()...)
	}
	return recs
}

func testKeyedPartitions(r cliRunner) {
	t := r.t
	topic := topicName(t, "k")
	r.ok("", "topic", "create", topic, "--partitions", "3")
	var in []string
	for i := range 300 {
		in = append(in, fmt.Sprintf("key-%d=value-%d", i%10, i))
	}
	code, _, errOut := r.runIn(strings.NewReader(strings.Join(in, "\n")), "produce", "--topic", topic, "--key-separator", "=")
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, errOut, "300 records", "a last line without '\\n' is a record")
	require.Contains(t, errOut, "3 partitions")

	out := r.ok("", "consume", "--topic", topic, "--from-beginning", "--max-messages", "300", "--print-key", "--key-separator", "=", "--timeout", "10s")
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	slices.Sort(got)
	want := slices.Sorted(slices.Values(in))
	require.Equal(t, want, got)

	// The key picks the partition (Kafka's murmur2), so each key's
	// records are all in one partition, in the order produced.
	rows := strings.Split(strings.TrimSuffix(r.ok("", "offsets", "--topic", topic), "\n"), "\n")[1:]
	require.Len(t, rows, 3)
	partitionOf := map[string]string{}
	for _, row := range rows {
		f := strings.Fields(row)
		p, end := f[1], f[2]
		out := r.ok("", "consume", "--topic", topic, "--partition", p, "--from-beginning", "--max-messages", end,
			"--print-key", "--key-separator", "=", "--timeout", "10s")
		last := map[string]int{}
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			key, value, _ := strings.Cut(line, "=")
			if q, seen := partitionOf[key]; seen {
				require.Equal(t, p, q, "key %s in two partitions", key)
			}
			partitionOf[key] = p
			n, err := strconv.Atoi(strings.TrimPrefix(value, "value-"))
			require.NoError(t, err)
			require.Greater(t, n+1, last[key], "key %s out of order", key)
			last[key] = n + 1
		}
	}
	require.Len(t, partitionOf, 10)
}

func testPositions(r cliRunner) {
	t := r.t
	topic := topicName(t, "p")
	r.ok("", "topic", "create", topic, "--partitions", "2")
	var first, second []string
	for i := range 10 {
		first = append(first, fmt.Sprintf("early-%d", i))
		second = append(second, fmt.Sprintf("late-%d", i))
	}
	r.ok(strings.Join(first, "\n")+"\n", "produce", "--topic", topic, "--partition", "0")
	// Records are stamped when produced, in milliseconds: the second
	// batch is stamped at or after boundary, the first before it.
	boundary := time.Now().UnixMilli() + 1
	for time.Now().UnixMilli() <= boundary {
		time.Sleep(time.Millisecond)
	}
	r.ok(strings.Join(second, "\n")+"\n", "produce", "--topic", topic, "--partition", "0")

	offsets := func(args ...string) [][]string {
		out := r.ok("", append([]string{"offsets", "--topic", topic}, args...)...)
		var rows [][]string
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			rows = append(rows, strings.Fields(line))
		}
		require.Equal(t, []string{"TOPIC", "PARTITION", "OFFSET", "TIMESTAMP", "LEADER-EPOCH"}, rows[0])
		return rows[1:]
	}
	col := func(rows [][]string, i int) []string {
		var out []string
		for _, row := range rows {
			out = append(out, row[i])
		}
		return out
	}
	require.Equal(t, []string{"0", "0"}, col(offsets("--time", "earliest"), 2))
	require.Equal(t, []string{"20", "0"}, col(offsets(), 2), "latest is the default")
	require.Equal(t, [][]string{{topic, "0", "20"}}, func() [][]string {
		rows := offsets("--time", "latest", "--partition", "0")
		for i := range rows {
			rows[i] = rows[i][:3]
		}
		return rows
	}())
	// max-timestamp: the first record with the largest timestamp (the
	// second batch may share one millisecond); -1 for an empty partition.
	maxTS := offsets("--time", "max-timestamp")
	require.Equal(t, "-1", maxTS[1][2])
	at, err := strconv.Atoi(maxTS[0][2])
	require.NoError(t, err)
	require.GreaterOrEqual(t, at, 10)
	require.LessOrEqual(t, at, 19)
	ts, err := strconv.ParseInt(maxTS[0][3], 10, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, ts, boundary)
	require.Equal(t, []string{"10", "0"}, col(offsets("--time", strconv.FormatInt(boundary, 10)), 2),
		"the first record at or after the time; the end offset where there is none")

	consume := func(args ...string) []string {
		out := r.ok("", append([]string{"consume", "--topic", topic, "--timeout", "10s"}, args...)...)
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	require.Equal(t, second[5:], consume("--partition", "0", "--offset", "15", "--max-messages", "5"))
	require.Equal(t, second, consume("--offset-time", strconv.FormatInt(boundary, 10), "--max-messages", "10"))
	rfc := time.UnixMilli(boundary).UTC().Format(time.RFC3339Nano)
	require.Equal(t, second[:3], consume("--offset-time", rfc, "--max-messages", "3"))
	require.Equal(t, []string{"Partition:0,Offset:3,null,early-3"},
		consume("--partition", "0", "--offset", "3", "--max-messages", "1", "--print-offset", "--print-key", "--key-separator", ","))

	// The default start is the end: nothing old, then the idle timeout
	// ends the command cleanly.
	start := time.Now()
	code, out, errOut := r.run("consume", "--topic", topic, "--timeout", "300ms")
	require.Equal(t, exitOK, code, errOut)
	require.Empty(t, out)
	require.Contains(t, errOut, "Processed a total of 0 messages")
	require.Less(t, time.Since(start), 5*time.Second)
}

// blockingReader hands out lines and blocks between chunks until told to
// go on.
type blockingReader struct {
	chunks chan []byte
	cur    []byte
}

func (b *blockingReader) Read(p []byte) (int, error) {
	if len(b.cur) == 0 {
		c, ok := <-b.chunks
		if !ok {
			return 0, io.EOF
		}
		b.cur = c
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

// testProduceStreams checks that produce sends what it has read before
// stdin ends, so input of any size streams through.
func testProduceStreams(r cliRunner) {
	t := r.t
	topic := topicName(t, "s")
	r.ok("", "topic", "create", topic)
	in := &blockingReader{chunks: make(chan []byte)}
	var wg sync.WaitGroup
	var code int
	var errOut string
	wg.Add(1)
	go func() {
		defer wg.Done()
		code, _, errOut = r.runIn(in, "produce", "--topic", topic)
	}()
	send := func(b []byte) {
		select {
		case in.chunks <- b:
		case <-time.After(cliTestTimeout):
			require.FailNow(t, "produce stopped reading stdin")
		}
	}
	chunk := bytes.Repeat([]byte(strings.Repeat("s", 99)+"\n"), 1000)
	send(chunk)

	cl, err := kgo.NewClient(kgo.SeedBrokers(r.addr))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false
		}
		end, _ := ends.Lookup(topic, 0)
		return end.Offset == 1000
	}, cliTestTimeout, 10*time.Millisecond, "the first 1000 lines are delivered while stdin is still open")
	for range 20 {
		send(chunk)
	}
	close(in.chunks)
	wg.Wait()
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, "strata produce: 21000 records, 2079000 bytes, 1 partitions\n", errOut)
}

func testBrokerErrors(r cliRunner) {
	t := r.t
	missing := topicName(t, "missing")
	for _, args := range [][]string{
		{"consume", "--topic", missing},
		{"offsets", "--topic", missing},
		{"topic", "describe", missing},
		{"topic", "alter", missing, "--partitions", "3"},
	} {
		code, _, errOut := r.run(args...)
		require.Equal(t, exitError, code, "%q", args)
		require.Contains(t, errOut, "UNKNOWN_TOPIC_OR_PARTITION", "%q", args)
	}
	start := time.Now()
	code, _, errOut := r.runIn(strings.NewReader("a\nb\n"), "produce", "--topic", missing)
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "strata produce: 0 records, 0 bytes, 0 partitions; 2 records failed\n")
	require.Contains(t, errOut, "first error: UNKNOWN_TOPIC_OR_PARTITION")
	t.Logf("produce to a missing topic failed after %v", time.Since(start).Round(time.Millisecond))

	topic := topicName(t, "e")
	code, _, errOut = r.run("topic", "create", topic, "--config", "retention.weeks=2")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "INVALID_CONFIG")
	require.Contains(t, errOut, "retention.weeks")

	r.ok("", "topic", "create", topic)
	code, _, errOut = r.run("topic", "alter", topic, "--config", "retention.weeks=2")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "INVALID_CONFIG")

	code, _, errOut = r.run("consume", "--topic", topic, "--partition", "7")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "has no partition 7")
	require.Contains(t, errOut, "UNKNOWN_TOPIC_OR_PARTITION")
	code, _, errOut = r.run("offsets", "--topic", topic, "--partition", "7")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "UNKNOWN_TOPIC_OR_PARTITION")

	code, _, errOut = r.runIn(strings.NewReader("k:v\nno separator\n"), "produce", "--topic", topic, "--key-separator", ":")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "1 records,", "the lines before the bad one are delivered")
	require.Contains(t, errOut, `line 2 has no key separator ":"`)

	code, _, errOut = r.runIn(strings.NewReader(strings.Repeat("x", 100)+"\n"), "produce", "--topic", topic, "--max-line-bytes", "50")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "line 1 is longer than --max-line-bytes (50 bytes)")
}

func testUsageErrors(r cliRunner) {
	t := r.t
	for _, args := range [][]string{
		{"topic"},
		{"topic", "frobnicate"},
		{"topic", "create"},
		{"topic", "create", "a", "b"},
		{"topic", "create", "a", "--partitions", "0"},
		{"topic", "create", "a", "--replication-factor", "0"},
		{"topic", "create", "a", "--config", "novalue"},
		{"topic", "create", "a", "--no-such-flag"},
		{"topic", "list", "extra"},
		{"topic", "alter", "a"},
		{"topic", "alter", "a", "--partitions", "-1"},
		{"topic", "delete"},
		{"topic", "list", "--timeout", "0s"},
		{"produce"},
		{"produce", "--topic", "a", "--acks", "2"},
		{"produce", "--topic", "a", "--compression", "brotli"},
		{"produce", "--topic", "a", "--header", "nokv"},
		{"produce", "--topic", "a", "extra"},
		{"consume"},
		{"consume", "--topic", "a", "--from-beginning", "--offset", "3"},
		{"consume", "--topic", "a", "--offset", "-2"},
		{"consume", "--topic", "a", "--offset-time", "yesterday"},
		{"consume", "--topic", "a", "--max-messages", "-1"},
		{"offsets"},
		{"offsets", "--topic", "a", "--time", "yesterday"},
		{"group"},
		{"group", "frobnicate"},
		{"group", "describe"},
		{"group", "delete"},
		{"group", "list", "extra"},
		{"group", "reset-offsets", "g", "--to-earliest"},
		{"group", "reset-offsets", "g", "--topic", "a", "--to-earliest", "--to-latest"},
		{"group", "reset-offsets", "g", "--topic", "a", "--to-datetime", "yesterday"},
		{"txn"},
		{"txn", "frobnicate"},
		{"txn", "describe"},
		{"txn", "list", "extra"},
		{"txn", "producers"},
		{"txn", "abort", "--topic", "a", "--partition", "0"},
		{"txn", "find-hanging", "--max-transaction-timeout", "-1s"},
	} {
		code, _, errOut := r.run(args...)
		require.Equal(t, exitUsage, code, "%q: %s", args, errOut)
		require.NotEmpty(t, errOut, "%q says why", args)
	}
	// A bad address (run appends a good one, which would win).
	for _, name := range clientCommands {
		args := []string{"--bootstrap-server", "no-port", "--topic", "a"}
		switch name {
		case "topic", "group", "txn":
			args = []string{"list", "--bootstrap-server", "no-port"}
		}
		var out, errOut bytes.Buffer
		code := commands[name].streams(context.Background(), args, strings.NewReader(""), &out, &errOut)
		require.Equal(t, exitUsage, code, "%s: %s", name, errOut.String())
		require.Contains(t, errOut.String(), `bad address "no-port"`, name)
	}
	for _, args := range [][]string{{"topic", "-h"}, {"topic", "create", "-h"}, {"produce", "-h"}, {"consume", "--help"}, {"offsets", "-h"}} {
		code, _, errOut := r.run(args...)
		require.Equal(t, exitOK, code, "%q", args)
		require.Contains(t, errOut, "Usage")
	}
}

// testConsumeInterrupt runs `strata consume` as a child process and stops
// it with SIGINT: it prints what it read, says how many, and exits 0.
func testConsumeInterrupt(r cliRunner) {
	t := r.t
	topic := topicName(t, "i")
	r.ok("", "topic", "create", topic)
	r.ok("one\ntwo\nthree\n", "produce", "--topic", topic)

	ctx, cancel := context.WithTimeout(context.Background(), cliTestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "consume", "--bootstrap-server", r.addr, "--topic", topic, "--from-beginning")
	cmd.Env = append(os.Environ(), "STRATA_TEST_MAIN=1")
	var errOut lockedBuffer // written by exec's copier while the test reads it
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	var got []string
	for len(got) < 3 && sc.Scan() {
		got = append(got, sc.Text())
	}
	if !slices.Equal([]string{"one", "two", "three"}, got) {
		// exec copies the child's stderr into errOut until Wait: read it
		// only after.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		require.Equal(t, []string{"one", "two", "three"}, got, errOut.String())
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	require.NoError(t, cmd.Wait(), "exit 0 after SIGINT: %s", errOut.String())
	require.Len(t, got, 3)
	require.Equal(t, "Processed a total of 3 messages\n", errOut.String())
}

// lockedBuffer is a bytes.Buffer safe to write from one goroutine while
// another reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testConsumerProtocolGroup: a KIP-848 group (kgo's ServerSideBalancer)
// is described with its member, committed offsets and lag.
func testConsumerProtocolGroup(r cliRunner) {
	t := r.t
	topic := r.topicWithRecords("g", 1, "a\nb\nc\n")
	group := topicName(t, "grp848")
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), cliTestTimeout)
	defer cancel()
	for n := 0; n < 3; {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		n += fs.NumRecords()
	}
	require.NoError(t, cl.CommitUncommittedOffsets(ctx))
	described, err := kadm.NewClient(cl).DescribeConsumerGroups(ctx, group)
	require.NoError(t, err)
	for _, m := range described[group].Members {
		if _, ok := m.Assignment[""]; ok {
			t.Skip("the broker's ConsumerGroupDescribe names no topics (kfake): members cannot be matched to partitions")
		}
	}
	require.Eventually(t, func() bool {
		out := r.ok("", "group", "describe", group)
		return strings.Contains(out, "protocol consumer") && regexp.MustCompile(`(?m)^`+topic+`\s+0\s+3\s+3\s+0\s+[^-\s]`).MatchString(out)
	}, cliTestTimeout, 200*time.Millisecond, "group describe never showed the member with its commit")
}

// testGroups: a group with committed offsets is listed, described with
// its lag, reset (a dry run first, then --execute) and deleted.
func testGroups(r cliRunner) {
	t := r.t
	topic := topicName(t, "g")
	group := topicName(t, "grp")
	r.ok("", "topic", "create", topic, "--partitions", "2")
	var recs []string
	for i := range 10 {
		recs = append(recs, fmt.Sprintf("r-%d", i))
	}
	r.ok(strings.Join(recs, "\n")+"\n", "produce", "--topic", topic, "--partition", "0")
	// Commit 4 of the 10 records of partition 0 (a simple commit, as a
	// consumer assigning partitions itself does).
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.addr))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), cliTestTimeout)
	defer cancel()
	commits := kadm.Offsets{}
	commits.Add(kadm.Offset{Topic: topic, Partition: 0, At: 4, LeaderEpoch: -1})
	require.Eventually(t, func() bool {
		resp, err := adm.CommitOffsets(ctx, group, commits)
		return err == nil && resp.Ok()
	}, cliTestTimeout, 100*time.Millisecond)

	require.Regexp(t, `(?m)^`+group+`\s+Empty\s`, r.ok("", "group", "list"))
	out := r.ok("", "group", "describe", group)
	require.Contains(t, out, "GROUP "+group+"  state Empty")
	require.Regexp(t, `(?m)^`+topic+`\s+0\s+4\s+10\s+6\s+-`, out, "committed 4, log end 10, lag 6")

	out = r.ok("", "group", "reset-offsets", group, "--topic", topic, "--to-earliest")
	require.Regexp(t, `(?m)^`+topic+`\s+0\s+4\s+0\s*$`, out)
	require.Contains(t, out, "dry run")
	require.Regexp(t, `(?m)^`+topic+`\s+0\s+4\s`, r.ok("", "group", "describe", group), "a dry run commits nothing")
	r.ok("", "group", "reset-offsets", group, "--topic", topic, "--to-offset", "7", "--execute")
	require.Regexp(t, `(?m)^`+topic+`\s+0\s+7\s+10\s+3\s`, r.ok("", "group", "describe", group))
	r.ok("", "group", "reset-offsets", group, "--topic", topic, "--to-latest", "--partition", "0", "--execute")
	require.Regexp(t, `(?m)^`+topic+`\s+0\s+10\s+10\s+0\s`, r.ok("", "group", "describe", group))

	code, _, errOut := r.run("group", "reset-offsets", group, "--topic", topic)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "exactly one of")

	require.Contains(t, r.ok("", "group", "delete", group), "deleted group "+group)
	require.NotRegexp(t, `(?m)^`+group+`\s`, r.ok("", "group", "list"))
}

// newFakeKafka starts franz-go's in-memory fake Kafka (kfake) as one
// broker on a free port of 127.0.0.1 and returns it with its address. It
// keeps records in memory and never fsyncs; the client commands' tests
// run against it. Close it when done.
func newFakeKafka(opts ...kfake.Opt) (*kfake.Cluster, string, error) {
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		return nil, "", fmt.Errorf("kfake: %w", err)
	}
	addrs := c.ListenAddrs()
	if len(addrs) != 1 {
		c.Close()
		return nil, "", fmt.Errorf("kfake: listening on %d addresses, want 1", len(addrs))
	}
	return c, addrs[0], nil
}
