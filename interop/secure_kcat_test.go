package interop

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runToolFailing runs a program that must fail (exit non-zero within
// toolTimeout) and returns its stderr.
func runToolFailing(t *testing.T, stdin []byte, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%s did not finish within %v; stderr:\n%s", name, toolTimeout, stderr.String())
	require.Error(t, err, "%s %s succeeded; stdout:\n%s", name, strings.Join(args, " "), stdout.String())
	return stderr.String()
}

// TestSecureKcat: kcat (librdkafka) against the secured node, over
// SASL_SSL (SCRAM-SHA-512, whose repeated client nonce core/sasl accepts as Kafka does, and PLAIN) and
// over mTLS: alice produces (-P) and consumes (-C) in her group (-G,
// which commits); a wrong password is librdkafka's "SASL authentication
// error"; bob, and a certificate mapped to bob, get "Broker: Topic
// authorization failed".
func TestSecureKcat(t *testing.T) {
	kcat := kcatPath(t)
	s := startSecureNode(t)
	aliceCert, aliceKey := s.clientCert(t, secAlice)
	bobCert, bobKey := s.clientCert(t, secBob)
	sasl := func(mechanism, user, password string) []string {
		return []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + mechanism,
			"-X", "sasl.username=" + user, "-X", "sasl.password=" + password, "-X", "ssl.ca.location=" + s.caFile}
	}
	mtls := func(cert, key string) []string {
		return []string{"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + s.caFile,
			"-X", "ssl.certificate.location=" + cert, "-X", "ssl.key.location=" + key}
	}
	cases := []struct {
		name string
		addr string
		args []string
		// want is "" for a round trip, else a part of kcat's stderr.
		want            string
		librdkafkaSCRAM bool
	}{
		{"sasl-ssl-scram-sha-512", s.saslSSL, sasl("SCRAM-SHA-512", secAlice, secAlicePassword), "", true},
		{"sasl-ssl-scram-sha-512-wrong-password", s.saslSSL, sasl("SCRAM-SHA-512", secAlice, secWrongPassword), "SASL authentication error", true},
		{"sasl-ssl-scram-sha-512-no-acl", s.saslSSL, sasl("SCRAM-SHA-512", secBob, secBobPassword), "Broker: Topic authorization failed", true},
		{"sasl-ssl-plain", s.saslSSL, sasl("PLAIN", secAlice, secAlicePassword), "", false},
		{"sasl-ssl-plain-wrong-password", s.saslSSL, sasl("PLAIN", secAlice, secWrongPassword), "SASL authentication error", false},
		{"sasl-ssl-plain-no-acl", s.saslSSL, sasl("PLAIN", secBob, secBobPassword), "Broker: Topic authorization failed", false},
		{"mtls", s.mTLS, mtls(aliceCert, aliceKey), "", false},
		{"mtls-no-acl", s.mTLS, mtls(bobCert, bobKey), "Broker: Topic authorization failed", false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic, group := fmt.Sprintf("%skcat-%d", secPrefix, i), fmt.Sprintf("%skcat-group-%d", secPrefix, i)
			s.createTopic(t, topic)
			rs := genRecords(uint64(2800+i), 12, genOpts{partitions: 1, printable: true, noHeaders: true})
			var lines bytes.Buffer
			for _, r := range rs {
				fmt.Fprintf(&lines, "%s:%s\n", r.Key, r.Value)
			}
			produce := append([]string{"-P", "-b", c.addr, "-t", topic, "-p", "0", "-K", ":", "-m", "10",
				"-X", "message.timeout.ms=8000"}, c.args...)
			if c.want != "" {
				stderr := runToolFailing(t, lines.Bytes(), kcat, produce...)
				require.Contains(t, stderr, c.want)
				require.Zero(t, s.endOffset(t, topic), "nothing was written")
				return
			}
			runTool(t, lines.Bytes(), kcat, produce...)
			// -G: a balanced consumer in alice's group, which commits
			// what it read when it exits at the end (-e).
			out := runTool(t, nil, kcat, append([]string{"-C", "-J", "-b", c.addr, "-G", group, "-c", fmt.Sprint(len(rs)),
				"-q", "-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100"},
				append(c.args, topic)...)...)
			var got []rec
			for _, m := range kcatMessages(t, out) {
				got = append(got, m.rec())
			}
			for j := range rs {
				rs[j].Timestamp = got[min(j, len(got)-1)].Timestamp // kcat stamps with its clock
			}
			requireSameRecords(t, rs, got, zeros(1), checkOpts{noHeaders: true})
			require.EqualValues(t, len(rs), s.committed(t, group, topic))
		})
	}
}
