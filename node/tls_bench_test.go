package node

import (
	"bytes"
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
)

// BenchmarkNetFetchTLS measures what TLS costs a fetch: the server
// answers each request with a 1 MiB file region (SendParts) and the
// client reads it, over plaintext with sendfile (the baseline), plaintext
// through user space (pread and write), and TLS (pread, encrypt, write).
// The ratio to the baseline is reported as x_sendfile.
//
//	go test ./node -run '^$' -bench NetFetchTLS -benchtime 200x
func BenchmarkNetFetchTLS(b *testing.B) {
	const region = 1 << 20
	ca := newTestCA(b, "ca")
	content := bytes.Repeat([]byte("0123456789abcdef"), region/16)
	var baseline float64
	for _, mode := range []string{"plain-sendfile", "plain-readwrite", "tls"} {
		b.Run(mode, func(b *testing.B) {
			l := startLoop(b)
			n := NewNet(l, NetConfig{}, slog.New(slog.DiscardHandler))
			b.Cleanup(n.Close)
			n.UseSendfile(mode == "plain-sendfile")
			f := testFile(b, l, content)
			serve := func(c env.Conn) {
				c.OnFrame(func([]byte) {
					if err := c.SendParts([]env.Part{{Bytes: []byte("hdr")}, {File: f, Offset: 0, Length: region}}); err != nil {
						b.Errorf("SendParts: %v", err)
					}
				})
			}
			var addr string
			onLoop(b, l, func() {
				var ln env.Listener
				var err error
				if mode == "tls" {
					require.NoError(b, n.SetTLS("SSL", serverTLS(b, ca, ClientAuthNone)))
					ln, err = n.ListenTLS("127.0.0.1:0", "SSL", serve)
				} else {
					ln, err = n.Listen("127.0.0.1:0", serve)
				}
				require.NoError(b, err)
				addr = ln.Addr()
			})
			var c net.Conn = dialRaw(b, addr)
			if mode == "tls" {
				tc, err := rawTLS(b, addr, pool(ca), nil)
				require.NoError(b, err)
				c = tc
			}
			b.SetBytes(region)
			b.ResetTimer()
			for range b.N {
				writeRawFrame(b, c, []byte("fetch"))
				if got := readRawFrame(b, c); len(got) != region+3 {
					b.Fatalf("got %d bytes", len(got))
				}
			}
			b.StopTimer()
			mibs := float64(region) * float64(b.N) / b.Elapsed().Seconds() / (1 << 20)
			if mode == "plain-sendfile" {
				baseline = mibs
			} else if baseline > 0 {
				b.ReportMetric(mibs/baseline, "x_sendfile")
			}
		})
	}
}
