package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/kraft"
)

// TestParseProperties: server.properties text reaches the typed fields
// through the rows, with Kafka's precedence of time keys whatever their
// order, and refuses what the rows refuse.
func TestParseProperties(t *testing.T) {
	cfg, err := Config{ClusterID: "c"}.ParseProperties(`
node.id=2
process.roles=broker , controller
controller.quorum.voters=1@n1:9093,2@n2:9093
replica.lag.time.max.ms=2000
log.retention.hours=2
log.retention.minutes=3
log.segment.bytes=4096
max.incremental.fetch.session.cache.slots=0
max.connections.per.ip.overrides=a:1,b:2
`)
	require.NoError(t, err)
	require.Equal(t, int32(2), cfg.NodeID)
	require.True(t, cfg.Broker && cfg.Controller)
	require.Equal(t, []string{RoleBroker, RoleController}, cfg.Roles())
	require.Equal(t, []kraft.Voter{{ID: 1, Addr: "n1:9093"}, {ID: 2, Addr: "n2:9093"}}, cfg.Quorum.Voters)
	require.Equal(t, 2*time.Second, cfg.Partitions.ReplicaLagTime)
	require.Equal(t, map[string]string{"retention.ms": "180000", "segment.bytes": "4096"}, cfg.Partitions.StaticTopicDefaults)
	require.Equal(t, -1, cfg.BrokerListener.MaxFetchSessions, "Kafka's 0: no sessions")
	require.Equal(t, map[string]int{"a": 1, "b": 2}, cfg.BrokerListener.MaxConnectionsPerIPOverrides)
	require.Equal(t, "c", cfg.ClusterID, "the base's fields stay")

	for text, want := range map[string]string{
		"num.io.threads=8":              "not a broker key",
		"replica.lag.time.max.ms=0":     "replica.lag.time.max.ms=\"0\"",
		"controller.quorum.voters=1-n1": "not id@host:port",
		"log.segment.bytes=20":          "[61,...]",
	} {
		_, err := Config{}.ParseProperties(text)
		require.ErrorIs(t, err, ErrInvalidConfig, text)
		require.ErrorContains(t, err, want, text)
	}
}

// TestDefaultConfigIsTheRowsDefaults: every broker key with a default has
// it in DefaultConfig, but the topic-default keys, whose defaults are the
// topic rows' (no static topic default is set).
func TestDefaultConfigIsTheRowsDefaults(t *testing.T) {
	cfg := DefaultConfig()
	require.Empty(t, cfg.Partitions.StaticTopicDefaults)
	require.Equal(t, 30*time.Second, cfg.Partitions.ReplicaLagTime)
	require.Equal(t, 3*time.Second, cfg.BrokerListener.Groups.Coordinator.InitialRebalanceDelay)
	require.Equal(t, int32(1), cfg.NodeID)
	require.True(t, cfg.Broker && cfg.Controller)
}
