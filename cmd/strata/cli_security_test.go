package main

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/sasl"
	"github.com/strata-log/strata/node"
)

// securedCLIProperties is a node with a PLAINTEXT listener whose
// User:ANONYMOUS is a super user (the operator's), a SASL_PLAINTEXT
// listener for SCRAM-SHA-512 and PLAIN, and the StandardAuthorizer.
const securedCLIProperties = `
listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS
connection.failed.authentication.delay.ms=10
`

// startSecuredCLINode starts a node configured by properties on dataDir.
func startSecuredCLINode(t *testing.T, dataDir, properties string) *node.Node {
	t.Helper()
	return startCLINode(t, func(cfg *node.Config) {
		path := filepath.Join(t.TempDir(), "server.properties")
		require.NoError(t, os.WriteFile(path, []byte(properties), 0o644))
		ignored, err := node.LoadConfigFile(cfg, path)
		require.NoError(t, err)
		require.Empty(t, ignored)
		cfg.LogDir = dataDir
	})
}

// writeFile writes content to a file of the test's and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// scramClientConfig is a --command-config file for user over
// SASL_PLAINTEXT with SCRAM-SHA-512.
func scramClientConfig(t *testing.T, user, password string) string {
	return writeFile(t, user+".properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="`+user+`" password="`+password+`";`+"\n")
}

// TestCLISecurityCommands: `strata user` makes SCRAM users an operator
// then grants with `strata acl`; the user reaches the SASL listener with
// --command-config and can do what its ACLs allow, no more; `strata
// quota` sets and removes quotas; bad input is a usage error.
func TestCLISecurityCommands(t *testing.T) {
	n := startSecuredCLINode(t, t.TempDir(), securedCLIProperties)
	admin := cliRunner{t: t, addr: n.Addr()}
	sasl := cliRunner{t: t, addr: n.ListenerAddr("SASL_PLAINTEXT")}

	// Users: alice from a password file, bob from stdin.
	out := admin.ok("", "user", "create", "alice", "--mechanism", "SCRAM-SHA-512", "--password-file", writeFile(t, "pw", "alice-secret\n"))
	require.Equal(t, "Created SCRAM-SHA-512 credential for user alice (4096 iterations).\n", out)
	admin.ok("bob-secret\n", "user", "create", "bob", "--mechanism", "SCRAM-SHA-256", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192")
	require.Equal(t, "USER   MECHANISM      ITERATIONS\n"+
		"alice  SCRAM-SHA-512  4096\n"+
		"bob    SCRAM-SHA-256  8192\n"+
		"bob    SCRAM-SHA-512  8192\n", admin.ok("", "user", "list"))
	require.Equal(t, "USER  MECHANISM      ITERATIONS\nbob   SCRAM-SHA-256  8192\nbob   SCRAM-SHA-512  8192\n",
		admin.ok("", "user", "list", "bob"))

	// Without ACLs alice authenticates but may not write.
	topic := topicName(t, "orders")
	admin.ok("", "topic", "create", topic)
	aliceConfig := scramClientConfig(t, "alice", "alice-secret")
	code, _, errOut := sasl.runIn(strings.NewReader("o-0\n"), "produce", "--topic", topic, "--command-config", aliceConfig, "--acks", "1")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "TOPIC_AUTHORIZATION_FAILED")

	out = admin.ok("", "acl", "add", "--allow-principal", "User:alice", "--operation", "Write", "--operation", "read",
		"--operation", "Describe", "--topic", topic, "--group", "etl")
	require.Equal(t, 6, strings.Count(out, "Added User:alice ALLOW"), out)
	out = admin.ok("", "acl", "list", "--topic", topic)
	require.Equal(t, "RESOURCE-TYPE  NAME  PATTERN  PRINCIPAL   HOST  OPERATION  PERMISSION\n"+
		"TOPIC          "+topic+"  LITERAL  User:alice  *     READ       ALLOW\n"+
		"TOPIC          "+topic+"  LITERAL  User:alice  *     WRITE      ALLOW\n"+
		"TOPIC          "+topic+"  LITERAL  User:alice  *     DESCRIBE   ALLOW\n",
		strings.ReplaceAll(out, strings.Repeat(" ", len(topic)-4)+"PATTERN", "PATTERN"))
	out = admin.ok("", "acl", "list", "--principal", "User:alice")
	require.Equal(t, 7, strings.Count(out, "\n"), "every ACL of alice, of both resources:\n%s", out)
	require.Contains(t, out, "GROUP")
	require.Equal(t, 1, strings.Count(admin.ok("", "acl", "list", "--principal", "User:bob"), "\n"), "bob has none")

	// alice writes and reads over SASL with her command config.
	sasl.ok("o-1\no-2\n", "produce", "--topic", topic, "--command-config", aliceConfig, "--acks", "1")
	require.Equal(t, "o-1\no-2\n", sasl.ok("", "consume", "--topic", topic, "--from-beginning", "--max-messages", "2",
		"--command-config", aliceConfig))
	code, _, errOut = sasl.run("topic", "list", "--command-config", scramClientConfig(t, "alice", "guess"))
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "SASL_AUTHENTICATION_FAILED")

	// Removing WRITE takes effect at once.
	out = admin.ok("", "acl", "remove", "--allow-principal", "User:alice", "--operation", "Write", "--topic", topic)
	require.Contains(t, out, "Removed 1 ACLs:")
	code, _, errOut = sasl.runIn(strings.NewReader("o-3\n"), "produce", "--topic", topic, "--command-config", aliceConfig, "--acks", "1")
	require.Equal(t, exitError, code, "o-3 must not be written")
	require.Contains(t, errOut, "TOPIC_AUTHORIZATION_FAILED")
	require.Contains(t, admin.ok("", "acl", "remove", "--topic", topic), "Removed 2 ACLs:", "without a principal: every ACL of the topic")
	require.NotContains(t, admin.ok("", "acl", "list"), "TOPIC ", "the group's ACLs stay, the topic's are gone")

	// kafka-acls.sh's --producer and --consumer.
	out = admin.ok("", "acl", "add", "--allow-principal", "User:bob", "--producer", "--idempotent", "--transactional-id", "tx-bob", "--topic", topic)
	require.Equal(t, 6, strings.Count(out, "Added User:bob ALLOW"), "Write, Describe, Create on the topic; Write, Describe on the transactional id; IdempotentWrite on the cluster:\n%s", out)
	require.Contains(t, out, "IDEMPOTENT_WRITE on CLUSTER:LITERAL:kafka-cluster")
	out = admin.ok("", "acl", "add", "--allow-principal", "User:bob", "--consumer", "--topic", topic, "--group", "bob-g")
	require.Equal(t, 3, strings.Count(out, "Added User:bob ALLOW"), "Read, Describe on the topic, Read on the group:\n%s", out)
	out = admin.ok("", "acl", "remove", "--allow-principal", "User:bob", "--consumer", "--topic", topic, "--group", "bob-g")
	require.Contains(t, out, "Removed 3 ACLs:", "Describe on the topic goes too, as in kafka-acls.sh")
	out = admin.ok("", "acl", "list", "--principal", "User:bob")
	require.Equal(t, 6, strings.Count(out, "\n"), "bob keeps the producer's ACLs but Describe on the topic:\n%s", out)

	// Quotas, by user, by user and client id, and the <default> user.
	require.Equal(t, "Altered the quotas of user=alice.\n", admin.ok("", "quota", "alter", "--user", "alice",
		"--add", "producer_byte_rate=1048576", "--add", "consumer_byte_rate=2048"))
	admin.ok("", "quota", "alter", "--user", "alice", "--client-id", "etl", "--add", "request_percentage=50")
	admin.ok("", "quota", "alter", "--user-default", "--add", "producer_byte_rate=4096")
	admin.ok("", "quota", "alter", "--user", "alice", "--delete", "consumer_byte_rate")
	require.Equal(t, "ENTITY                    QUOTA               VALUE\n"+
		"user=<default>            producer_byte_rate  4096\n"+
		"user=alice                producer_byte_rate  1048576\n"+
		"user=alice,client-id=etl  request_percentage  50\n", admin.ok("", "quota", "describe"))
	require.Equal(t, "ENTITY      QUOTA               VALUE\nuser=alice  producer_byte_rate  1048576\n",
		admin.ok("", "quota", "describe", "--user", "alice"))
	require.Equal(t, "ENTITY          QUOTA               VALUE\nuser=<default>  producer_byte_rate  4096\n",
		admin.ok("", "quota", "describe", "--user-default"))

	// Deleting a credential; deleting it again is RESOURCE_NOT_FOUND.
	require.Equal(t, "Deleted SCRAM-SHA-512 credential of user alice.\n", admin.ok("", "user", "delete", "alice", "--mechanism", "SCRAM-SHA-512"))
	require.NotContains(t, admin.ok("", "user", "list"), "alice")
	code, _, errOut = admin.run("user", "delete", "alice", "--mechanism", "SCRAM-SHA-512")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "RESOURCE_NOT_FOUND")
}

// TestCLISecurityUsageErrors: bad command lines of user, acl and quota
// exit 2 with a message naming the mistake, before any request.
func TestCLISecurityUsageErrors(t *testing.T) {
	r := cliRunner{t: t, addr: "127.0.0.1:1"} // nothing listens: no request may be needed
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"pw\n", []string{"user", "create", "alice"}, "--mechanism is required"},
		{"pw\n", []string{"user", "create", "alice", "--mechanism", "PLAIN"}, "want SCRAM-SHA-256 or SCRAM-SHA-512"},
		{"pw\n", []string{"user", "create", "--mechanism", "SCRAM-SHA-512"}, "give exactly one user name"},
		{"pw\n", []string{"user", "create", "alice", "--mechanism", "SCRAM-SHA-512", "--iterations", "100"}, "--iterations must be 4096 to 16384"},
		{"", []string{"user", "create", "alice", "--mechanism", "SCRAM-SHA-512"}, "the password is empty"},
		{"", []string{"user", "create", "alice", "--mechanism", "SCRAM-SHA-512", "--password", "x"}, "flag provided but not defined: -password"},
		{"", []string{"user", "create", "alice", "--mechanism", "SCRAM-SHA-512", "--password-file", "/nonexistent/pw"}, "--password-file"},
		{"", []string{"user", "delete", "alice"}, "--mechanism is required"},
		{"", []string{"acl", "add", "--allow-principal", "User:alice", "--operation", "Fly", "--topic", "t"}, `unknown --operation "Fly"`},
		{"", []string{"acl", "add", "--allow-principal", "User:alice", "--operation", "Read"}, "give a resource"},
		{"", []string{"acl", "add", "--operation", "Read", "--topic", "t"}, "give --allow-principal or --deny-principal"},
		{"", []string{"acl", "add", "--allow-principal", "alice", "--topic", "t"}, "want TYPE:NAME"},
		{"", []string{"acl", "add", "--deny-host", "10.0.0.1", "--allow-principal", "User:a", "--topic", "t"}, "--deny-host needs --deny-principal"},
		{"", []string{"acl", "add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"}, "want literal or prefixed"},
		{"", []string{"acl", "remove", "--operation", "Read"}, "give a resource"},
		{"", []string{"acl", "add", "--allow-principal", "User:a", "--producer", "--group", "g"}, "need --topic"},
		{"", []string{"acl", "add", "--allow-principal", "User:a", "--consumer", "--topic", "t"}, "--consumer needs --group"},
		{"", []string{"acl", "add", "--allow-principal", "User:a", "--producer", "--operation", "Read", "--topic", "t"}, "--operation cannot go with --producer"},
		{"", []string{"acl", "add", "--allow-principal", "User:a", "--idempotent", "--topic", "t"}, "--idempotent goes with --producer"},
		{"", []string{"acl", "remove", "--consumer", "--topic", "t", "--group", "g"}, "need --allow-principal or --deny-principal"},
		{"", []string{"acl", "list", "--resource-pattern-type", "fuzzy"}, "want literal, prefixed, any or match"},
		{"", []string{"quota", "alter", "--add", "producer_byte_rate=1"}, "give an entity"},
		{"", []string{"quota", "alter", "--user", "alice"}, "give --add key=value or --delete key"},
		{"", []string{"quota", "alter", "--user", "alice", "--add", "producer_byte_rate=fast"}, "must be a positive number"},
		{"", []string{"quota", "alter", "--user", "alice", "--user-default", "--add", "producer_byte_rate=1"}, "not both"},
		{"", []string{"quota", "alter", "--ip", "10.0.0.1", "--user", "a", "--add", "connection_creation_rate=1"}, "cannot be combined"},
		{"", []string{"topic", "list", "--command-config", "/nonexistent.properties"}, "--command-config"},
	} {
		code, _, errOut := r.runIn(strings.NewReader(tc.stdin), tc.args...)
		require.Equal(t, exitUsage, code, "strata %q: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "strata %q", tc.args)
	}
}

// TestCommandConfigErrors: a client properties file that cannot be used
// is a usage error naming the key.
func TestCommandConfigErrors(t *testing.T) {
	r := cliRunner{t: t, addr: "127.0.0.1:1"}
	for _, tc := range []struct{ props, want string }{
		{"security.protocol=KERBEROS\n", "security.protocol=KERBEROS"},
		{"security.protocol=SASL_PLAINTEXT\n", "sasl.mechanism is required"},
		{"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n", "sasl.jaas.config is required"},
		{"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\" password=\"b\";\n", "needs org.apache.kafka.common.security.scram.ScramLoginModule"},
		{"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\" password=\"b\"\n", "ends with ';'"},
		{"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\nsasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required username=\"a\";\n", "needs org.apache.kafka.common.security.scram.ScramLoginModule"},
		{"security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=/x.jks\n", "only PEM stores"},
		{"security.protocol=SSL\nssl.truststore.location=/nonexistent.pem\n", "ssl.truststore.location"},
	} {
		path := writeFile(t, "client.properties", tc.props)
		code, _, errOut := r.run("topic", "list", "--command-config", path)
		require.Equal(t, exitUsage, code, "%s: %s", tc.props, errOut)
		require.Contains(t, errOut, tc.want, tc.props)
	}
}

// TestStorageFormatAddScram: `strata storage format --add-scram` gives a
// new cluster its first users (KIP-900): a node started on the formatted
// directory authenticates them over SASL at once, with a password given
// in clear (salted at format time) and with a salted password computed
// elsewhere; the directory keeps no password. Formatting again is
// refused unless --ignore-formatted; a directory never formatted still
// starts as before (TestCLISecurityCommands).
func TestStorageFormatAddScram(t *testing.T) {
	dataDir := t.TempDir()
	props := strings.Replace(securedCLIProperties, "super.users=User:ANONYMOUS", "super.users=User:ANONYMOUS;User:admin;User:ops", 1)
	config := writeFile(t, "server.properties", props+"log.dirs="+dataDir+"\n")
	r := cliRunner{t: t}
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := commands["storage"].streams(context.Background(), args, strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	id, err := node.NewClusterID(crand.Reader)
	require.NoError(t, err)
	salt := []byte("a salt of ops's own")
	salted, err := sasl.SaltedPassword(sasl.ScramSHA256, "ops-secret", salt, 8192)
	require.NoError(t, err)
	b64 := base64.StdEncoding.EncodeToString
	code, out, errOut := run("format", "--cluster-id", id, "--config", config,
		"--add-scram", `SCRAM-SHA-512=[name=admin,password="adm,in-secret"]`,
		"--add-scram", "SCRAM-SHA-256=[name=ops,salt="+b64(salt)+",saltedpassword="+b64(salted)+",iterations=8192]")
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, "with 2 SCRAM credentials")
	files, err := os.ReadDir(dataDir)
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dataDir, f.Name()))
		require.NoError(t, err)
		require.NotContains(t, string(data), "adm,in-secret", "%s holds no password", f.Name())
	}

	code, _, errOut = run("format", "--cluster-id", id, "--config", config)
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "already formatted")
	code, out, _ = run("format", "--cluster-id", id, "--config", config, "--ignore-formatted")
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "already formatted")

	n := startSecuredCLINode(t, dataDir, props)
	r.addr = n.ListenerAddr("SASL_PLAINTEXT")
	adminConfig := scramClientConfig(t, "admin", "adm,in-secret")
	opsConfig := writeFile(t, "ops.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="ops" password="ops-secret";`+"\n")
	want := "USER   MECHANISM      ITERATIONS\nadmin  SCRAM-SHA-512  4096\nops    SCRAM-SHA-256  8192\n"
	require.Eventually(t, func() bool {
		code, out, _ := r.run("user", "list", "--command-config", adminConfig)
		return code == exitOK && out == want
	}, 10*time.Second, 50*time.Millisecond, "admin authenticates over SASL and sees both bootstrap users")
	require.Equal(t, want, r.ok("", "user", "list", "--command-config", opsConfig), "ops authenticates with the salted password's credential")
	code, _, errOut = r.run("user", "list", "--command-config", scramClientConfig(t, "admin", "admin-secret"))
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "SASL_AUTHENTICATION_FAILED")
	require.Equal(t, id, n.ClusterID())
}

// TestStorageFormatUsageErrors: a malformed --add-scram or cluster id is
// a usage error and formats nothing.
func TestStorageFormatUsageErrors(t *testing.T) {
	dataDir := t.TempDir()
	config := writeFile(t, "server.properties", "log.dirs="+dataDir+"\n")
	id, err := node.NewClusterID(crand.Reader)
	require.NoError(t, err)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", config}, "--cluster-id is required"},
		{[]string{"--cluster-id", "not-an-id", "--config", config}, "--cluster-id"},
		{[]string{"--add-scram", "SCRAM-SHA-512=name=alice,password=x"}, "want MECHANISM=[name=...,password=...]"},
		{[]string{"--add-scram", "PLAIN=[name=alice,password=x]"}, "unknown SCRAM mechanism"},
		{[]string{"--add-scram", "SCRAM-SHA-512=[password=x]"}, "name is required"},
		{[]string{"--add-scram", "SCRAM-SHA-512=[name=alice]"}, "give password (or salt and saltedpassword)"},
		{[]string{"--add-scram", "SCRAM-SHA-512=[name=alice,password=x,iterations=10]"}, "iterations=10 must be 4096 to 16384"},
		{[]string{"--add-scram", "SCRAM-SHA-512=[name=alice,pasword=x]"}, `unknown key "pasword"`},
		{[]string{"--add-scram", "SCRAM-SHA-512=[name=alice,saltedpassword=AAAA]"}, "saltedpassword needs its salt"},
		{[]string{"--add-scram", "SCRAM-SHA-512=[name=alice,salt=AAAA,saltedpassword=AAAA]"}, "Salted password must be 64 bytes"},
		{[]string{"--add-scram", "SCRAM-SHA-512=[name=a,password=x]", "--add-scram", "SCRAM-SHA-512=[name=a,password=y]"}, "a has two SCRAM-SHA-512 credentials"},
	} {
		args := append([]string{"format"}, tc.args...)
		if !slices.Contains(tc.args, "--cluster-id") && !slices.Contains(tc.args, config) {
			args = append(args, "--cluster-id", id, "--config", config)
		}
		var out, errOut bytes.Buffer
		code := commands["storage"].streams(context.Background(), args, strings.NewReader(""), &out, &errOut)
		require.Equal(t, exitUsage, code, "%q: %s", args, errOut.String())
		require.Contains(t, errOut.String(), tc.want, "%q", args)
	}
	_, err = os.Stat(filepath.Join(dataDir, node.MetaPropertiesFile))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing was formatted")
}
