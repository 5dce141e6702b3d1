package wire

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/sim"
)

func testTable() protocol.Table {
	return protocol.NewTable(
		protocol.API{Key: kmsg.Metadata.Int16(), MinVersion: 0, MaxVersion: 12},
		protocol.API{Key: kmsg.ApiVersions.Int16(), MinVersion: 0, MaxVersion: 4},
	)
}

func frameOf(req kmsg.Request, corr int32) []byte {
	return EncodeRequest(kmsg.NewRequestFormatter(kmsg.FormatterClientID("c1")), req, corr)
}

func TestParseRequest(t *testing.T) {
	tb := testTable()
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	hdr, req, err := ParseRequest(tb, frameOf(md, 9))
	require.NoError(t, err)
	require.Equal(t, int32(9), hdr.CorrelationID)
	require.Equal(t, "c1", *hdr.ClientID)
	require.Equal(t, "orders", *req.(*kmsg.MetadataRequest).Topics[0].Topic)

	bad := func(frame []byte, reason string) {
		t.Helper()
		_, _, err := ParseRequest(tb, frame)
		var fe *FrameError
		require.ErrorAs(t, err, &fe)
		require.Contains(t, fe.Error(), reason)
	}
	hdrOnly := func(key, version int16) []byte {
		f := kbin.AppendInt16(nil, key)
		f = kbin.AppendInt16(f, version)
		return kbin.AppendInt32(f, 1)
	}
	bad(nil, "shorter than a request header")
	bad(hdrOnly(kmsg.Produce.Int16(), 3), "not served on this listener")
	bad(hdrOnly(9999, 0), "unknown API key 9999")
	bad(hdrOnly(kmsg.Metadata.Int16(), 13), "version 13 not supported")
	bad(hdrOnly(kmsg.Metadata.Int16(), 1), "malformed request header")
	full := frameOf(md, 9)
	bad(full[:len(full)-2], "malformed Metadata v12 body")

	// A too-new ApiVersions: only the header is read.
	h, req, err := ParseRequest(tb, append(hdrOnly(kmsg.ApiVersions.Int16(), 9), 0xff, 0xfe))
	require.ErrorIs(t, err, ErrApiVersionsTooNew)
	require.Nil(t, req)
	require.Equal(t, int16(9), h.Version)
	resp := tb.ApiVersionsUnsupported()
	require.Equal(t, int16(0), resp.Version)
	require.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)
	require.Len(t, resp.ApiKeys, 2)
}

// clientPair runs a Client on one simulated process against a server
// process whose handler answers frames as the test says.
type clientPair struct {
	s      *sim.Sim
	client *Client
	closed error
	serve  func(c env.Conn, frame []byte)
}

func newClientPair(t *testing.T) *clientPair {
	cp := &clientPair{s: sim.New(sim.Config{Seed: 3})}
	cp.s.AddProcess("srv", func(e env.Env) {
		_, err := e.Net().Listen("srv:9092", func(c env.Conn) {
			c.OnFrame(func(f []byte) { cp.serve(c, f) })
			c.OnClose(func(error) {})
		})
		require.NoError(t, err)
	}).Start()
	cp.s.AddProcess("cli", func(e env.Env) {
		e.Net().Dial("srv:9092", func(c env.Conn, err error) {
			require.NoError(t, err)
			cp.client = NewClient(c, ClientConfig{ClientID: "test", MaxInflight: 3, OnClose: func(err error) { cp.closed = err }})
		})
	}).Start()
	require.NoError(t, cp.s.RunFor(time.Second))
	require.NotNil(t, cp.client)
	return cp
}

func TestClientMatchesOutOfOrderResponses(t *testing.T) {
	cp := newClientPair(t)
	var held [][]byte
	cp.serve = func(c env.Conn, frame []byte) {
		held = append(held, frame)
		if len(held) < 3 {
			return
		}
		// Answer the three in reverse order.
		for i := len(held) - 1; i >= 0; i-- {
			hdr, req, err := ParseRequest(protocol.NewTable(protocol.API{Key: kmsg.ApiVersions.Int16(), MaxVersion: 4}), held[i])
			require.NoError(t, err)
			resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
			resp.ThrottleMillis = hdr.CorrelationID
			require.NoError(t, c.Send(EncodeResponse(hdr.CorrelationID, resp)))
		}
	}
	var got []int32
	for i := 0; i < 3; i++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3 // carries ThrottleMillis, which the server echoes the correlation id in
		require.NoError(t, cp.client.Do(req, func(r kmsg.Response, err error) {
			require.NoError(t, err)
			got = append(got, r.(*kmsg.ApiVersionsResponse).ThrottleMillis)
		}))
	}
	err := cp.client.Do(kmsg.NewPtrApiVersionsRequest(), func(kmsg.Response, error) { t.Fatal("refused request completed") })
	require.ErrorIs(t, err, ErrTooManyInflight)
	require.NoError(t, cp.s.RunFor(time.Second))
	require.Equal(t, []int32{2, 1, 0}, got, "each response reached its own request")
	require.Zero(t, cp.client.Inflight())
}

func TestClientFailsPendingOnCloseAndBadResponses(t *testing.T) {
	cp := newClientPair(t)
	cp.serve = func(c env.Conn, frame []byte) {
		// A response with a correlation id nobody asked for.
		require.NoError(t, c.Send(kbin.AppendInt32(nil, 12345)))
	}
	var errs []error
	for i := 0; i < 2; i++ {
		require.NoError(t, cp.client.Do(kmsg.NewPtrApiVersionsRequest(), func(_ kmsg.Response, err error) { errs = append(errs, err) }))
	}
	require.NoError(t, cp.s.RunFor(time.Second))
	require.Len(t, errs, 2)
	for _, err := range errs {
		require.True(t, errors.Is(err, ErrConnClosed), "%v", err)
	}
	require.True(t, cp.client.Closed())
	require.ErrorIs(t, cp.client.Do(kmsg.NewPtrApiVersionsRequest(), nil), ErrConnClosed)
}
