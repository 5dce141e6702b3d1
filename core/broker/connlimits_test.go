package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// connectFrom is connect from another client address.
func (n *fakeNet) connectFrom(host string) *fakeConn {
	n.nextPort++
	c := &fakeConn{env: n.env, remote: fmt.Sprintf("%s:%d", host, 50000+n.nextPort)}
	n.listener.accept(c)
	return c
}

func apiVersionsFrame(corr int32) []byte {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "t", "1"
	return encodeRequest(req, corr)
}

// TestIdleConnectionsAreClosed: connections.max.idle.ms closes a
// connection that neither sent a request nor had one in flight nor had
// response bytes waiting for that long (finding 6: silent sockets held
// every max.connections slot for ever).
func TestIdleConnectionsAreClosed(t *testing.T) {
	md := &fakeMetadata{img: meta.Empty()}
	b, e := newTestBroker(t, func(c *Config) { c.Metadata = md; c.ConnectionsMaxIdle = 10 * time.Minute })
	silent, talking, waiting, unread := e.net.connect(), e.net.connect(), e.net.connect(), e.net.connect()

	e.advance(6 * time.Minute)
	talking.deliver(apiVersionsFrame(1))
	require.Len(t, talking.sent, 1)
	// A request in flight (held by the quorum) is not idleness.
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	del.TopicNames = []string{"t"}
	waiting.deliver(encodeRequest(del, 2))
	require.Len(t, md.pending, 1)
	// Neither are response bytes the client has not read yet.
	unread.buffered = 100

	e.advance(4*time.Minute + time.Second) // 10 min 1 s
	require.True(t, silent.closed, "silent for 10 minutes")
	require.False(t, talking.closed, "spoke 4 minutes ago")
	require.False(t, waiting.closed, "a request in flight")
	require.False(t, unread.closed, "responses waiting for the socket")
	require.Contains(t, e.logBuf.String(), "closing idle connection")

	md.pending[0](kmsg.NewPtrDeleteTopicsResponse(), nil)
	e.run()
	require.Len(t, waiting.sent, 1, "answered")
	unread.buffered = 0
	e.advance(20 * time.Minute)
	require.True(t, talking.closed)
	require.True(t, waiting.closed, "idle once answered")
	require.True(t, unread.closed)
	require.Empty(t, b.conns)
	require.Zero(t, b.guard.Open())
}

// TestUnreadResponsesDoNotHoldAConnection: response bytes that wait for
// a client that stopped reading keep a connection open only while they
// move; bytes that sit for connections.max.idle.ms are a client that
// stopped reading, and its connection closes as Kafka's does (found by
// the simulator's hostile client, log seed 6: connections that paused
// their reading held their slots and their answers for ever).
func TestUnreadResponsesDoNotHoldAConnection(t *testing.T) {
	md := &fakeMetadata{img: meta.Empty()}
	_, e := newTestBroker(t, func(c *Config) { c.Metadata = md; c.ConnectionsMaxIdle = time.Minute })
	stuck, draining := e.net.connect(), e.net.connect()
	for _, c := range []*fakeConn{stuck, draining} {
		c.deliver(apiVersionsFrame(1))
		require.Len(t, c.sent, 1)
		c.buffered = 5000 // the answer, unread
	}
	for range 3 {
		e.advance(40 * time.Second)
		draining.buffered -= 1000 // a slow reader, reading
	}
	require.True(t, stuck.closed, "its answer sat unread for a minute")
	require.False(t, draining.closed, "its answer is leaving")
	draining.buffered = 0
	e.advance(2 * time.Minute)
	require.True(t, draining.closed, "idle once its answer left")
}

// TestMaxConnectionsPerIP: max.connections.per.ip bounds each client
// address, max.connections.per.ip.overrides gives hosts their own bound,
// and a closed connection frees its slot.
func TestMaxConnectionsPerIP(t *testing.T) {
	b, e := newTestBroker(t, func(c *Config) {
		c.MaxConnectionsPerIP = 2
		c.MaxConnectionsPerIPOverrides = map[string]int{"10.0.0.7": 3, "10.0.0.8": 0}
	})
	a1, a2, a3 := e.net.connectFrom("10.0.0.9"), e.net.connectFrom("10.0.0.9"), e.net.connectFrom("10.0.0.9")
	o := []*fakeConn{e.net.connectFrom("10.0.0.7"), e.net.connectFrom("10.0.0.7"), e.net.connectFrom("10.0.0.7"), e.net.connectFrom("10.0.0.7")}
	banned := e.net.connectFrom("10.0.0.8")
	v6 := []*fakeConn{e.net.connectFrom("[::1]"), e.net.connectFrom("[::1]"), e.net.connectFrom("[::1]")}
	e.run()
	require.False(t, a1.closed)
	require.False(t, a2.closed)
	require.True(t, a3.closed, "third from 10.0.0.9")
	for i, c := range o {
		require.Equal(t, i == 3, c.closed, "override of 3: connection %d", i)
	}
	require.True(t, banned.closed, "an override of 0 admits none")
	require.Equal(t, []bool{false, false, true}, []bool{v6[0].closed, v6[1].closed, v6[2].closed}, "IPv6 hosts counted without brackets")
	require.Contains(t, e.logBuf.String(), "too many connections from this address")
	require.Len(t, b.conns, 7)

	a1.peerClose()
	again := e.net.connectFrom("10.0.0.9")
	e.run()
	require.False(t, again.closed, "a closed connection frees its slot")
}

// TestMaxConnectionsPerIPZeroAdmitsOnlyOverrides is Kafka's
// max.connections.per.ip=0 (here negative) with overrides: an allow list.
func TestMaxConnectionsPerIPZeroAdmitsOnlyOverrides(t *testing.T) {
	_, e := newTestBroker(t, func(c *Config) {
		c.MaxConnectionsPerIP = -1
		c.MaxConnectionsPerIPOverrides = map[string]int{"10.0.0.7": 1}
	})
	stranger, friend, friend2 := e.net.connectFrom("10.0.0.9"), e.net.connectFrom("10.0.0.7"), e.net.connectFrom("10.0.0.7")
	e.run()
	require.True(t, stranger.closed)
	require.False(t, friend.closed)
	require.True(t, friend2.closed)

	_, err := New(newFakeEnv(), Config{NodeID: 1, ClusterID: testClusterID, ListenAddr: "127.0.0.1:0", AdvertisedHost: "h",
		MaxConnectionsPerIP: -1})
	require.ErrorIs(t, err, errInvalidConfig, "no one could connect")
}

// TestValidRequestThenBadFrameIsAnswered is finding 8's: a request
// followed on its connection by a frame that cannot be served is still
// answered, and the connection closes after the answer; frames after the
// bad one are not served.
func TestValidRequestThenBadFrameIsAnswered(t *testing.T) {
	md := &fakeMetadata{img: meta.Empty()}
	_, e := newTestBroker(t, func(c *Config) { c.Metadata = md })
	e.advance(0) // timers wait for the test's clock
	c := e.net.connect()

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	del.TopicNames = []string{"t"}
	c.deliver(encodeRequest(del, 1))
	c.deliver([]byte{0x7f, 0x00, 0, 0, 0, 0, 0, 2}) // api key 32512
	require.False(t, c.closed, "the DeleteTopics before the bad frame is still in flight")
	require.True(t, c.paused, "no more frames are read")
	c.deliver(apiVersionsFrame(3)) // read ahead before the pause took hold
	require.Empty(t, c.sent)
	require.Contains(t, e.logBuf.String(), "closing connection: bad request")

	resp := del.ResponseKind().(*kmsg.DeleteTopicsResponse)
	rt := kmsg.NewDeleteTopicsResponseTopic()
	rt.Topic, rt.ErrorCode = kmsg.StringPtr("t"), kerr.UnknownTopicOrPartition.Code
	resp.Topics = append(resp.Topics, rt)
	md.pending[0](resp, nil)
	e.run()
	require.Len(t, c.sent, 1, "the DeleteTopics is answered, the ApiVersions after the bad frame is not")
	got := responseTo[*kmsg.DeleteTopicsResponse](t, c.sent[0], 1, del)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, got.Topics[0].ErrorCode)
	require.True(t, c.closed, "closed once answered")

	// An answer that never comes: closed after badFrameDrainTimeout.
	c2 := e.net.connect()
	c2.deliver(encodeRequest(del, 4))
	c2.deliver([]byte{0x7f, 0x00, 0, 0, 0, 0, 0, 5})
	e.advance(badFrameDrainTimeout - time.Millisecond)
	require.False(t, c2.closed)
	e.advance(time.Millisecond)
	require.True(t, c2.closed, "the drain is bounded")
}

// TestPipelinedRequestsThenBadFrameAreAnswered: answers already made
// before the bad frame arrived go out, and the connection closes at once
// when nothing is in flight.
func TestPipelinedRequestsThenBadFrameAreAnswered(t *testing.T) {
	_, e := newTestBroker(t)
	c := e.net.connect()
	c.onFrame(apiVersionsFrame(1))
	c.onFrame(apiVersionsFrame(2))
	c.onFrame([]byte{0, 18, 0, 3}) // shorter than a header
	e.run()
	require.Len(t, c.sent, 2)
	require.True(t, c.closed)
}
