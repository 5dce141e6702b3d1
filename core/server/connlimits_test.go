package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/connlimit"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/sim/servertest"
)

// simConn is one client connection of the simulator's client process and
// whether the server ended it.
type simConn struct {
	c      env.Conn
	closed bool
	frames int
}

func dialSim(t *testing.T, x *servertest.Single, addr string) *simConn {
	t.Helper()
	sc := &simConn{}
	x.ClientEnv().Net().Dial(addr, func(c env.Conn, err error) {
		require.NoError(t, err)
		sc.c = c
		c.OnFrame(func([]byte) { sc.frames++ })
		c.OnClose(func(error) { sc.closed = true })
	})
	x.RunUntil("a connection to "+addr, func() bool { return sc.c != nil })
	require.NoError(t, x.Sim.RunFor(10*time.Millisecond))
	return sc
}

// TestListenersBoundConnections runs finding 6's bounds in the simulator,
// on both listeners: max.connections.per.ip closes a connection past it at
// once, connections.max.idle.ms closes silent ones, and a connection that
// keeps asking stays.
func TestListenersBoundConnections(t *testing.T) {
	limits := connlimit.Config{MaxPerHost: 2, MaxIdle: 2 * time.Second}
	x := servertest.Start(t, 1, func(c *server.Config) {
		c.BrokerListener.MaxConnectionsPerIP = limits.MaxPerHost
		c.BrokerListener.ConnectionsMaxIdle = limits.MaxIdle
		c.Quorum.ListenerLimits = limits
	})
	for _, addr := range []string{"n1:9092", "n1:9093"} {
		start := x.Sim.Now()
		silent, busy, over := dialSim(t, x, addr), dialSim(t, x, addr), dialSim(t, x, addr)
		require.True(t, over.closed, "%s: a third connection from the client's host", addr)
		require.False(t, silent.closed)

		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "sim", "1"
		formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("sim"))
		for i := range 8 {
			require.NoError(t, busy.c.Send(wire.EncodeRequest(formatter, req, int32(i))))
			require.NoError(t, x.Sim.RunFor(500*time.Millisecond))
		}
		require.True(t, silent.closed, "%s: silent for 4 s", addr)
		require.False(t, busy.closed, "%s: asked every 500 ms", addr)
		require.Equal(t, 8, busy.frames)
		require.GreaterOrEqual(t, x.Sim.Now()-start, 2*time.Second)
		x.RunUntil("the busy connection idle", func() bool { return busy.closed })

		// The slots are free again.
		again := dialSim(t, x, addr)
		require.False(t, again.closed)
		again.c.Close()
	}
}
