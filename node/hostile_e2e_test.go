package node_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/node"
)

// Attacks on the transport (issue 22, findings 4, 6 and 8). Each runs
// against a real node on loopback and asserts what another client sees
// meanwhile: a Metadata answered within responsiveBound, /healthz too,
// memory within a stated bound, and the node serving afterwards.

// responsiveBound is how fast another client's Metadata (and /healthz) is
// answered during an attack: 1 s, as issue 22 asks. Under the race
// detector, which slows every goroutine several times over, on a shared
// 2-core machine, the bound is 3 s (without it the answers take about a
// millisecond).
var responsiveBound = map[bool]time.Duration{false: time.Second, true: 3 * time.Second}[raceEnabled]

// heapInUse is the live heap after a collection, in bytes.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// rss is this process's resident set (the node runs in the test process).
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	require.NoError(t, err)
	fields := strings.Fields(string(b))
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	require.NoError(t, err)
	return pages * int64(os.Getpagesize())
}

// metadataRTT sends a Metadata v1 request for no topics on a fresh
// connection from 127.0.0.1 and returns how long the answer took.
func metadataRTT(t *testing.T, addr string) time.Duration {
	t.Helper()
	return metadataRTTFrom(t, "127.0.0.1", addr)
}

// metadataRTTFrom is metadataRTT from a loopback address of its own.
func metadataRTTFrom(t *testing.T, from, addr string) time.Duration {
	t.Helper()
	start := time.Now()
	c := dialFrom(t, from, addr)
	defer c.Close()
	_, err := c.Write(withSize(metadataRequest(7)))
	require.NoError(t, err)
	resp := node.ReadRawFrame(t, c)
	require.Equal(t, uint32(7), binary.BigEndian.Uint32(resp), "correlation id")
	return time.Since(start)
}

func metadataRequest(corr int32) []byte {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 1
	req.Topics = []kmsg.MetadataRequestTopic{}
	return wire.EncodeRequest(kmsg.NewRequestFormatter(kmsg.FormatterClientID("probe")), req, corr)
}

// dialFrom opens a TCP connection to addr from the loopback address from
// (127.0.0.x: every one of them is this machine's on Linux).
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: e2eTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(e2eTimeout)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// requireResponsive checks that another client is served within
// responsiveBound, and /healthz too.
func requireResponsive(t *testing.T, n *node.Node) {
	t.Helper()
	requireResponsiveFrom(t, n, "127.0.0.1")
}

func requireResponsiveFrom(t *testing.T, n *node.Node, from string) {
	t.Helper()
	rtt := metadataRTTFrom(t, from, n.Addr())
	require.Less(t, rtt, responsiveBound, "Metadata took %v", rtt)
	start := time.Now()
	code, body := httpStatus(t, "http://"+n.MetricsAddr()+"/healthz")
	require.Equal(t, http.StatusOK, code, body)
	require.Less(t, time.Since(start), responsiveBound, "/healthz took %v", time.Since(start))
}

func withSize(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

// requireClosedWithin waits for the node to close c, at most d from now.
func requireClosedWithin(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	requireClosedByNode(t, c)
}

// requireOpen checks that the node has not closed c (a read times out).
func requireOpen(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "the node closed the connection: %v", err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(e2eTimeout)))
}

// partialFrame writes a size prefix of announced bytes, then sent bytes
// of the frame, and stalls. The bytes are written in the background: a
// node that stops reading (its budget is full) blocks the write, which is
// the point.
func partialFrame(t *testing.T, addr string, announced, sent int) net.Conn {
	t.Helper()
	c := rawConn(t, addr)
	go func() {
		_, _ = c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(announced)), bytes.Repeat([]byte{0xa5}, sent)...))
	}()
	return c
}

// heapHeld is the heap memory the Go runtime holds from the OS (what it
// has not returned), without collecting.
func heapHeld() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapSys - ms.HeapReleased)
}

// TestHostilePartialFrames is finding 4: ten connections each announce a
// 100 MiB frame, send 1 MiB + 1 byte of it and stall (the node went from
// 21 MB to 1.05 GB). The node holds about what arrived (its buffers grow
// with the bytes: 2 MiB a connection), stays responsive, closes the
// stalled frames at the progress rule's timeout, and gives the memory
// back.
func TestHostilePartialFrames(t *testing.T) {
	n := startNodeWithProperties(t, t.TempDir(), "strata.socket.request.read.timeout.ms=2000\n")
	requireResponsive(t, n)
	heap0, held0, rss0 := heapInUse(), heapHeld(), rss(t)

	const conns, announced, sent = 10, 100 << 20, 1<<20 + 1
	attackers := make([]net.Conn, conns)
	for i := range attackers {
		attackers[i] = partialFrame(t, n.Addr(), announced, sent)
	}
	time.Sleep(500 * time.Millisecond) // the node reads what was sent
	requireResponsive(t, n)
	heap1, rss1 := heapInUse(), rss(t)
	t.Logf("heap %d -> %d MiB, rss %d -> %d MiB with %d partial frames", heap0>>20, heap1>>20, rss0>>20, rss1>>20, conns)
	require.Less(t, heap1-heap0, int64(32<<20), "heap grew by %d MiB for %d MiB received", (heap1-heap0)>>20, conns*sent>>20)
	if !raceEnabled { // the race detector's shadow memory is never given back
		require.Less(t, rss1-rss0, int64(64<<20), "rss grew by %d MiB", (rss1-rss0)>>20)
	}

	// Stalled: closed within the 2 s window (after 2 s, plus one for
	// slack).
	for _, c := range attackers {
		requireClosedWithin(t, c, 3*time.Second)
	}
	// The node gives the memory back on its own (no collection from the
	// test until then).
	require.Eventually(t, func() bool {
		return heapHeld()-held0 < 16<<20 && (raceEnabled || rss(t)-rss0 < 16<<20)
	}, 5*time.Second, 100*time.Millisecond, "memory not given back: runtime holds %d -> %d MiB, rss %d -> %d MiB",
		held0>>20, heapHeld()>>20, rss0>>20, rss(t)>>20)
	t.Logf("rss %d MiB after the connections closed", rss(t)>>20)
	requireResponsive(t, n)
}

// TestHostilePartialFramesFillTheBudget: stalled partial frames fill
// queued.max.request.bytes (4 MiB here); the readers of more such frames
// wait, reading nothing, so the heap stays near the budget, and a client's
// Metadata, which arrives whole, still gets through at once.
func TestHostilePartialFramesFillTheBudget(t *testing.T) {
	n := startNodeWithProperties(t, t.TempDir(), "queued.max.request.bytes=4194304\nstrata.socket.request.read.timeout.ms=2000\n")
	requireResponsive(t, n)
	heap0 := heapInUse()
	const conns, announced, sent = 20, 100 << 20, 1<<20 + 1
	attackers := make([]net.Conn, conns)
	for i := range attackers {
		attackers[i] = partialFrame(t, n.Addr(), announced, sent)
	}
	time.Sleep(500 * time.Millisecond)
	requireResponsive(t, n)
	heap1 := heapInUse()
	t.Logf("heap %d -> %d MiB with %d MiB sent against a 4 MiB budget", heap0>>20, heap1>>20, conns*sent>>20)
	// The budget, one overdraft frame (at most twice its 1 MiB) and the
	// waiting readers' 16 KiB read buffers.
	require.Less(t, heap1-heap0, int64(12<<20), "heap grew by %d MiB", (heap1-heap0)>>20)
	for _, c := range attackers {
		_ = c.Close()
	}
	requireResponsive(t, n)
}

// TestHostileTrickle is finding 6's slow frame: one byte a second was
// never timed out. Under a 1 s window at 1024 bytes a second, a trickler
// is closed within about a second, and a client sending a 12 KiB request
// at 6 KiB a second is served.
func TestHostileTrickle(t *testing.T) {
	n := startNodeWithProperties(t, t.TempDir(), "strata.socket.request.read.timeout.ms=1000\n")
	requireResponsive(t, n)

	trickler := rawConn(t, n.Addr())
	frame := withSize(metadataRequest(1))
	start := time.Now()
	var err error
	for i := 0; i < len(frame) && err == nil; i++ {
		_, err = trickler.Write(frame[i : i+1])
		time.Sleep(100 * time.Millisecond) // 10 bytes a second
		if i%5 == 0 {
			requireResponsive(t, n)
		}
	}
	requireClosedWithin(t, trickler, 3*time.Second)
	took := time.Since(start)
	require.Less(t, took, 3*time.Second, "trickler closed after %v", took)
	t.Logf("trickler closed after %v", took)

	// Slow but within the rule: Metadata v4 for 500 missing topics (no
	// auto-creation), in 2 KiB pieces every 1/3 s.
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 4
	for i := range 500 {
		req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(fmt.Sprintf("missing-topic-%014d", i))})
	}
	big := withSize(wire.EncodeRequest(kmsg.NewRequestFormatter(kmsg.FormatterClientID("slow")), req, 2))
	require.Greater(t, len(big), 12<<10)
	slow := rawConn(t, n.Addr())
	for off := 0; off < len(big); off += 2 << 10 {
		_, err := slow.Write(big[off:min(off+2<<10, len(big))])
		require.NoError(t, err)
		time.Sleep(time.Second / 3)
	}
	resp := node.ReadRawFrame(t, slow)
	require.Equal(t, uint32(2), binary.BigEndian.Uint32(resp))
}

// TestHostileIdleSocketsAtMaxConnections is finding 6: with
// max.connections=20, 20 silent sockets made every new client fail for
// ever. connections.max.idle.ms (1 s here) closes them, on the client
// listener and on the controller listener alike.
func TestHostileIdleSocketsAtMaxConnections(t *testing.T) {
	n := startNodeWithProperties(t, t.TempDir(), "max.connections=20\nconnections.max.idle.ms=1000\n")
	requireResponsive(t, n)
	start := time.Now()
	silent := make([]net.Conn, 20)
	for i := range silent {
		silent[i] = rawConn(t, n.Addr())
	}
	ctrl := rawConn(t, n.ControllerAddr())
	time.Sleep(100 * time.Millisecond)
	refused := rawConn(t, n.Addr())
	requireClosedWithin(t, refused, time.Second) // max.connections is max.connections
	requireOpen(t, silent[0])
	requireOpen(t, ctrl)

	for _, c := range silent {
		requireClosedWithin(t, c, 3*time.Second)
	}
	requireClosedWithin(t, ctrl, 3*time.Second)
	took := time.Since(start)
	require.Greater(t, took, time.Second, "closed before connections.max.idle.ms")
	requireResponsive(t, n)

	// A connection that keeps asking is never idle.
	busy := rawConn(t, n.Addr())
	for i := range 6 {
		_, err := busy.Write(withSize(metadataRequest(int32(i))))
		require.NoError(t, err)
		node.ReadRawFrame(t, busy)
		time.Sleep(400 * time.Millisecond)
	}
	requireOpen(t, busy)
}

// TestHostilePerIPLimit: max.connections.per.ip=3 with
// max.connections.per.ip.overrides=127.0.0.2:5 (the finding 6):
// a connection past its address's bound is closed at once, on both
// listeners, and other addresses are served meanwhile.
func TestHostilePerIPLimit(t *testing.T) {
	n := startNodeWithProperties(t, t.TempDir(), "max.connections.per.ip=3\nmax.connections.per.ip.overrides=127.0.0.2:5\n")
	requireResponsiveFrom(t, n, "127.0.0.3")
	for _, tc := range []struct {
		from  string
		limit int
	}{{"127.0.0.1", 3}, {"127.0.0.2", 5}} {
		var held []net.Conn
		for range tc.limit {
			held = append(held, dialFrom(t, tc.from, n.Addr()))
		}
		over := dialFrom(t, tc.from, n.Addr())
		requireClosedWithin(t, over, time.Second)
		for _, c := range held {
			requireOpen(t, c)
		}
		requireResponsiveFrom(t, n, "127.0.0.3")
		// A closed connection frees its slot.
		require.NoError(t, held[0].Close())
		require.Eventually(t, func() bool {
			c := dialFrom(t, tc.from, n.Addr())
			_, err := c.Write(withSize(metadataRequest(9)))
			if err != nil {
				return false
			}
			var size [4]byte
			_, err = io.ReadFull(c, size[:])
			return err == nil
		}, 3*time.Second, 50*time.Millisecond, "%s: no slot after a close", tc.from)
	}
	// The controller listener counts its own connections alike.
	var ctrl []net.Conn
	for range 3 {
		ctrl = append(ctrl, dialFrom(t, "127.0.0.4", n.ControllerAddr()))
	}
	requireClosedWithin(t, dialFrom(t, "127.0.0.4", n.ControllerAddr()), time.Second)
	requireOpen(t, ctrl[2])
}

// TestHostileValidThenBadFrame is finding 8's: a valid request followed
// on the same connection by a bad frame (and more bytes after it) is
// answered before the connection closes.
func TestHostileValidThenBadFrame(t *testing.T) {
	n := startNodeWithProperties(t, t.TempDir(), "")
	for i := range 20 {
		c := rawConn(t, n.Addr())
		bad := binary.BigEndian.AppendUint16(nil, 0x7f00) // api key 32512
		bad = binary.BigEndian.AppendUint16(bad, 0)
		bad = binary.BigEndian.AppendUint32(bad, 2)
		burst := append(withSize(metadataRequest(int32(100+i))), withSize(bad)...)
		burst = append(burst, withSize(metadataRequest(3))...) // after the bad frame: not served
		burst = append(burst, make([]byte, 256<<10)...)        // nor read: left in the socket
		_, err := c.Write(burst)
		require.NoError(t, err)
		resp := node.ReadRawFrame(t, c)
		require.Equal(t, uint32(100+i), binary.BigEndian.Uint32(resp), "the request before the bad frame is answered")
		requireClosedByNode(t, c)
	}
	requireResponsive(t, n)
}
