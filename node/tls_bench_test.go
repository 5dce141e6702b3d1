package node

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
)

// BenchmarkNetFetchTLS measures what TLS costs a fetch: the server
// answers each request with a 1 MiB file region (SendParts) and the
// client reads it into one buffer, over plaintext with sendfile (the
// baseline), plaintext through user space (pread and write), and TLS
// (pread, encrypt, write; the client decrypts, on the same machine). The
// ratio of each rate to the baseline's in the same run is x_sendfile.
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
			req := binary.BigEndian.AppendUint32(nil, 5)
			req = append(req, "fetch"...)
			resp := make([]byte, 4+3+region)
			b.SetBytes(region)
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, resp); err != nil {
					b.Fatal(err)
				}
			}
			if got := binary.BigEndian.Uint32(resp); got != 3+region || !bytes.Equal(resp[7:], content) {
				b.Fatalf("a response of %d bytes, or not the region's", got)
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
