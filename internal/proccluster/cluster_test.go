package proccluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// answers reports whether the broker at addr answers ApiVersions within d.
func answers(addr string, d time.Duration) bool {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(d), kgo.RequestRetries(0))
	if err != nil {
		return false
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err = kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl.SeedBrokers()[0])
	return err == nil
}

// TestClusterFaults drives the harness's faults on one node: a paused
// node holds its port and answers nothing until resumed; a killed one is
// gone; a restarted one starts again on its data, with a second "node
// started" line.
func TestClusterFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real process")
	}
	c := StartCombined(t, 1)
	p := c.Node(1)
	require.Equal(t, "broker,controller", p.Roles)
	require.NotEmpty(t, p.MetricsAddr, "learnt from the started line")
	require.Equal(t, c.ClusterID, p.ClusterID)
	WaitFor(t, StartTimeout, "the node never answered", func() bool { return answers(p.BrokerAddr, time.Second) })

	c.Pause(1)
	require.False(t, answers(p.BrokerAddr, 500*time.Millisecond), "a paused node answered")
	require.True(t, p.Alive())
	c.Resume(1)
	WaitFor(t, StartTimeout, "the resumed node never answered", func() bool { return answers(p.BrokerAddr, time.Second) })

	c.Kill(1)
	require.False(t, p.Alive())
	require.False(t, answers(p.BrokerAddr, 500*time.Millisecond), "a killed node answered")
	lines := p.LogLines()
	c.Restart(1)
	require.True(t, p.LoggedSince(lines, `msg="node started"`))
	WaitFor(t, StartTimeout, "the restarted node never answered", func() bool { return answers(p.BrokerAddr, time.Second) })
	require.Empty(t, p.PanicLines())

	p.Stop(t)
	require.False(t, p.Alive())
}
