package interop

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds of the librdkafka tests' child programs.
const (
	// toolTimeout bounds one run of kcat or the python script; the
	// script's own waits are bounded by scriptTimeout, inside it.
	toolTimeout = 40 * time.Second
	// scriptTimeout is the "timeout" (seconds) the python script's
	// flush, poll loop and metadata request get.
	scriptTimeout = 20
)

// librdkafkaCodecs are librdkafka's compression.codec names with their
// RecordBatch ids, each paired with an acks setting so that one pass
// visits every codec and every acks mode.
var librdkafkaCodecs = []struct {
	codec  string
	id     int16
	config map[string]any // librdkafka properties
	acked  bool           // delivery reports carry offsets
}{
	{"none", 0, map[string]any{"enable.idempotence": true}, true}, // acks=all
	{"gzip", 1, map[string]any{"acks": "1"}, true},
	{"snappy", 2, map[string]any{"acks": "0"}, false},
	{"lz4", 3, map[string]any{"enable.idempotence": true}, true},
	{"zstd", 4, map[string]any{"acks": "all"}, true},
}

// requireStoredCompressed runs the subtest "stored-compressed": every
// batch librdkafka wrote to topic with the codec of id is stored
// compressed, which is skipped for lz4.
func requireStoredCompressed(t *testing.T, addr, topic string, partitions int32, codec string, id int16) {
	t.Helper()
	t.Run("stored-compressed", func(t *testing.T) {
		skipLZ4(t, codec)
		requireCodec(t, addr, topic, partitions, id, true)
	})
}

// skipLZ4 skips the check that librdkafka's lz4 batches are stored
// compressed.
func skipLZ4(t *testing.T, codec string) {
	t.Helper()
	if codec == "lz4" {
		t.Skip("BUG: librdkafka before 2.8 (Debian 12 ships 2.0.2) compresses with lz4 only when ApiVersions lists " +
			"FindCoordinator v0 (its LZ4 feature flag), and Strata serves no FindCoordinator until consumer groups land, " +
			"so librdkafka sends lz4 batches uncompressed (the records still round-trip byte for byte)")
	}
}

// kcatPath finds kcat (kafkacat before Debian renamed it).
func kcatPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"kcat", "kafkacat"} {
		if p, err := exec.LookPath(name); err == nil {
			out, _ := exec.Command(p, "-V").CombinedOutput()
			if m := regexp.MustCompile(`Version (\S+).*librdkafka (\S+)`).FindStringSubmatch(string(out)); m != nil {
				t.Logf("%s %s, librdkafka %s", p, m[1], m[2])
			}
			return p
		}
	}
	skipOrFailMissing(t, "kcat is not installed (Debian's kcat package)")
	return ""
}

// runTool runs a program with stdin and returns its stdout, failing the
// test with its stderr if it fails or outlives toolTimeout.
func runTool(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%s %s did not finish within %v; stderr:\n%s", name, strings.Join(args, " "), toolTimeout, stderr.String())
	require.NoError(t, err, "%s %s; stderr:\n%s", name, strings.Join(args, " "), stderr.String())
	if stderr.Len() > 0 {
		t.Logf("%s stderr:\n%s", filepath.Base(name), stderr.String())
	}
	return stdout.Bytes()
}

// kcatMessage is one line of `kcat -C -J`.
type kcatMessage struct {
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	TSType    string   `json:"tstype"`
	TS        int64    `json:"ts"`
	Headers   []string `json:"headers"`
	Key       *string  `json:"key"`
	Payload   *string  `json:"payload"`
}

func (m kcatMessage) rec() rec {
	r := rec{Partition: m.Partition, Offset: m.Offset, Timestamp: time.UnixMilli(m.TS)}
	if m.Key != nil {
		r.Key = []byte(*m.Key)
	}
	if m.Payload != nil {
		r.Value = []byte(*m.Payload)
	}
	for i := 0; i+1 < len(m.Headers); i += 2 {
		r.Headers = append(r.Headers, header{Key: m.Headers[i], Value: []byte(m.Headers[i+1])})
	}
	return r
}

// kcatConsume runs `kcat -C -J ... -c count -e` and parses its lines.
func kcatConsume(t *testing.T, kcat, addr string, count int, args ...string) []rec {
	t.Helper()
	args = append([]string{"-C", "-J", "-b", addr, "-c", strconv.Itoa(count), "-e", "-q", "-m", "10"}, args...)
	var got []rec
	for _, m := range kcatMessages(t, runTool(t, nil, kcat, args...)) {
		r := m.rec()
		require.Equal(t, "create", m.TSType, "timestamp type of %v", r)
		got = append(got, r)
	}
	return got
}

// kcatMessages parses the lines of `kcat -J`.
func kcatMessages(t *testing.T, out []byte) []kcatMessage {
	t.Helper()
	var ms []kcatMessage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var m kcatMessage
		require.NoError(t, json.Unmarshal([]byte(line), &m), "kcat line %q", line)
		ms = append(ms, m)
	}
	return ms
}

// TestKcat drives librdkafka through Debian's kcat against one node:
// producing with -z for every codec, keys (-K) and headers (-H);
// consuming with -o beginning, an offset and a timestamp (-c N -e);
// metadata (-L) and offsets by time (-Q).
func TestKcat(t *testing.T) {
	kcat := kcatPath(t)
	n := startNode(t, t.TempDir())
	adm := newAdmin(t, n.Addr())
	const partitions = 2
	kcatHeaders := []header{{"trace", []byte("abc-123")}, {"origin", []byte("kcat")}}

	t.Run("produce", func(t *testing.T) {
		for i, c := range librdkafkaCodecs {
			t.Run(c.codec, func(t *testing.T) {
				topic := "kcat-" + c.codec
				createTopic(t, adm, topic, partitions, nil)
				rs := genRecords(uint64(500+i), 30, genOpts{partitions: partitions, printable: true, noHeaders: true})
				from := time.Now()
				for p := range int32(partitions) {
					var lines bytes.Buffer
					for j := range rs {
						rs[j].Headers = kcatHeaders
						if rs[j].Partition == p {
							fmt.Fprintf(&lines, "%s:%s\n", rs[j].Key, rs[j].Value)
						}
					}
					args := []string{"-P", "-b", n.Addr(), "-t", topic, "-p", strconv.Itoa(int(p)), "-K", ":", "-z", c.codec, "-m", "10"}
					for _, h := range kcatHeaders {
						args = append(args, "-H", h.Key+"="+string(h.Value))
					}
					for k, v := range c.config {
						args = append(args, "-X", fmt.Sprintf("%s=%v", k, v))
					}
					runTool(t, lines.Bytes(), kcat, append(args, "-X", "message.timeout.ms=15000")...)
				}
				to := time.Now()
				check := checkOpts{from: from, to: to}
				got := kcatConsume(t, kcat, n.Addr(), len(rs), "-t", topic, "-o", "beginning")
				requireSameRecords(t, rs, got, zeros(partitions), check)
				// kgo tells null from empty: nothing is null here.
				check.nullsDistinct = true
				requireSameRecords(t, rs, consumeKgo(t, []string{n.Addr()}, topic, atStart(partitions), len(rs)), zeros(partitions), check)
				requireStoredCompressed(t, n.Addr(), topic, partitions, c.codec, c.id)
			})
		}
	})

	t.Run("consume", func(t *testing.T) {
		const topic = "kcat-consume"
		rs := writeRecords(t, adm, []string{n.Addr()}, topic, 550, 80, genOpts{partitions: partitions, printable: true, timestamps: true},
			kgo.ProducerBatchCompression(kgo.ZstdCompression()))
		by := byPartition(rs)
		check := checkOpts{offsetsKnown: true}

		got := kcatConsume(t, kcat, n.Addr(), len(rs), "-t", topic, "-o", "beginning")
		requireSameRecords(t, rs, got, zeros(partitions), check)

		got = kcatConsume(t, kcat, n.Addr(), len(by[1])-13, "-t", topic, "-p", "1", "-o", "13")
		requireSameRecords(t, by[1][13:], got, map[int32]int64{1: 13}, check)

		ts := rs[51].Timestamp
		var want []rec
		start := map[int32]int64{}
		for p := range int32(partitions) {
			i := slices.IndexFunc(by[p], func(r rec) bool { return !r.Timestamp.Before(ts) })
			start[p] = int64(i)
			want = append(want, by[p][i:]...)
		}
		got = kcatConsume(t, kcat, n.Addr(), len(want), "-t", topic, "-o", fmt.Sprintf("s@%d", ts.UnixMilli()))
		requireSameRecords(t, want, got, start, check)

		// -Q: the offset of the first record at or after a time.
		out := runTool(t, nil, kcat, "-Q", "-b", n.Addr(), "-m", "10", "-t", fmt.Sprintf("%s:1:%d", topic, ts.UnixMilli()))
		require.Contains(t, string(out), fmt.Sprintf("%s [1] offset %d", topic, start[1]), "kcat -Q output:\n%s", out)
	})

	t.Run("metadata", func(t *testing.T) {
		const topic = "kcat-metadata"
		createTopic(t, adm, topic, 3, nil)
		out := runTool(t, nil, kcat, "-L", "-J", "-b", n.Addr(), "-m", "10", "-t", topic)
		var md kcatMetadata
		require.NoError(t, json.Unmarshal(out, &md), "kcat -L -J output:\n%s", out)
		id := n.NodeID()
		require.Equal(t, id, md.ControllerID)
		require.Len(t, md.Brokers, 1)
		require.Equal(t, id, md.Brokers[0].ID)
		require.Equal(t, n.Addr(), md.Brokers[0].Name)
		require.Len(t, md.Topics, 1)
		require.Equal(t, topic, md.Topics[0].Topic)
		require.Empty(t, md.Topics[0].Error)
		require.Len(t, md.Topics[0].Partitions, 3)
		slices.SortFunc(md.Topics[0].Partitions, func(a, b kcatPartition) int { return int(a.Partition - b.Partition) })
		for i, p := range md.Topics[0].Partitions {
			require.Equal(t, int32(i), p.Partition)
			require.Equal(t, id, p.Leader)
			require.Len(t, p.Replicas, 1)
			require.Equal(t, id, p.Replicas[0].ID)
			require.Len(t, p.ISRs, 1)
			require.Equal(t, id, p.ISRs[0].ID)
		}
	})
}

// kcatMetadata is the output of `kcat -L -J`.
type kcatMetadata struct {
	ControllerID int32 `json:"controllerid"`
	Brokers      []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string          `json:"topic"`
		Error      string          `json:"error"`
		Partitions []kcatPartition `json:"partitions"`
	} `json:"topics"`
}

type kcatPartition struct {
	Partition int32 `json:"partition"`
	Leader    int32 `json:"leader"`
	Replicas  []struct {
		ID int32 `json:"id"`
	} `json:"replicas"`
	ISRs []struct {
		ID int32 `json:"id"`
	} `json:"isrs"`
}

// confluentPython finds a python3 that imports confluent_kafka: Debian's
// python3-confluent-kafka installs for /usr/bin/python3, which need not
// be the python3 first on PATH.
func confluentPython(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/python3", "python3"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
		out, err := exec.CommandContext(ctx, p, "-c",
			"import confluent_kafka; print(confluent_kafka.version()[0], confluent_kafka.libversion()[0])").Output()
		cancel()
		if err == nil {
			v := strings.Fields(string(out))
			t.Logf("%s: confluent-kafka %s, librdkafka %s", p, v[0], v[1])
			return p
		}
	}
	skipOrFailMissing(t, "no python3 imports confluent_kafka (Debian's python3-confluent-kafka)")
	return ""
}

// pyRecord is a record as testdata/confluent_interop.py reads and writes
// it: bytes in base64, null as null.
type pyRecord struct {
	Partition     int32       `json:"partition"`
	Offset        int64       `json:"offset"`
	Key           []byte      `json:"key"`
	Value         []byte      `json:"value"`
	Headers       [][]*string `json:"headers"` // [key, base64 value or null]
	Timestamp     *int64      `json:"timestamp"`
	TimestampType int         `json:"timestamp_type,omitempty"`
}

// toPy converts a record; encoding/json writes []byte as base64 and nil
// as null.
func toPy(r rec) pyRecord {
	p := pyRecord{Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: [][]*string{}}
	for _, h := range r.Headers {
		k := h.Key
		var v *string
		if h.Value != nil {
			s := base64.StdEncoding.EncodeToString(h.Value)
			v = &s
		}
		p.Headers = append(p.Headers, []*string{&k, v})
	}
	if !r.Timestamp.IsZero() {
		ms := r.Timestamp.UnixMilli()
		p.Timestamp = &ms
	}
	return p
}

func (p pyRecord) rec(t *testing.T) rec {
	r := rec{Partition: p.Partition, Offset: p.Offset, Key: p.Key, Value: p.Value}
	// encoding/json decodes "" into an empty slice and null into nil.
	for _, h := range p.Headers {
		require.Len(t, h, 2)
		require.NotNil(t, h[0])
		hd := header{Key: *h[0]}
		if h[1] != nil {
			v, err := base64.StdEncoding.DecodeString(*h[1])
			require.NoError(t, err)
			hd.Value = v
		}
		r.Headers = append(r.Headers, hd)
	}
	require.NotNil(t, p.Timestamp, "a consumed record has a timestamp")
	require.Equal(t, 1, p.TimestampType, "TIMESTAMP_CREATE_TIME")
	r.Timestamp = time.UnixMilli(*p.Timestamp)
	return r
}

// runPython runs testdata/confluent_interop.py in mode with req as its
// stdin and decodes its stdout into resp.
func runPython(t *testing.T, python, mode string, req map[string]any, resp any) {
	t.Helper()
	req["timeout"] = scriptTimeout
	in, err := json.Marshal(req)
	require.NoError(t, err)
	out := runTool(t, in, python, filepath.Join("testdata", "confluent_interop.py"), mode)
	require.NoError(t, json.Unmarshal(out, resp), "confluent_interop.py %s output:\n%s", mode, out)
}

// TestConfluentKafkaPython drives librdkafka through Debian's
// python3-confluent-kafka against one node: a Producer with every
// compression.type and acks mode (idempotent and not), keys, headers and
// timestamps; a Consumer with assign() (no group coordination) from the
// beginning and from offsets; list_topics metadata.
func TestConfluentKafkaPython(t *testing.T) {
	python := confluentPython(t)
	n := startNode(t, t.TempDir())
	adm := newAdmin(t, n.Addr())
	const partitions = 2

	consume := func(t *testing.T, topic string, start map[int32]int64, count int) []rec {
		t.Helper()
		st := map[string]int64{}
		for p, o := range start {
			st[strconv.Itoa(int(p))] = o
		}
		var resp struct{ Records []pyRecord }
		runPython(t, python, "consume", map[string]any{"bootstrap": n.Addr(), "topic": topic, "start": st, "count": count}, &resp)
		got := make([]rec, len(resp.Records))
		for i, r := range resp.Records {
			got[i] = r.rec(t)
		}
		return got
	}
	const offsetBeginning = -2 // confluent_kafka.OFFSET_BEGINNING

	for i, c := range librdkafkaCodecs {
		t.Run("produce-consume/"+c.codec, func(t *testing.T) {
			topic := "confluent-" + c.codec
			createTopic(t, adm, topic, partitions, nil)
			rs := genRecords(uint64(600+i), 40, genOpts{partitions: partitions, nulls: true, timestamps: i%2 == 0})
			config := map[string]any{"compression.type": c.codec, "linger.ms": 5}
			for k, v := range c.config {
				config[k] = v
			}
			in := make([]pyRecord, len(rs))
			for j := range rs {
				in[j] = toPy(rs[j])
			}
			from := time.Now()
			var resp struct {
				Records []struct {
					Partition int32 `json:"partition"`
					Offset    int64 `json:"offset"`
				}
			}
			runPython(t, python, "produce", map[string]any{"bootstrap": n.Addr(), "topic": topic, "config": config, "records": in}, &resp)
			to := time.Now()
			require.Len(t, resp.Records, len(rs))
			for j := range rs {
				require.Equal(t, rs[j].Partition, resp.Records[j].Partition)
				if c.acked {
					rs[j].Offset = resp.Records[j].Offset
				}
			}
			got := consume(t, topic, map[int32]int64{0: offsetBeginning, 1: offsetBeginning}, len(rs))
			requireSameRecords(t, rs, got, zeros(partitions), checkOpts{nullsDistinct: true, offsetsKnown: c.acked, from: from, to: to})
			requireStoredCompressed(t, n.Addr(), topic, partitions, c.codec, c.id)
			for p := range int32(partitions) {
				for _, batch := range rawBatches(t, n.Addr(), topic, p) {
					require.Equal(t, c.config["enable.idempotence"] == true, batch.ProducerID >= 0, "producer id %d of a stored batch", batch.ProducerID)
				}
			}
		})
	}

	t.Run("consume-offsets", func(t *testing.T) {
		const topic = "confluent-offsets"
		rs := writeRecords(t, adm, []string{n.Addr()}, topic, 650, 60, genOpts{partitions: partitions, nulls: true, timestamps: true},
			kgo.ProducerBatchCompression(kgo.SnappyCompression()))
		by := byPartition(rs)
		start := map[int32]int64{0: 9, 1: 21}
		got := consume(t, topic, start, len(by[0])-9+len(by[1])-21)
		requireSameRecords(t, append(slices.Clone(by[0][9:]), by[1][21:]...), got, start, checkOpts{nullsDistinct: true, offsetsKnown: true})
	})

	t.Run("metadata", func(t *testing.T) {
		const topic = "confluent-metadata"
		createTopic(t, adm, topic, 3, nil)
		var md struct {
			ClusterID    string `json:"cluster_id"`
			ControllerID int32  `json:"controller_id"`
			Brokers      []struct {
				ID   int32  `json:"id"`
				Host string `json:"host"`
				Port int    `json:"port"`
			} `json:"brokers"`
			Partitions []struct {
				ID       int32   `json:"id"`
				Leader   int32   `json:"leader"`
				Replicas []int32 `json:"replicas"`
				ISRs     []int32 `json:"isrs"`
				Error    *string `json:"error"`
			} `json:"partitions"`
		}
		runPython(t, python, "metadata", map[string]any{"bootstrap": n.Addr(), "topic": topic}, &md)
		host, port := splitAddr(t, n.Addr())
		id := n.NodeID()
		require.Equal(t, n.ClusterID(), md.ClusterID)
		require.Equal(t, id, md.ControllerID)
		require.Len(t, md.Brokers, 1)
		require.Equal(t, id, md.Brokers[0].ID)
		require.Equal(t, host, md.Brokers[0].Host)
		require.Equal(t, port, md.Brokers[0].Port)
		require.Len(t, md.Partitions, 3)
		for i, p := range md.Partitions {
			require.Nil(t, p.Error)
			require.Equal(t, int32(i), p.ID)
			require.Equal(t, id, p.Leader)
			require.Equal(t, []int32{id}, p.Replicas)
			require.Equal(t, []int32{id}, p.ISRs)
		}
	})
}
