package interop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// secPyAnswer is testdata/secure_interop.py's answer.
type secPyAnswer struct {
	Error     *string  `json:"error"`
	Message   string   `json:"message"`
	Log       []string `json:"log"`
	Offsets   []int64  `json:"offsets"`
	Values    []string `json:"values"`
	Committed int64    `json:"committed"`
	// ConsumeError is kafka-python's consumer's error after its
	// producer's.
	ConsumeError *string `json:"consume_error"`
}

// secPyCase is one run of testdata/secure_interop.py: a client
// configuration and the error it must end with ("" for a round trip).
type secPyCase struct {
	name   string
	addr   string
	config map[string]any
	want   string
	// wantMessage is a part of the error's message or of a logged
	// line, when the error's name alone does not tell the cause.
	wantMessage string
	// wantConsume is the error kafka-python's consumer must end with
	// after its producer's (want).
	wantConsume string
	// maxBlock bounds kafka-python's waits for metadata (seconds; 0:
	// scriptTimeout).
	maxBlock int
	// librdkafkaSCRAM: the case authenticates librdkafka with SCRAM,
	// whose client-final nonce repeats the client nonce before 2.6.1
	// (core/sasl accepts it as Kafka >= 3.8.1 does).
	librdkafkaSCRAM bool
}

// runSecurePython runs each case against s: alice's round trip (produce,
// read back in her group, commit) or the error the client reports.
func runSecurePython(t *testing.T, s *secureNode, python, client string, cases []secPyCase) {
	t.Helper()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic := fmt.Sprintf("%s%s-%d", secPrefix, client, i)
			group := topic + "-group"
			s.createTopic(t, topic)
			var values []string
			for _, r := range genRecords(uint64(2700+i), 10, genOpts{partitions: 1, noHeaders: true}) {
				values = append(values, base64.StdEncoding.EncodeToString(r.Value))
			}
			req := map[string]any{"bootstrap": c.addr, "topic": topic, "group": group,
				"config": c.config, "values": values, "timeout": scriptTimeout}
			if c.maxBlock > 0 {
				req["max_block"] = c.maxBlock
			}
			in, err := json.Marshal(req)
			require.NoError(t, err)
			out := runTool(t, in, python, filepath.Join("testdata", "secure_interop.py"), client)
			var got secPyAnswer
			require.NoError(t, json.Unmarshal(out, &got), "secure_interop.py %s printed %s", client, out)
			if c.want != "" {
				require.NotNil(t, got.Error, "%s succeeded; want %s", client, c.want)
				require.Equal(t, c.want, *got.Error, "%s: %s; log: %q", *got.Error, got.Message, got.Log)
				if c.wantMessage != "" {
					require.Contains(t, got.Message+"\n"+strings.Join(got.Log, "\n"), c.wantMessage)
				}
				if c.wantConsume != "" {
					require.NotNil(t, got.ConsumeError, "the consumer succeeded; want %s", c.wantConsume)
					require.Equal(t, c.wantConsume, *got.ConsumeError)
				}
				require.Zero(t, s.endOffset(t, topic), "nothing was written")
				return
			}
			require.Nil(t, got.Error, "%s: %s; log: %q", client, got.Message, got.Log)
			require.Equal(t, values, got.Values)
			for j, o := range got.Offsets {
				require.EqualValues(t, j, o)
			}
			require.EqualValues(t, len(values), got.Committed)
			require.EqualValues(t, len(values), s.committed(t, group, topic))
		})
	}
}

// TestSecureConfluentKafkaPython: librdkafka through Debian's
// python3-confluent-kafka against the secured node, over SASL_SSL with
// SCRAM-SHA-512 and PLAIN and over mTLS (ssl.certificate.location and
// ssl.key.location): alice produces, consumes in her group and commits;
// a wrong password is librdkafka's _AUTHENTICATION; bob, and a
// certificate mapped to bob, get TOPIC_AUTHORIZATION_FAILED.
func TestSecureConfluentKafkaPython(t *testing.T) {
	python := confluentPython(t)
	s := startSecureNode(t)
	aliceCert, aliceKey := s.clientCert(t, secAlice)
	bobCert, bobKey := s.clientCert(t, secBob)
	sasl := func(mechanism, user, password string) map[string]any {
		return map[string]any{"security.protocol": "SASL_SSL", "sasl.mechanisms": mechanism,
			"sasl.username": user, "sasl.password": password, "ssl.ca.location": s.caFile, "message.timeout.ms": 10000}
	}
	mtls := func(cert, key string) map[string]any {
		return map[string]any{"security.protocol": "SSL", "ssl.ca.location": s.caFile,
			"ssl.certificate.location": cert, "ssl.key.location": key, "message.timeout.ms": 10000}
	}
	runSecurePython(t, s, python, "confluent", []secPyCase{
		{name: "sasl-ssl-scram-sha-512", addr: s.saslSSL, config: sasl("SCRAM-SHA-512", secAlice, secAlicePassword), librdkafkaSCRAM: true},
		{name: "sasl-ssl-scram-sha-512-wrong-password", addr: s.saslSSL, config: sasl("SCRAM-SHA-512", secAlice, secWrongPassword),
			want: "_AUTHENTICATION", wantMessage: "SASL authentication error", librdkafkaSCRAM: true},
		{name: "sasl-ssl-scram-sha-512-no-acl", addr: s.saslSSL, config: sasl("SCRAM-SHA-512", secBob, secBobPassword),
			want: "TOPIC_AUTHORIZATION_FAILED", librdkafkaSCRAM: true},
		{name: "sasl-ssl-plain", addr: s.saslSSL, config: sasl("PLAIN", secAlice, secAlicePassword)},
		{name: "sasl-ssl-plain-wrong-password", addr: s.saslSSL, config: sasl("PLAIN", secAlice, secWrongPassword),
			want: "_AUTHENTICATION", wantMessage: "SASL authentication error"},
		{name: "sasl-ssl-plain-no-acl", addr: s.saslSSL, config: sasl("PLAIN", secBob, secBobPassword), want: "TOPIC_AUTHORIZATION_FAILED"},
		{name: "mtls", addr: s.mTLS, config: mtls(aliceCert, aliceKey)},
		{name: "mtls-no-acl", addr: s.mTLS, config: mtls(bobCert, bobKey), want: "TOPIC_AUTHORIZATION_FAILED"},
	})
}

// kafkaPython finds a python3 that imports kafka (Debian's
// python3-kafka, kafka-python 2.0.2).
func kafkaPython(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/python3", "python3"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
		out, err := exec.CommandContext(ctx, p, "-c", "import kafka; print(kafka.__version__)").Output()
		cancel()
		if err == nil {
			t.Logf("%s: kafka-python %s", p, strings.TrimSpace(string(out)))
			return p
		}
	}
	skipOrFailMissing(t, "no python3 imports kafka (Debian's python3-kafka)")
	return ""
}

// TestSecureKafkaPython: kafka-python 2.0.2 (Debian's python3-kafka),
// which sends SaslHandshake v0 and then raw length-prefixed SASL tokens,
// against the secured node over SASL_SSL with SCRAM-SHA-512 and PLAIN and
// over mTLS: alice produces, consumes in her group and commits; with a
// wrong password the broker closes the connection after the last token
// (no SaslAuthenticate answer exists in v0) and the client finds no
// broker; bob, and a certificate mapped to bob, are refused: the producer
// waits for metadata until KafkaTimeoutError (kafka-python 2.0.2 fails a
// single-topic metadata update on TOPIC_AUTHORIZATION_FAILED without
// marking the topic unauthorized, so it retries; against Kafka too), and
// the consumer in bob's group raises GroupAuthorizationFailedError (its
// FindCoordinator is refused; without a group it never learns the
// topic's leader and waits, for the same reason as the producer).
func TestSecureKafkaPython(t *testing.T) {
	python := kafkaPython(t)
	s := startSecureNode(t)
	aliceCert, aliceKey := s.clientCert(t, secAlice)
	bobCert, bobKey := s.clientCert(t, secBob)
	sasl := func(mechanism, user, password string) map[string]any {
		return map[string]any{"security_protocol": "SASL_SSL", "sasl_mechanism": mechanism,
			"sasl_plain_username": user, "sasl_plain_password": password, "ssl_cafile": s.caFile}
	}
	mtls := func(cert, key string) map[string]any {
		return map[string]any{"security_protocol": "SSL", "ssl_cafile": s.caFile, "ssl_certfile": cert, "ssl_keyfile": key}
	}
	runSecurePython(t, s, python, "kafka-python", []secPyCase{
		{name: "sasl-ssl-scram-sha-512", addr: s.saslSSL, config: sasl("SCRAM-SHA-512", secAlice, secAlicePassword)},
		{name: "sasl-ssl-plain", addr: s.saslSSL, config: sasl("PLAIN", secAlice, secAlicePassword)},
		{name: "mtls", addr: s.mTLS, config: mtls(aliceCert, aliceKey)},
		{name: "sasl-ssl-wrong-password", addr: s.saslSSL, config: sasl("SCRAM-SHA-512", secAlice, secWrongPassword),
			want: "NoBrokersAvailable", wantMessage: "Error receiving reply from server"},
		{name: "sasl-ssl-no-acl", addr: s.saslSSL, config: sasl("SCRAM-SHA-512", secBob, secBobPassword),
			want: "KafkaTimeoutError", wantMessage: "Failed to update metadata", wantConsume: "GroupAuthorizationFailedError", maxBlock: 5},
		{name: "mtls-no-acl", addr: s.mTLS, config: mtls(bobCert, bobKey),
			want: "KafkaTimeoutError", wantMessage: "Failed to update metadata", wantConsume: "GroupAuthorizationFailedError", maxBlock: 5},
	})
}
