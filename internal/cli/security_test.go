package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseJAAS: Kafka's sasl.jaas.config entries, quoted and bare
// values, escapes, and the mistakes a hand-written one has.
func TestParseJAAS(t *testing.T) {
	for _, tc := range []struct {
		in     string
		module string
		opts   map[string]string
		err    string
	}{
		{in: `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cret";`,
			module: "org.apache.kafka.common.security.scram.ScramLoginModule", opts: map[string]string{"username": "alice", "password": "s3cret"}},
		{in: `org.apache.kafka.common.security.plain.PlainLoginModule required username=bob password="a \"quoted\" pass;word" ;`,
			module: "org.apache.kafka.common.security.plain.PlainLoginModule", opts: map[string]string{"username": "bob", "password": `a "quoted" pass;word`}},
		{in: "  M optional\n  username = \"x\"\n  password=\"\";  ", module: "M", opts: map[string]string{"username": "x", "password": ""}},
		{in: `x.requiredModule required username="r";`, module: "x.requiredModule", opts: map[string]string{"username": "r"}},
		{in: `M required username="alice"`, err: "ends with ';'"},
		{in: `M username="alice";`, err: "control flag"},
		{in: `M required username="alice;`, err: "unterminated quote"},
		{in: `M required username;`, err: "want key=value"},
		{in: `;`, err: "want '<LoginModule> required"},
	} {
		module, opts, err := ParseJAAS(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.module, module, tc.in)
		require.Equal(t, tc.opts, opts, tc.in)
	}
}

// TestParseClientSecurity: which protocols turn on TLS and SASL, and
// that an empty ssl.endpoint.identification.algorithm still checks the
// chain.
func TestParseClientSecurity(t *testing.T) {
	jaas := `org.apache.kafka.common.security.scram.ScramLoginModule required username="a" password="b";`
	for _, tc := range []struct {
		values    map[string]string
		tls, sasl bool
	}{
		{map[string]string{}, false, false},
		{map[string]string{"security.protocol": "ssl"}, true, false},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": jaas}, false, true},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas, "client.id": "ignored"}, true, true},
	} {
		s, err := ParseClientSecurity(tc.values)
		require.NoError(t, err, tc.values)
		require.Equal(t, tc.tls, s.TLS != nil, tc.values)
		require.Equal(t, tc.sasl, s.SASL != nil, tc.values)
	}
	s, err := ParseClientSecurity(map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""})
	require.NoError(t, err)
	require.True(t, s.TLS.InsecureSkipVerify, "no host name check")
	require.NotNil(t, s.TLS.VerifyConnection, "but the chain is still verified")
	_, err = ParseClientSecurity(map[string]string{"security.protocol": "SSL", "ssl.keystore.certificate.chain": "junk", "ssl.keystore.key": "junk"})
	require.ErrorContains(t, err, "ssl.keystore")
}
