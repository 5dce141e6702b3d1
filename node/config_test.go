package node

import (
	"github.com/strata-log/strata/core/kraft"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseProperties(t *testing.T) {
	in := strings.Join([]string{
		"# a comment",
		"! another comment",
		"   # an indented comment",
		"",
		"node.id=3",
		"  listeners =  PLAINTEXT://127.0.0.1:9093  ",
		"log.dirs: /var/lib/strata",
		"socket.request.max.bytes 1048576",
		"process.roles = broker,\\",
		"    controller",
		"weird\\=key=value\\twith\\u0041escapes",
		"empty.value=",
		"bare.key",
		"node.id=4",
	}, "\n")
	props, err := ParseProperties(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, []Property{
		{"node.id", "3", 5},
		{"listeners", "PLAINTEXT://127.0.0.1:9093", 6},
		{"log.dirs", "/var/lib/strata", 7},
		{"socket.request.max.bytes", "1048576", 8},
		{"process.roles", "broker,controller", 9},
		{"weird=key", "value\twithAescapes", 11},
		{"empty.value", "", 12},
		{"bare.key", "", 13},
		{"node.id", "4", 14},
	}, props)

	_, err = ParseProperties(strings.NewReader("k=\\u12"))
	require.ErrorContains(t, err, "line 1")
}

func TestConfigSetAndValidate(t *testing.T) {
	cfg := DefaultConfig()
	require.NoError(t, cfg.Validate())
	require.Equal(t, Config{NodeID: 1, Listener: "127.0.0.1:9092", LogDir: "./data",
		SocketRequestMaxBytes: 104857600, MaxConnections: 10000}, cfg.base())
	require.Equal(t, []kraft.Voter{{ID: 1, Addr: "127.0.0.1:9093"}}, cfg.voters())
	require.Equal(t, "127.0.0.1:9093", cfg.controllerListen())

	for key, value := range map[string]string{
		"node.id":                  "12",
		"listeners":                "plaintext://[::1]:0",
		"advertised.listeners":     "PLAINTEXT://kafka.example:19092",
		"log.dirs":                 " /srv/strata ",
		"socket.request.max.bytes": "1024",
		"max.connections":          "50",
	} {
		known, err := cfg.Set(key, value)
		require.True(t, known, key)
		require.NoError(t, err, key)
	}
	require.Equal(t, Config{NodeID: 12, Listener: "[::1]:0", AdvertisedListener: "kafka.example:19092",
		LogDir: "/srv/strata", SocketRequestMaxBytes: 1024, MaxConnections: 50}, cfg.base())
	require.NoError(t, cfg.Validate())
	_, err := cfg.Set("controller.quorum.voters", "1@[::1]:19093")
	require.NoError(t, err)
	require.ErrorContains(t, cfg.Validate(), "controller.quorum.voters", "node 12 is not a voter")
	_, err = cfg.Set("controller.quorum.voters", "12@[::1]:19093")
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())

	known, err := cfg.Set("num.network.threads", "3")
	require.False(t, known)
	require.NoError(t, err)

	bad := map[string]string{
		"node.id":                   "-1",
		"listeners":                 "SSL://127.0.0.1:9093",
		"advertised.listeners":      "PLAINTEXT://a:1,PLAINTEXT://b:2",
		"log.dirs":                  "/a,/b",
		"log.dir":                   "",
		"socket.request.max.bytes":  "0",
		"max.connections":           "0",
		"process.roles":             "broker",
		"controller.quorum.voters":  "1-127.0.0.1:9093",
		"controller.listener.names": "PLAINTEXT",
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
	_, err = wild.Set("listeners", "PLAINTEXT://0.0.0.0:9092")
	require.NoError(t, err)
	require.ErrorContains(t, wild.Validate(), "advertised.listeners")
	_, err = wild.Set("advertised.listeners", "PLAINTEXT://10.1.2.3:9092")
	require.NoError(t, err)
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
	_, err := cfg.Set("listeners", "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:19093")
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	require.Equal(t, "127.0.0.1:19093", cfg.controllerListen())

	_, err = cfg.Set("listeners", "PLAINTEXT://127.0.0.1:9092,CTRL://127.0.0.1:19093")
	require.NoError(t, err)
	require.ErrorContains(t, cfg.Validate(), "listeners")
	_, err = cfg.Set("controller.listener.names", "CTRL")
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())

	_, err = cfg.Set("listeners", "CONTROLLER://127.0.0.1:9093")
	require.ErrorContains(t, err, "listeners=")
}
