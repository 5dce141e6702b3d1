package node

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/connlimit"
	"github.com/strata-log/strata/core/group"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/server"
)

// base is a Config's listener and data directory keys, for tests.
type base struct {
	NodeID                                int32
	Listener, AdvertisedListener, LogDir  string
	SocketRequestMaxBytes, MaxConnections int
}

func baseOf(c Config) base {
	return base{NodeID: c.NodeID, Listener: c.Listener, AdvertisedListener: c.AdvertisedListener,
		LogDir: c.LogDir, SocketRequestMaxBytes: c.SocketRequestMaxBytes, MaxConnections: c.BrokerListener.MaxConnections}
}

// mustSet sets the key, value pairs of kv on cfg in turn: each key must
// be known and its value valid.
func mustSet(t *testing.T, cfg *Config, kv ...string) {
	t.Helper()
	for i := 0; i < len(kv); i += 2 {
		known, err := cfg.Set(kv[i], kv[i+1])
		require.True(t, known, kv[i])
		require.NoError(t, err, kv[i])
	}
}

// requireInvalid sets kv on cfg as mustSet does and requires Validate
// to fail with an error that contains want.
func requireInvalid(t *testing.T, cfg *Config, want string, kv ...string) {
	t.Helper()
	mustSet(t, cfg, kv...)
	require.ErrorContains(t, cfg.Validate(), want)
}

func TestConfigSetAndValidate(t *testing.T) {
	cfg := DefaultConfig()
	require.NoError(t, cfg.Validate())
	require.Equal(t, base{NodeID: 1, Listener: "127.0.0.1:9092", LogDir: "./data",
		SocketRequestMaxBytes: 104857600, MaxConnections: 10000}, baseOf(cfg))
	require.Equal(t, []kraft.Voter{{ID: 1, Addr: "127.0.0.1:9093"}}, cfg.voters())
	require.Equal(t, "127.0.0.1:9093", cfg.controllerListen())

	mustSet(t, &cfg,
		"node.id", "12",
		"listeners", "plaintext://[::1]:0",
		"advertised.listeners", "PLAINTEXT://kafka.example:19092",
		"log.dirs", " /srv/strata ",
		"socket.request.max.bytes", "1024",
		"max.connections", "50",
	)
	require.Equal(t, base{NodeID: 12, Listener: "[::1]:0", AdvertisedListener: "kafka.example:19092",
		LogDir: "/srv/strata", SocketRequestMaxBytes: 1024, MaxConnections: 50}, baseOf(cfg))
	require.ErrorContains(t, cfg.Validate(), "needs the controller listener CONTROLLER://host:port in listeners",
		"a combined node's listeners must name the controller listener, as in Kafka")
	mustSet(t, &cfg, "listeners", "plaintext://[::1]:0,CONTROLLER://[::1]:19093")
	require.NoError(t, cfg.Validate())
	mustSet(t, &cfg, "broker.session.timeout.ms", "1500")
	require.ErrorContains(t, cfg.Validate(), `broker.session.timeout.ms="1500": want at least 4000 ms`, "shorter than two heartbeats")
	mustSet(t, &cfg, "broker.session.timeout.ms", "4000")
	require.NoError(t, cfg.Validate())
	requireInvalid(t, &cfg, "node.id 12 is not a voter", "controller.quorum.voters", "1@[::1]:19093")
	mustSet(t, &cfg, "controller.quorum.voters", "12@[::1]:19093")
	require.NoError(t, cfg.Validate())

	known, err := cfg.Set("num.network.threads", "3")
	require.False(t, known)
	require.NoError(t, err)

	bad := map[string]string{
		"node.id":                                 "-1",
		"listeners":                               "SSL://127.0.0.1:9093,SSL://127.0.0.1:9094",
		"advertised.listeners":                    "PLAINTEXT://a:1,PLAINTEXT://b:2",
		"log.dirs":                                "/a,/b",
		"log.dir":                                 "",
		"socket.request.max.bytes":                "0",
		"max.connections":                         "0",
		"process.roles":                           "broker,observer",
		"controller.quorum.fetch.timeout.ms":      "0",
		"controller.quorum.election.timeout.ms":   "soon",
		"controller.quorum.voters":                "1-127.0.0.1:9093",
		"controller.listener.names":               "PLAINTEXT",
		"metrics.listener":                        "7071",
		"strata.metrics.enable":                   "yes",
		"strata.debug.pprof.enable":               "1",
		"strata.metrics.partition.enable":         "off",
		"replica.lag.time.max.ms":                 "0",
		"broker.session.timeout.ms":               "forever",
		"auto.leader.rebalance.enable":            "yes",
		"leader.imbalance.check.interval.seconds": "0",
	}
	for key, value := range bad {
		_, err := cfg.Set(key, value)
		require.ErrorIs(t, err, ErrInvalidConfig, key)
		require.ErrorContains(t, err, key+"=", "the error names the key")
	}
	_, err = cfg.Set("listeners", "PLAINTEXT://127.0.0.1:99999")
	require.ErrorContains(t, err, "bad port")
	_, err = cfg.Set("listeners", "PLAINTEXT://no-port")
	require.ErrorIs(t, err, ErrInvalidConfig)

	// 0.0.0.0 can be bound but not advertised, as in Kafka.
	wild := DefaultConfig()
	requireInvalid(t, &wild, "advertised.listeners", "listeners", "PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093")
	mustSet(t, &wild, "advertised.listeners", "PLAINTEXT://10.1.2.3:9092")
	require.NoError(t, wild.Validate())
}

func TestLoadConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	require.NoError(t, os.WriteFile(path, []byte(
		"process.roles=broker,controller\nnode.id=5\nlisteners=PLAINTEXT://127.0.0.1:0\nlog.dirs=/tmp/x\nnum.io.threads=8\n"), 0o644))
	cfg := DefaultConfig()
	ignored, err := LoadConfigFile(&cfg, path)
	require.NoError(t, err)
	require.Equal(t, []string{"num.io.threads"}, ignored)
	require.Equal(t, int32(5), cfg.NodeID)
	require.Equal(t, "127.0.0.1:0", cfg.Listener)

	require.NoError(t, os.WriteFile(path, []byte("# ok\nnode.id=abc\n"), 0o644))
	_, err = LoadConfigFile(&cfg, path)
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "line 2")
	require.ErrorContains(t, err, "node.id")

	_, err = LoadConfigFile(&cfg, filepath.Join(t.TempDir(), "missing.properties"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestControllerListenerConfig(t *testing.T) {
	cfg := DefaultConfig()
	mustSet(t, &cfg, "listeners", "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:19093")
	require.NoError(t, cfg.Validate())
	require.Equal(t, "127.0.0.1:19093", cfg.controllerListen())

	requireInvalid(t, &cfg, "listeners", "listeners", "PLAINTEXT://127.0.0.1:9092,CTRL://127.0.0.1:19093")
	mustSet(t, &cfg, "controller.listener.names", "CTRL")
	require.NoError(t, cfg.Validate())

	// Valid on its own (a controller-only node's listeners), but not for
	// the default combined roles.
	requireInvalid(t, &cfg, "process.roles=broker,controller needs a client listener, e.g. PLAINTEXT://host:port", "listeners", "CTRL://127.0.0.1:9093")
}

func TestProcessRoles(t *testing.T) {
	voters := "1@127.0.0.1:19093,2@127.0.0.1:29093,3@127.0.0.1:39093"

	t.Run("any order, normalized", func(t *testing.T) {
		for _, roles := range []string{"broker,controller", "controller,broker", " Controller , BROKER "} {
			cfg := DefaultConfig()
			mustSet(t, &cfg, "process.roles", roles)
			require.Equal(t, []string{"broker", "controller"}, cfg.Roles(), roles)
			require.True(t, cfg.IsBroker())
			require.True(t, cfg.IsController())
		}
		cfg := DefaultConfig()
		_, err := cfg.Set("process.roles", "broker,broker")
		require.ErrorContains(t, err, "given twice")
		_, err = cfg.Set("process.roles", " , ")
		require.ErrorIs(t, err, ErrInvalidConfig)
	})

	t.Run("combined defaults are make run", func(t *testing.T) {
		cfg := DefaultConfig()
		require.NoError(t, cfg.Validate())
		require.Equal(t, "127.0.0.1:9092", cfg.Listener)
		require.Equal(t, "127.0.0.1:9093", cfg.controllerListen())
		require.Equal(t, "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", DefaultListeners)
		q := cfg.Quorum.Quorum
		require.Equal(t, time.Second, q.ElectionTimeout)
		require.Equal(t, 2*time.Second, q.FetchTimeout)
	})

	t.Run("controller-only", func(t *testing.T) {
		cfg := DefaultConfig()
		mustSet(t, &cfg, "process.roles", "controller", "node.id", "2", "controller.quorum.voters", voters,
			"listeners", "CONTROLLER://127.0.0.1:29093")
		require.NoError(t, cfg.Validate())
		require.Equal(t, "127.0.0.1:29093", cfg.controllerListen())

		// With listeners unset, the default is the controller listener
		// alone.
		def := DefaultConfig()
		mustSet(t, &def, "process.roles", "controller")
		require.NoError(t, def.Validate())

		requireInvalid(t, &cfg, "a controller-only node (process.roles=controller) has only the controller listener", "listeners", "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:29093")
		requireInvalid(t, &cfg, "node.id 4 is not a voter; with process.roles=controller it must be", "listeners", "CONTROLLER://127.0.0.1:29093", "node.id", "4")
		requireInvalid(t, &cfg, "needs the controller listener CTRL://host:port in listeners", "node.id", "2", "controller.listener.names", "CTRL")
		requireInvalid(t, &cfg, "needs the controller listener CTRL://host:port in listeners", "listeners", "PLAINTEXT://127.0.0.1:9092")
	})

	t.Run("broker-only", func(t *testing.T) {
		cfg := DefaultConfig()
		requireInvalid(t, &cfg, "a broker-only node (process.roles=broker) needs the controller quorum's voters", "process.roles", "broker", "node.id", "4")
		mustSet(t, &cfg, "controller.quorum.voters", voters)
		require.NoError(t, cfg.Validate(), "listeners unset: the default is the client listener alone")
		mustSet(t, &cfg, "listeners", "PLAINTEXT://127.0.0.1:49092")
		require.NoError(t, cfg.Validate())

		requireInvalid(t, &cfg, "must not have the controller listener CONTROLLER in listeners", "listeners", "PLAINTEXT://127.0.0.1:49092,CONTROLLER://127.0.0.1:49093")
		requireInvalid(t, &cfg, "node.id 3 is a voter, so its process.roles must include controller", "listeners", "PLAINTEXT://127.0.0.1:49092", "node.id", "3")
		requireInvalid(t, &cfg, "must not have the controller listener", "node.id", "4", "listeners", "CONTROLLER://127.0.0.1:49093")
		mustSet(t, &cfg, "controller.listener.names", "CONTROLLER", "listeners", "PLAINTEXT://127.0.0.1:49092")
		cfg.Listener = ""
		require.ErrorContains(t, cfg.Validate(), "needs a client listener, e.g. PLAINTEXT://host:port")
	})

	t.Run("quorum timeouts", func(t *testing.T) {
		cfg := DefaultConfig()
		mustSet(t, &cfg, "controller.quorum.election.timeout.ms", "150", "controller.quorum.fetch.timeout.ms", "600")
		require.NoError(t, cfg.Validate())
		q := cfg.Quorum.Quorum
		require.Equal(t, 150*time.Millisecond, q.ElectionTimeout)
		require.Equal(t, 600*time.Millisecond, q.FetchTimeout)
		requireInvalid(t, &cfg, "must exceed the leader's fetch max wait (500 ms)", "controller.quorum.fetch.timeout.ms", "500")
		_, err := cfg.Set("controller.quorum.election.timeout.ms", "-5")
		require.ErrorContains(t, err, "controller.quorum.election.timeout.ms=")
		_, err = cfg.Set("controller.quorum.fetch.timeout.ms", "99999999999")
		require.ErrorIs(t, err, ErrInvalidConfig)
	})
}

func TestControllerPortMismatchWarning(t *testing.T) {
	cfg := DefaultConfig()
	mustSet(t, &cfg, "controller.quorum.voters", "1@127.0.0.1:19093")
	mustSet(t, &cfg, "listeners", "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093")
	require.Contains(t, controllerPortMismatch(cfg), "is not on this node's port")
	mustSet(t, &cfg, "listeners", "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:19093")
	require.Empty(t, controllerPortMismatch(cfg))
}

// TestAnonymousNodeLinksWarning: with an authorizer, a PLAINTEXT
// controller listener, or an SSL one not requiring client certificates,
// is warned about at start; an SSL one requiring them, or no authorizer,
// is not.
func TestAnonymousNodeLinksWarning(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   []string
		want string
	}{
		{"no authorizer", nil, ""},
		{"PLAINTEXT", []string{"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}, "is PLAINTEXT"},
		{"SSL without client auth", []string{"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"}, "does not require client certificates"},
		{"SSL requiring client certificates", []string{"authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL", "ssl.truststore.location", "/etc/strata/ca.pem",
			"listener.name.controller.ssl.client.auth", "required"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			for i := 0; i < len(tc.kv); i += 2 {
				mustSet(t, &cfg, tc.kv[i], tc.kv[i+1])
			}
			sec, err := cfg.controllerSecurity()
			require.NoError(t, err)
			got := anonymousNodeLinks(cfg, sec)
			if tc.want == "" {
				require.Empty(t, got)
			} else {
				require.Contains(t, got, tc.want)
			}
		})
	}
}

func TestTopicDefaultKeys(t *testing.T) {
	cfg := DefaultConfig()
	require.Empty(t, cfg.Partitions.StaticTopicDefaults, "nothing set: the table defaults apply")
	require.False(t, cfg.BrokerListener.AutoTopicCreationDisabled)
	require.Equal(t, int32(1), cfg.BrokerListener.DefaultNumPartitions)

	// Kafka's precedence: ms over minutes over hours, whatever the order.
	mustSet(t, &cfg, "log.retention.hours", "2")
	require.Equal(t, "7200000", cfg.Partitions.StaticTopicDefaults["retention.ms"])
	mustSet(t, &cfg, "log.retention.ms", "1234", "log.retention.minutes", "3")
	require.Equal(t, "1234", cfg.Partitions.StaticTopicDefaults["retention.ms"])
	cfg = DefaultConfig()
	mustSet(t, &cfg, "log.retention.hours", "2", "log.retention.minutes", "3")
	require.Equal(t, "180000", cfg.Partitions.StaticTopicDefaults["retention.ms"])
	mustSet(t, &cfg, "log.retention.minutes", "-1")
	require.Equal(t, "-1", cfg.Partitions.StaticTopicDefaults["retention.ms"], "negative: forever")
	mustSet(t, &cfg, "log.roll.hours", "1", "log.segment.bytes", "4096", "log.cleanup.policy", "compact",
		"message.max.bytes", "2000", "min.insync.replicas", "2", "num.partitions", "6", "auto.create.topics.enable", "FALSE",
		"log.retention.check.interval.ms", "1000", "producer.id.expiration.ms", "60000",
		"queued.max.request.bytes", "1048576", "max.incremental.fetch.session.cache.slots", "0")
	require.NoError(t, cfg.Validate())
	require.Equal(t, map[string]string{
		"retention.ms": "-1", "segment.ms": "3600000", "segment.bytes": "4096", "cleanup.policy": "compact",
		"max.message.bytes": "2000", "min.insync.replicas": "2",
	}, cfg.Partitions.StaticTopicDefaults)
	bc := cfg.BrokerListener
	bc.StaticConfigs = cfg.brokerStaticConfigs()
	require.Equal(t, -1, bc.MaxFetchSessions, "0 slots: no sessions")
	require.Equal(t, 1<<20, bc.MaxInflightRequestBytes)
	require.True(t, bc.AutoTopicCreationDisabled)
	require.Equal(t, int32(6), bc.DefaultNumPartitions)
	pc := cfg.Partitions
	require.Equal(t, time.Second, pc.RetentionCheckInterval)
	require.Equal(t, time.Minute, pc.Producers.ExpirationTime)
	var seg, policy bool
	for _, sc := range bc.StaticConfigs {
		switch sc.Name {
		case "log.segment.bytes":
			seg = true
			require.True(t, sc.Set)
			require.Equal(t, "4096", sc.Value)
			require.Equal(t, "1073741824", sc.Default)
		case "log.retention.ms":
			policy = true
			require.False(t, sc.Set)
			require.Empty(t, sc.Default, "Kafka's null")
		}
	}
	require.True(t, seg && policy)
}

func TestTopicDefaultKeysRefuseBadValues(t *testing.T) {
	cases := []struct{ key, value, want string }{
		{"log.segment.bytes", "20", "log.segment.bytes"}, // the controller takes 14; a segment needs a batch header
		{"log.segment.bytes", "big", "not an int"},
		{"log.cleanup.policy", "shred", "not one of"},
		{"log.cleaner.min.cleanable.ratio", "1.5", "log.cleaner.min.cleanable.ratio"},
		{"min.insync.replicas", "0", "min.insync.replicas"},
		{"log.message.timestamp.type", "Now", "CreateTime"},
		{"log.retention.hours", "x", "not an int"},
		{"log.roll.hours", "0", "[1,...]"},
		{"num.partitions", "0", "[1,...,9999]"},
		{"default.replication.factor", "0", "[1,...]"},
		{"auto.create.topics.enable", "yes", "true or false"},
		{"queued.max.request.bytes", "-1", "[1,...,34359738352]"},
		{"max.incremental.fetch.session.cache.slots", "-2", "[0,...]"},
		{"log.retention.check.interval.ms", "0", "[1,...,86400000]"},
		{"producer.id.expiration.ms", "0", "[1,...]"},
	}
	for _, tc := range cases {
		cfg := DefaultConfig()
		known, err := cfg.Set(tc.key, tc.value)
		require.True(t, known, tc.key)
		require.ErrorIs(t, err, ErrInvalidConfig, "%s=%s", tc.key, tc.value)
		require.ErrorContains(t, err, tc.key)
		require.ErrorContains(t, err, tc.want)
	}
	// A roll in hours past what segment.ms allows is caught once converted.
	cfg := DefaultConfig()
	mustSet(t, &cfg, "log.roll.ms", "1")
	require.NoError(t, cfg.Validate())
}

// TestConsumerGroupKeys: the consumer protocol's keys reach the
// coordinator's config, and their bounds hold.
func TestConsumerGroupKeys(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LogDir = t.TempDir()
	mustSet(t, &cfg,
		"group.consumer.assignors", "range, uniform",
		"group.consumer.min.session.timeout.ms", "10000",
		"group.consumer.session.timeout.ms", "10000",
		"group.consumer.heartbeat.interval.ms", "6000",
		"group.consumer.max.size", "3",
	)
	require.NoError(t, cfg.Validate())
	gc := cfg.BrokerListener.Groups.Coordinator
	require.Equal(t, []string{"range", "uniform"}, gc.ConsumerAssignors)
	require.Equal(t, 10*time.Second, gc.ConsumerSessionTimeout)
	require.Equal(t, 6*time.Second, gc.ConsumerHeartbeatInterval)
	require.Equal(t, 3, gc.ConsumerMaxSize)

	for _, v := range []string{"sticky", "range,range", ""} {
		_, err := cfg.Set("group.consumer.assignors", v)
		require.ErrorIs(t, err, ErrInvalidConfig, v)
	}
	require.Equal(t, group.MigrationBidirectional, gc.MigrationPolicy, "Kafka 4's default")
	for v, want := range map[string]group.MigrationPolicy{"disabled": group.MigrationDisabled, "Upgrade": group.MigrationUpgrade,
		"downgrade": group.MigrationDowngrade, "BIDIRECTIONAL": group.MigrationBidirectional} {
		_, err := cfg.Set("group.consumer.migration.policy", v)
		require.NoError(t, err, v)
		require.Equal(t, want, cfg.BrokerListener.Groups.Coordinator.MigrationPolicy, v)
	}
	_, err := cfg.Set("group.consumer.migration.policy", "sideways")
	require.ErrorIs(t, err, ErrInvalidConfig)
	requireInvalid(t, &cfg, "group.consumer.session.timeout.ms", "group.consumer.session.timeout.ms", "90000")
	mustSet(t, &cfg, "group.consumer.session.timeout.ms", "45000")
	requireInvalid(t, &cfg, "group.consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms", "1000")
}

// TestConnectionBoundKeys: the keys of issue 22's connection bounds parse
// as Kafka's do, are checked as a whole, and reach the listeners' limits
// with host names of the overrides resolved.
func TestConnectionBoundKeys(t *testing.T) {
	cfg := DefaultConfig()
	limits, err := cfg.connLimits()
	require.NoError(t, err)
	require.Equal(t, connlimit.Config{MaxConnections: 10000, MaxIdle: 10 * time.Minute}, limits,
		"Kafka's defaults: per-ip unbounded, idle 10 minutes")

	mustSet(t, &cfg,
		server.KeyConnectionsMaxIdleMs, "5000",
		server.KeyMaxConnectionsPerIP, "3",
		server.KeyMaxConnectionsPerIPOverrides, " localhost:7 , 10.1.2.3:0,::1:9",
		KeySocketRequestReadTimeoutMs, "1500",
		KeySocketRequestMinBytesPerSec, "100",
	)
	require.NoError(t, cfg.Validate())
	require.Equal(t, int64(1500), cfg.SocketRequestReadTimeoutMs)
	require.Equal(t, 100, cfg.SocketRequestMinBytesPerSec)
	limits, err = cfg.connLimits()
	require.NoError(t, err)
	require.Equal(t, 3, limits.MaxPerHost)
	require.Equal(t, 5*time.Second, limits.MaxIdle)
	require.Equal(t, 7, limits.PerHostOverrides["127.0.0.1"], "localhost resolved: %v", limits.PerHostOverrides)
	require.Equal(t, 0, limits.PerHostOverrides["10.1.2.3"])
	require.Equal(t, 9, limits.PerHostOverrides["::1"])

	// Kafka's 0: only the overrides' hosts, and only with overrides.
	mustSet(t, &cfg, server.KeyMaxConnectionsPerIP, "0")
	limits, err = cfg.connLimits()
	require.NoError(t, err)
	require.Negative(t, limits.MaxPerHost)
	requireInvalid(t, &cfg, "max.connections.per.ip", server.KeyMaxConnectionsPerIPOverrides, "")

	for key, value := range map[string]string{
		server.KeyMaxConnectionsPerIPOverrides: "hostwithoutcount",
		server.KeyMaxConnectionsPerIP:          "-1",
		server.KeyConnectionsMaxIdleMs:         "0",
		KeySocketRequestReadTimeoutMs:          "10",
		KeySocketRequestMinBytesPerSec:         "0",
	} {
		c := DefaultConfig()
		_, err := c.Set(key, value)
		require.Error(t, err, "%s=%s", key, value)
	}
	c := DefaultConfig()
	_, err = c.Set(server.KeyMaxConnectionsPerIPOverrides, "a:1,a:2")
	require.ErrorContains(t, err, "twice")
	mustSet(t, &c, server.KeyMaxConnectionsPerIPOverrides, "no-such-host.invalid:1")
	_, err = c.connLimits()
	require.ErrorContains(t, err, "cannot resolve", "an unknown host stops start-up, as in Kafka")
}

// TestJAASLogin reads Kafka's sasl.jaas.config login lines and refuses
// malformed ones without quoting them (they hold a password).
func TestJAASLogin(t *testing.T) {
	for _, tc := range []struct {
		line, user, password string
		ok                   bool
	}{
		{`org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="s3cr\"et";`, "broker", `s3cr"et`, true},
		{`org.apache.kafka.common.security.plain.PlainLoginModule required password="pw" username="b";`, "b", "pw", true},
		{`org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="hunter2"`, "", "", false},
		{`org.apache.kafka.common.security.scram.ScramLoginModule required username="broker";`, "", "", false},
		{`username="broker" password="hunter2";`, "", "", false},
	} {
		user, password, err := jaasLogin(tc.line)
		if !tc.ok {
			require.Error(t, err, tc.line)
			require.NotContains(t, err.Error(), "hunter2")
			continue
		}
		require.NoError(t, err, tc.line)
		require.Equal(t, [2]string{tc.user, tc.password}, [2]string{user, password})
	}
}
