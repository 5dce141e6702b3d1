package wire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/sim"
)

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
