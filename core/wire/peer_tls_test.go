package wire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
)

// recordingTLS is a simulated env.SecureNet whose DialTLS is Dial,
// recording the listener each dial names.
type recordingTLS struct {
	env.Net
	dials []string
}

func (n *recordingTLS) ListenTLS(addr, _ string, accept func(env.Conn)) (env.Listener, error) {
	return n.Listen(addr, accept)
}

func (n *recordingTLS) DialTLS(addr, listener string, done func(env.Conn, error)) {
	n.dials = append(n.dials, listener)
	n.Dial(addr, done)
}

type tlsEnv struct {
	env.Env
	net env.Net
}

func (e tlsEnv) Net() env.Net { return e.net }

// TestPeerTLSListener: a Peer with TLSListener dials with DialTLS as a
// client of that listener, one without dials in plaintext, and one with
// it on a Net without TLS fails its dials.
func TestPeerTLSListener(t *testing.T) {
	for _, tc := range []struct {
		name     string
		listener string
		secure   bool
		want     []string // DialTLS's listeners
		answered bool
	}{
		{"TLS", "CONTROLLER", true, []string{"CONTROLLER"}, true},
		{"plaintext", "", true, nil, true},
		{"TLS without a SecureNet", "CONTROLLER", false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newPeerRig(t)
			r.srv.Start()
			rec := &recordingTLS{Net: r.cli.Net()}
			e := r.cli
			if tc.secure {
				e = tlsEnv{Env: r.cli, net: rec}
			}
			var dialErr error
			p := NewPeer(e, PeerConfig{Addr: "srv:9092", ClientID: "test", TLSListener: tc.listener,
				OnDialFailed: func(err error) { dialErr = err }})
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "x", "1"
			answered := false
			_, err := p.Do(req, 0, func(_ kmsg.Response, err error) { answered = err == nil })
			require.NoError(t, err)
			require.NoError(t, r.s.RunFor(100*time.Millisecond))
			require.Equal(t, tc.answered, answered)
			require.Equal(t, tc.want, rec.dials)
			if !tc.answered {
				require.ErrorContains(t, dialErr, "listener CONTROLLER is TLS but this environment has no TLS")
			}
		})
	}
}
