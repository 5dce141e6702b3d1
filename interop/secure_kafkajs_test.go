package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecureKafkaJS: kafkajs 2.2.4 against the secured node, over
// SASL_SSL with SCRAM-SHA-512 and over mTLS: alice produces, consumes in
// her group and commits; a wrong password is kafkajs's
// KafkaJSSASLAuthenticationError; bob, and a certificate mapped to bob,
// get TOPIC_AUTHORIZATION_FAILED. It skips without node or the installed
// kafkajs, and fails so under CI=true.
func TestSecureKafkaJS(t *testing.T) {
	nodePath, err := exec.LookPath("node")
	if err != nil {
		skipOrFailMissing(t, "node is not installed (Debian's nodejs package)")
	}
	if _, err := os.Stat(filepath.Join(kafkajsDir, "node_modules", "kafkajs", "package.json")); err != nil {
		skipOrFailMissing(t, "kafkajs is not installed (npm ci --prefix interop/"+kafkajsDir+")")
	}
	s := startSecureNode(t)
	aliceCert, aliceKey := s.clientCert(t, secAlice)
	bobCert, bobKey := s.clientCert(t, secBob)
	sasl := func(user, password string) map[string]any {
		return map[string]any{"mechanism": "scram-sha-512", "username": user, "password": password}
	}
	cases := []struct {
		name string
		addr string
		ssl  map[string]string
		sasl map[string]any
		want string // "" for a round trip
	}{
		{"sasl-ssl-scram-sha-512", s.saslSSL, map[string]string{"ca": s.caFile}, sasl(secAlice, secAlicePassword), ""},
		{"mtls", s.mTLS, map[string]string{"ca": s.caFile, "cert": aliceCert, "key": aliceKey}, nil, ""},
		{"sasl-ssl-wrong-password", s.saslSSL, map[string]string{"ca": s.caFile}, sasl(secAlice, secWrongPassword), "KafkaJSSASLAuthenticationError"},
		{"sasl-ssl-no-acl", s.saslSSL, map[string]string{"ca": s.caFile}, sasl(secBob, secBobPassword), "TOPIC_AUTHORIZATION_FAILED"},
		{"mtls-no-acl", s.mTLS, map[string]string{"ca": s.caFile, "cert": bobCert, "key": bobKey}, nil, "TOPIC_AUTHORIZATION_FAILED"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic, group := fmt.Sprintf("%skafkajs-%d", secPrefix, i), fmt.Sprintf("%skafkajs-group-%d", secPrefix, i)
			s.createTopic(t, topic)
			var values []string
			for _, r := range genRecords(uint64(2900+i), 10, genOpts{partitions: 1, printable: true, noHeaders: true}) {
				values = append(values, string(r.Value))
			}
			in, err := json.Marshal(map[string]any{"broker": c.addr, "topic": topic, "group": group, "ssl": c.ssl,
				"sasl": c.sasl, "values": values})
			require.NoError(t, err)
			out := runTool(t, in, nodePath, filepath.Join(kafkajsDir, "secure.js"))
			var got struct {
				Error     *string  `json:"error"`
				Message   string   `json:"message"`
				Values    []string `json:"values"`
				Committed int64    `json:"committed"`
			}
			require.NoError(t, json.Unmarshal(out, &got), "secure.js printed %s", out)
			if c.want != "" {
				require.NotNil(t, got.Error, "kafkajs succeeded; want %s", c.want)
				require.Equal(t, c.want, *got.Error, "%s", got.Message)
				require.Zero(t, s.endOffset(t, topic), "nothing was written")
				return
			}
			require.Nil(t, got.Error, "%s", got.Message)
			require.Equal(t, values, got.Values)
			require.EqualValues(t, len(values), got.Committed)
			require.EqualValues(t, len(values), s.committed(t, group, topic))
		})
	}
}
