package broker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/servertest"
)

// slowConn is a raw client connection of a test process and what became
// of it.
type slowConn struct {
	cl       *wire.Client
	closedAt time.Duration
	answers  []kmsg.Response
}

func dialSlow(t *testing.T, x *servertest.Single, e env.Env) *slowConn {
	t.Helper()
	c := &slowConn{closedAt: -1}
	e.Net().Dial("n1:9092", func(conn env.Conn, err error) {
		require.NoError(t, err)
		c.cl = wire.NewClient(conn, wire.ClientConfig{ClientID: "slow", OnClose: func(error) { c.closedAt = x.Sim.Now() }})
	})
	x.RunUntil("dialed", func() bool { return c.cl != nil })
	return c
}

func (c *slowConn) do(t *testing.T, req kmsg.Request) {
	require.NoError(t, c.cl.Do(req, func(resp kmsg.Response, err error) {
		if err == nil {
			c.answers = append(c.answers, resp)
		}
	}))
}

// TestSlowUploadsAndIdleConnections: with connections.max.idle.ms at 1 s,
// a silent connection closes after 1 s; a request frame that arrives over
// 4 s at 2 KiB/s (within the transport's progress rule) keeps its
// connection, which counts as receiving, and is answered; one at
// 512 B/s, past the rule, is closed when its first window ends (20 s) and
// never handled. The simulated network moves whole frames and delivers a
// frame on a link with a bandwidth once its last byte is due, reporting
// it partly received meanwhile (env.FrameReceiver), as the node's TCP
// transport does.
func TestSlowUploadsAndIdleConnections(t *testing.T) {
	x := servertest.Start(t, 1, func(c *server.Config) { c.BrokerListener.ConnectionsMaxIdle = time.Second })
	x.CreateTopic("s", 1, nil)
	var slowE env.Env
	x.Sim.AddProcess("crawl", func(e env.Env) { slowE = e }).Start()
	x.RunUntil("crawl started", func() bool { return slowE != nil })
	net := x.Sim.Network()
	net.SetLinkLatency("cli", "n1", sim.LinkConfig{Latency: time.Millisecond, BytesPerSecond: 2048})
	net.SetLinkLatency("crawl", "n1", sim.LinkConfig{Latency: time.Millisecond, BytesPerSecond: 512})

	silent := dialSlow(t, x, x.ClientEnv())
	upload := dialSlow(t, x, x.ClientEnv())
	crawl := dialSlow(t, x, slowE)
	start := x.Sim.Now()
	upload.do(t, servertest.ProduceRequest("s", 0, x.Batch(nil, strings.Repeat("u", 8<<10))))
	crawl.do(t, servertest.ProduceRequest("s", 0, x.Batch(nil, strings.Repeat("c", 16<<10))))

	x.RunUntil("the silent connection closed", func() bool { return silent.closedAt >= 0 })
	require.InDelta(t, float64(start+time.Second), float64(silent.closedAt), float64(200*time.Millisecond))
	x.RunUntil("the upload answered", func() bool { return len(upload.answers) == 1 })
	require.Greater(t, x.Sim.Now()-start, 4*time.Second, "8 KiB at 2 KiB/s")
	require.Negative(t, int64(upload.closedAt), "a connection receiving a frame is not idle")
	got := upload.answers[0].(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	require.Zero(t, got.ErrorCode)
	require.Zero(t, got.BaseOffset)

	x.RunUntil("the crawl closed", func() bool { return crawl.closedAt >= 0 })
	require.InDelta(t, float64(start+20*time.Second), float64(crawl.closedAt), float64(100*time.Millisecond))
	require.Empty(t, crawl.answers)
	require.Equal(t, uint64(1), net.Stats().SlowFrames)
	x.RunUntil("the upload's connection idle", func() bool { return upload.closedAt >= 0 })
	require.Zero(t, x.Server.Broker().ConnectionsFrom("cli")+x.Server.Broker().ConnectionsFrom("crawl"))
	// Nothing of the crawl was appended: the next batch follows the upload's.
	require.Equal(t, int64(1), x.Produce("s", 0, "after").BaseOffset)
}
