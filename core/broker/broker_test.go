package broker

import (
	"encoding/binary"
	"fmt"
	"iter"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/protocol"
)

const (
	testNodeID    = 7
	testClusterID = "MkU3OEVBNTcwNTJENDM2Qk"
	testHost      = "broker.example"
)

func newTestBroker(t testing.TB, mutate ...func(*Config)) (*Broker, *fakeEnv) {
	t.Helper()
	e := newFakeEnv()
	cfg := Config{
		NodeID:         testNodeID,
		ClusterID:      testClusterID,
		ListenAddr:     "127.0.0.1:0",
		AdvertisedHost: testHost,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	b, err := New(e, cfg)
	require.NoError(t, err)
	return b, e
}

// encodeRequest renders req as a frame (without the size prefix), the way
// franz-go puts it on the wire.
func encodeRequest(req kmsg.Request, correlationID int32) []byte {
	withSize := kmsg.NewRequestFormatter(kmsg.FormatterClientID("strata-test")).AppendRequest(nil, req, correlationID)
	return withSize[4:]
}

// decodeResponse checks the response header and decodes the body into
// resp, whose version must be set.
func decodeResponse(t *testing.T, frame []byte, wantCorrelationID int32, resp kmsg.Response) {
	t.Helper()
	require.GreaterOrEqual(t, len(frame), 4, "response shorter than its header")
	require.Equal(t, wantCorrelationID, int32(binary.BigEndian.Uint32(frame)), "correlation id")
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		require.NotEmpty(t, body)
		require.Equal(t, byte(0), body[0], "response header v1 must carry an empty tag section")
		body = body[1:]
	}
	require.NoError(t, resp.ReadFrom(body), "decode %s v%d", kmsg.NameForKey(resp.Key()), resp.GetVersion())
	// Round trip: our encoding is exactly what kmsg would produce, so no
	// stray or missing bytes hide behind a lenient decoder.
	require.Equal(t, body, resp.AppendTo(nil), "re-encoding differs")
}

// roundTripOn is roundTrip on connection c: it delivers req with
// correlationID and decodes the last frame the broker sent as req's
// response, at req's version.
func roundTripOn[R kmsg.Response](t *testing.T, c *fakeConn, req kmsg.Request, correlationID int32) R {
	t.Helper()
	c.deliver(encodeRequest(req, correlationID))
	return responseTo[R](t, lastSent(t, c), correlationID, req)
}

// responseTo decodes frame as the broker's response to req (with
// correlationID), at req's version.
func responseTo[R kmsg.Response](t *testing.T, frame []byte, correlationID int32, req kmsg.Request) R {
	t.Helper()
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	decodeResponse(t, frame, correlationID, resp)
	return resp.(R)
}

func lastSent(t *testing.T, c *fakeConn) []byte {
	t.Helper()
	require.NotEmpty(t, c.sent, "broker sent nothing")
	return c.sent[len(c.sent)-1]
}

func wantKeys() []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	for _, a := range APIs().Listed() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.MinVersion, a.MaxVersion
		keys = append(keys, k)
	}
	return keys
}

func TestApiVersionsEveryVersion(t *testing.T) {
	for _, v := range versions(t, kmsg.ApiVersions) {
		_, e := newTestBroker(t)
		c := e.net.connect()
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "strata-test", "1.0.0"
		resp := roundTripOn[*kmsg.ApiVersionsResponse](t, c, req, 100+int32(v))
		require.Equal(t, int16(0), resp.ErrorCode, "v%d", v)
		require.Equal(t, wantKeys(), resp.ApiKeys, "v%d", v)
		require.False(t, c.closed, "v%d closed the connection", v)
	}
}

// TestProduceListedFromV0ServedFromV3 pins Kafka 4's answer to
// KAFKA-18659: ApiVersions lists Produce from v0, because librdkafka
// before 2.8 (Debian 12's 2.0.2 among them) compresses with gzip or snappy
// only when the broker lists Produce v2, and otherwise sends every batch
// uncompressed without a word; but v0 to v2 (message formats 0 and 1) are
// still refused, with the connection closed as for any unsupported
// version.
func TestProduceListedFromV0ServedFromV3(t *testing.T) {
	_, e := newTestBroker(t)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "librdkafka", "2.0.2"
	frame, closed := e.exchange(encodeRequest(req, 9))
	require.False(t, closed)
	resp := responseTo[*kmsg.ApiVersionsResponse](t, frame, 9, req)
	var listed []kmsg.ApiVersionsResponseApiKey
	for _, k := range resp.ApiKeys {
		if k.ApiKey == kmsg.Produce.Int16() {
			listed = append(listed, k)
		}
	}
	require.Len(t, listed, 1)
	require.Equal(t, int16(0), listed[0].MinVersion, "Produce is listed from v0")
	require.Equal(t, int16(13), listed[0].MaxVersion)

	served, ok := APIs().Lookup(kmsg.Produce.Int16())
	require.True(t, ok)
	require.Equal(t, int16(3), served.MinVersion, "Produce is served from v3")
	for v := int16(0); v < served.MinVersion; v++ {
		produce := kmsg.NewPtrProduceRequest()
		produce.Version, produce.Acks = v, 1
		answer, closed := e.exchange(encodeRequest(produce, 10+int32(v)))
		require.True(t, closed, "Produce v%d closes the connection", v)
		require.Empty(t, answer, "Produce v%d is not answered", v)
	}
}

func TestApiVersionsTooNewGetsV0UnsupportedVersion(t *testing.T) {
	for _, v := range []int16{5, 127, -1} {
		_, e := newTestBroker(t)
		c := e.net.connect()
		// A header from the future followed by a body we cannot parse:
		// only the fixed header part may be read.
		frame := kbin.AppendInt16(nil, kmsg.ApiVersions.Int16())
		frame = kbin.AppendInt16(frame, v)
		frame = kbin.AppendInt32(frame, 42)
		frame = append(frame, 0xde, 0xad, 0xbe, 0xef, 0xff)
		c.deliver(frame)

		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		decodeResponse(t, lastSent(t, c), 42, resp)
		require.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode, "v%d", v)
		require.Equal(t, wantKeys(), resp.ApiKeys, "v%d", v)
		require.False(t, c.closed, "v%d: the client must be able to retry on the same conn", v)

		// The client retries lower on the same connection.
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "strata-test", "1.0.0"
		resp3 := roundTripOn[*kmsg.ApiVersionsResponse](t, c, req, 43)
		require.Equal(t, int16(0), resp3.ErrorCode)
	}
}

func TestApiVersionsInvalidSoftwareName(t *testing.T) {
	for _, name := range []string{"", "-lead", "trail.", "sp ace"} {
		_, e := newTestBroker(t)
		c := e.net.connect()
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = name, "1.0"
		resp := roundTripOn[*kmsg.ApiVersionsResponse](t, c, req, 1)
		require.Equal(t, kerr.InvalidRequest.Code, resp.ErrorCode, "name %q", name)
		require.Empty(t, resp.ApiKeys)
	}
	require.True(t, protocol.ValidSoftwareField("a"))
	require.True(t, protocol.ValidSoftwareField("kgo"))
	require.True(t, protocol.ValidSoftwareField("v1.22.3-rc.1"))
}

func TestMetadataEveryVersion(t *testing.T) {
	for _, v := range versions(t, kmsg.Metadata) {
		b, e := newTestBroker(t)
		c := e.net.connect()

		// All topics (nil in v1+, empty in v0): none exist.
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		resp := roundTripOn[*kmsg.MetadataResponse](t, c, req, 1)

		require.Len(t, resp.Brokers, 1, "v%d", v)
		require.Equal(t, int32(testNodeID), resp.Brokers[0].NodeID)
		require.Equal(t, testHost, resp.Brokers[0].Host)
		require.Equal(t, b.AdvertisedPort(), resp.Brokers[0].Port)
		require.Equal(t, int32(40001), resp.Brokers[0].Port, "port 0 advertises the bound port")
		require.Nil(t, resp.Brokers[0].Rack)
		require.Empty(t, resp.Topics, "v%d", v)
		if v >= 1 {
			require.Equal(t, int32(testNodeID), resp.ControllerID, "v%d", v)
		}
		if v >= 2 {
			require.NotNil(t, resp.ClusterID, "v%d", v)
			require.Equal(t, testClusterID, *resp.ClusterID)
		}

		// Named topics, one of them twice: each distinct one is unknown.
		req = kmsg.NewPtrMetadataRequest()
		req.Version = v
		for _, name := range []string{"orders", "payments", "orders"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
		req.AllowAutoTopicCreation = true // not supported: still unknown
		resp = roundTripOn[*kmsg.MetadataResponse](t, c, req, 2)
		require.Len(t, resp.Topics, 2, "v%d", v)
		for i, name := range []string{"orders", "payments"} {
			got := resp.Topics[i]
			require.Equal(t, kerr.UnknownTopicOrPartition.Code, got.ErrorCode, "v%d %s", v, name)
			require.NotNil(t, got.Topic)
			require.Equal(t, name, *got.Topic)
			require.Equal(t, [16]byte{}, got.TopicID, "unknown topics carry the zero id")
			require.Empty(t, got.Partitions)
		}
		require.False(t, c.closed)
	}
}

func TestMetadataByTopicID(t *testing.T) {
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	cases := []struct {
		version int16
		id      [16]byte
		want    int16
	}{
		{12, id, kerr.UnknownTopicID.Code},
		{13, id, kerr.UnknownTopicID.Code},
		{10, id, kerr.InvalidRequest.Code},         // ids not allowed before v12
		{12, [16]byte{}, kerr.InvalidRequest.Code}, // neither name nor id
	}
	for _, tc := range cases {
		_, e := newTestBroker(t)
		c := e.net.connect()
		req := kmsg.NewPtrMetadataRequest()
		req.Version = tc.version
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = tc.id
		req.Topics = append(req.Topics, rt, rt)
		resp := roundTripOn[*kmsg.MetadataResponse](t, c, req, 9)
		require.NotEmpty(t, resp.Topics)
		require.Equal(t, tc.want, resp.Topics[0].ErrorCode, "v%d", tc.version)
		if tc.want == kerr.UnknownTopicID.Code {
			require.Len(t, resp.Topics, 1, "duplicate ids answered once")
			require.Equal(t, tc.id, resp.Topics[0].TopicID)
			require.Nil(t, resp.Topics[0].Topic)
		}
	}
}

func TestResponsesInRequestOrder(t *testing.T) {
	_, e := newTestBroker(t)
	c := e.net.connect()
	var want []int32
	for i := int32(0); i < 20; i++ {
		var req kmsg.Request
		if i%2 == 0 {
			r := kmsg.NewPtrApiVersionsRequest()
			r.Version = 0
			req = r
		} else {
			r := kmsg.NewPtrMetadataRequest()
			r.Version = 12
			req = r
		}
		corr := 1000 - i*7
		want = append(want, corr)
		c.onFrame(encodeRequest(req, corr)) // pipelined: no loop turn between
	}
	e.run()
	var got []int32
	for _, f := range c.sent {
		got = append(got, int32(binary.BigEndian.Uint32(f)))
	}
	require.Equal(t, want, got)
}

func TestBadFramesCloseTheConnection(t *testing.T) {
	header := func(key, version int16) []byte {
		f := kbin.AppendInt16(nil, key)
		f = kbin.AppendInt16(f, version)
		return kbin.AppendInt32(f, 5)
	}
	metadata := func(v int16) []byte {
		r := kmsg.NewPtrMetadataRequest()
		r.Version = v
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("orders")
		r.Topics = append(r.Topics, rt)
		return encodeRequest(r, 5)
	}
	cases := []struct {
		name   string
		frame  []byte
		reason string
	}{
		{"empty frame", nil, "shorter than a request header"},
		{"short header", []byte{0, 3, 0}, "shorter than a request header"},
		{"unknown key", header(9999, 0), "unknown API key 9999"},
		{"negative key", header(-5, 0), "unknown API key -5"},
		{"known key not served", header(kmsg.Vote.Int16(), 0), "API Vote (key 52) is not served on this listener"},
		{"metadata too new", header(kmsg.Metadata.Int16(), 14), "version 14 not supported (supported 0..13)"},
		{"metadata negative version", header(kmsg.Metadata.Int16(), -1), "version -1 not supported"},
		{"missing client id", header(kmsg.Metadata.Int16(), 1), "malformed request header"},
		{"client id longer than frame", append(header(kmsg.Metadata.Int16(), 1), 0x10, 0x00, 'a'), "malformed request header"},
		{"flexible header without tags", append(header(kmsg.Metadata.Int16(), 12), 0xff, 0xff), "malformed request header"},
		{"truncated metadata body", metadata(4)[:len(metadata(4))-3], "malformed Metadata v4 body"},
		{"truncated flexible metadata body", metadata(12)[:len(metadata(12))-2], "malformed Metadata v12 body"},
		{"apiversions v3 body missing", append(header(kmsg.ApiVersions.Int16(), 3), 0xff, 0xff, 0), "malformed ApiVersions v3 body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, e := newTestBroker(t)
			c := e.net.connect()
			other := e.net.connect()
			c.deliver(tc.frame)
			require.True(t, c.closed, "connection left open")
			require.Empty(t, c.sent, "a response was sent")
			require.Equal(t, 1, c.closeRan)
			log := e.logBuf.String()
			require.Contains(t, log, "closing connection: bad request")
			require.Contains(t, log, "remote="+c.remote)
			require.Contains(t, log, tc.reason)
			// Frames the transport still delivers are ignored.
			c.onFrame(encodeRequest(kmsg.NewPtrApiVersionsRequest(), 6))
			require.Empty(t, c.sent)
			// Other connections are unaffected, and the closed one is
			// forgotten.
			require.False(t, other.closed)
			require.Len(t, b.conns, 1)
		})
	}
}

func TestClosedConnIsForgotten(t *testing.T) {
	b, e := newTestBroker(t)
	c1, c2, c3 := e.net.connect(), e.net.connect(), e.net.connect()
	c2.peerClose()
	require.Equal(t, []uint64{0, 2}, connIDs(b))
	c1.peerClose()
	c3.peerClose()
	require.Empty(t, b.conns)
}

func TestMaxConnections(t *testing.T) {
	b, e := newTestBroker(t, func(c *Config) { c.MaxConnections = 2 })
	c1, c2, c3 := e.net.connect(), e.net.connect(), e.net.connect()
	e.run()
	require.False(t, c1.closed)
	require.False(t, c2.closed)
	require.True(t, c3.closed)
	require.Contains(t, e.logBuf.String(), "too many connections")
	require.Len(t, b.conns, 2)
}

func TestUnreadResponsesBackstop(t *testing.T) {
	_, e := newTestBroker(t, func(c *Config) { c.MaxBufferedResponseBytes = 1000 })
	c := e.net.connect()
	c.buffered = 1001
	c.deliver(encodeRequest(kmsg.NewPtrApiVersionsRequest(), 1))
	require.True(t, c.closed)
	require.Contains(t, e.logBuf.String(), "client is not reading responses")
}

func TestCloseClosesListenerAndConns(t *testing.T) {
	b, e := newTestBroker(t)
	c1, c2 := e.net.connect(), e.net.connect()
	b.Close()
	b.Close() // idempotent
	require.True(t, e.net.listener.closed)
	require.True(t, c1.closed)
	require.True(t, c2.closed)
	e.run()
	require.Empty(t, b.conns)
}

func TestConfigValidation(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.NodeID = -1 },
		func(c *Config) { c.ClusterID = "" },
		func(c *Config) { c.ListenAddr = "" },
		func(c *Config) { c.AdvertisedHost = "" },
		func(c *Config) { c.AdvertisedPort = 70000 },
		func(c *Config) { c.MaxConnections = -1 },
		func(c *Config) { c.MaxBufferedResponseBytes = -1 },
	}
	for i, m := range bad {
		e := newFakeEnv()
		cfg := Config{NodeID: 1, ClusterID: testClusterID, ListenAddr: "127.0.0.1:0", AdvertisedHost: "h"}
		m(&cfg)
		_, err := New(e, cfg)
		require.ErrorIs(t, err, errInvalidConfig, "case %d", i)
		require.Nil(t, e.net.listener, "case %d: listened despite bad config", i)
	}
}

func TestAdvertisedPortExplicit(t *testing.T) {
	b, _ := newTestBroker(t, func(c *Config) { c.AdvertisedPort = 19092 })
	require.Equal(t, int32(19092), b.AdvertisedPort())
	require.Equal(t, "127.0.0.1:40001", b.Addr())
}

func TestPortOf(t *testing.T) {
	for addr, want := range map[string]int32{"127.0.0.1:9092": 9092, "[::1]:1": 1, ":0": 0} {
		got, err := portOf(addr)
		require.NoError(t, err, addr)
		require.Equal(t, want, got, addr)
	}
	for _, addr := range []string{"nohost", "h:", "h:65536", "h:-1"} {
		_, err := portOf(addr)
		require.Error(t, err, addr)
	}
}

func connIDs(b *Broker) []uint64 {
	var ids []uint64
	for _, c := range b.conns {
		ids = append(ids, c.id)
	}
	return ids
}

// TestEveryTableKeyHasAHandler keeps protocol's table and handleFrame's
// dispatch in step: a key in the table without a handler would be an
// assertion failure at run time.
func TestEveryTableKeyHasAHandler(t *testing.T) {
	_, e := newTestBroker(t)
	for req := range servedRequests() {
		if r, ok := req.(*kmsg.ProduceRequest); ok {
			r.Acks = 1 // acks=0 gets no response
		}
		resp, closed := e.exchange(encodeRequest(req, 3))
		require.False(t, closed, "%s v%d", kmsg.NameForKey(req.Key()), req.GetVersion())
		require.NotEmpty(t, resp)
	}
}

// servedRequests yields a default request of every key and version the
// broker serves, an ApiVersions request with a valid client software
// name and version.
func servedRequests() iter.Seq[kmsg.Request] {
	return func(yield func(kmsg.Request) bool) {
		for _, api := range APIs().Rows() {
			for v := api.MinVersion; v <= api.MaxVersion; v++ {
				req := kmsg.RequestForKey(api.Key)
				req.SetVersion(v)
				if r, ok := req.(*kmsg.ApiVersionsRequest); ok {
					r.ClientSoftwareName, r.ClientSoftwareVersion = "strata-test", "1.0"
				}
				if !yield(req) {
					return
				}
			}
		}
	}
}

func TestFrameTooLargeIsLogged(t *testing.T) {
	b, e := newTestBroker(t)
	c := e.net.connect()
	c.closed = true
	c.onClose(fmt.Errorf("frame of 209715200 bytes exceeds socket.request.max.bytes: %w", env.ErrFrameTooLarge))
	require.Contains(t, e.logBuf.String(), "request frame too large")
	require.Contains(t, e.logBuf.String(), "remote="+c.remote)
	require.Empty(t, b.conns)
}
