package wire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
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

// peerRig runs a Peer on a simulated process "cli" toward a server
// process "srv" that answers ApiVersions requests, or holds them, as the
// script says. Every event (a request answered or failed, a dial failed,
// a connection made or lost, a request reaching the server) is logged with
// the virtual time and printed by the next command.
type peerRig struct {
	t       *testing.T
	s       *sim.Sim
	srv     *sim.Process
	cli     env.Env
	start   time.Duration
	peer    *Peer
	calls   map[string]*Call
	hold    bool
	held    []heldRequest
	srvConn []env.Conn
	log     []string
}

type heldRequest struct {
	conn  env.Conn
	frame []byte
}

var apiVersionsOnly = protocol.NewTable(protocol.API{Key: kmsg.ApiVersions.Int16(), MaxVersion: 4})

func newPeerRig(t *testing.T) *peerRig {
	r := &peerRig{t: t, s: sim.New(sim.Config{Seed: 1}), calls: map[string]*Call{}}
	r.srv = r.s.AddProcess("srv", func(e env.Env) {
		r.srvConn = nil
		_, err := e.Net().Listen("srv:9092", func(c env.Conn) {
			r.srvConn = append(r.srvConn, c)
			c.OnFrame(func(f []byte) { r.serve(c, f) })
			c.OnClose(func(error) {})
		})
		require.NoError(t, err)
	})
	r.s.AddProcess("cli", func(e env.Env) { r.cli = e }).Start()
	require.NoError(t, r.s.RunFor(time.Millisecond))
	require.NotNil(t, r.cli)
	r.start = r.s.Now()
	return r
}

// serve answers a request with the id the client software name carries,
// or holds it.
func (r *peerRig) serve(c env.Conn, frame []byte) {
	hdr, req, err := ParseRequest(apiVersionsOnly, frame)
	require.NoError(r.t, err)
	r.logf("srv: got %s", req.(*kmsg.ApiVersionsRequest).ClientSoftwareName)
	if r.hold {
		r.held = append(r.held, heldRequest{c, frame})
		return
	}
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	_ = c.Send(EncodeResponse(hdr.CorrelationID, resp)) // the conn may have ended while held
}

func (r *peerRig) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf("%v: ", (r.s.Now()-r.start).Round(100*time.Microsecond))+fmt.Sprintf(format, args...))
}

func (r *peerRig) flush() string {
	out := strings.Join(r.log, "\n")
	r.log = nil
	if out == "" {
		return "ok"
	}
	return out
}

func errName(err error) string {
	for _, e := range []error{ErrConnClosed, ErrTooManyInflight, ErrPeerClosed, ErrQueueFull, env.ErrConnRefused} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return err.Error()
}

func (r *peerRig) cmd(t *testing.T, d *datadriven.TestData) string {
	dur := func(key string) time.Duration {
		var s string
		d.ScanArgs(t, key, &s)
		v, err := time.ParseDuration(s)
		require.NoError(t, err)
		return v
	}
	intArg := func(key string) int {
		v := 0
		if d.HasArg(key) {
			d.ScanArgs(t, key, &v)
		}
		return v
	}
	switch d.Cmd {
	case "peer":
		cfg := PeerConfig{
			Addr: "srv:9092", ClientID: "test",
			MaxInflight: intArg("max-inflight"), MaxQueued: intArg("max-queued"),
			ResetWhenFull: d.HasArg("reset-when-full"),
			OnDialFailed:  func(err error) { r.logf("dial failed: %s", errName(err)) },
			OnConnected:   func() { r.logf("connected") },
			OnLost:        func(err error) { r.logf("lost") },
		}
		if d.HasArg("redial-min") {
			cfg.Redial = Backoff{Min: dur("redial-min"), Max: dur("redial-max")}
		}
		r.peer = NewPeer(r.cli, cfg)
	case "server":
		switch d.CmdArgs[0].Key {
		case "up":
			r.srv.Start()
		case "down":
			r.srv.Kill()
		case "hold":
			r.hold = true
		case "answer":
			r.hold = false
			held := r.held
			r.held = nil
			for _, h := range held {
				r.serve(h.conn, h.frame)
			}
		case "close-conns":
			for _, c := range r.srvConn {
				c.Close()
			}
			r.srvConn = nil
		}
	case "do":
		for _, arg := range d.CmdArgs {
			if arg.Key == "timeout" {
				continue
			}
			id := arg.Key
			var timeout time.Duration
			if d.HasArg("timeout") {
				timeout = dur("timeout")
			}
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, id, "1"
			c, err := r.peer.Do(req, timeout, func(resp kmsg.Response, err error) {
				if err != nil {
					r.logf("%s: failed: %s", id, errName(err))
					return
				}
				r.logf("%s: answered", id)
			})
			if err != nil {
				r.logf("%s: refused: %s", id, errName(err))
			}
			r.calls[id] = c
		}
	case "cancel":
		r.calls[d.CmdArgs[0].Key].Cancel()
	case "dial":
		r.peer.Dial()
	case "reset":
		r.peer.Reset()
	case "close":
		r.peer.Close()
	case "run":
		require.NoError(t, r.s.RunFor(dur("for")))
	case "state":
		r.logf("connected=%t dialing=%t queued=%d", r.peer.Connected(), r.peer.Dialing(), r.peer.Queued())
	default:
		t.Fatalf("unknown command %q", d.Cmd)
	}
	return r.flush()
}

func TestPeer(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		r := newPeerRig(t)
		datadriven.RunTest(t, path, r.cmd)
	})
}
