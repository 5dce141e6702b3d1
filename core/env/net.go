package env

import "crypto/x509"

// Net is a process's network endpoint: framed, ordered, reliable byte streams
// between addresses, like TCP with Kafka's size-prefixed framing done by the
// implementation. A frame is one Kafka request or response without its
// 4-byte length prefix.
//
// # Delivery model
//
//   - Frames on one Conn arrive in the order they were sent, each at most
//     once, never corrupted, never merged or split. There is no ordering
//     between different Conns.
//   - A Conn ends exactly once, from either side or from the network (a
//     reset, a partition that outlives the transport's patience, a crash of
//     the peer). OnClose then runs exactly once, after the last frame that
//     conn will ever deliver, also after a local Close (with a nil error).
//   - Frames passed to Send before the conn ended may or may not have
//     reached the peer. A request whose response never came is ambiguous: the
//     peer may have processed it. Protocols must cope (Kafka's idempotent
//     producer and Raft's terms are the answers to this).
//   - A frame longer than the implementation's maximum frame size closes the
//     connection with an error wrapping ErrFrameTooLarge; its bytes are never
//     delivered.
//
// Callbacks registered on a Conn run on the loop that owns the Net.
type Net interface {
	// Listen accepts connections on addr ("host:port"). accept runs on the
	// loop for every new connection; it must register the conn's handlers
	// before returning, and no frame is delivered before it returns.
	Listen(addr string, accept func(Conn)) (Listener, error)

	// Dial connects to addr and calls done on the loop with the new conn or
	// an error (refused, unreachable, timed out). With a non-nil conn, done
	// must register its handlers before returning.
	Dial(addr string, done func(Conn, error))
}

// Listener is a listening address.
type Listener interface {
	// Addr is the address actually bound (with the real port when ":0" was
	// asked for).
	Addr() string
	// Close stops accepting. Established conns are unaffected.
	Close() error
}

// Conn is one established connection.
type Conn interface {
	// OnFrame registers the handler for received frames. The handler owns
	// the slice it is given.
	OnFrame(func(frame []byte))

	// OnClose registers the handler that runs once when the conn ends; err
	// is nil after a local Close, otherwise it says why (it may wrap
	// ErrConnReset or ErrFrameTooLarge).
	OnClose(func(err error))

	// Send queues one frame. It never blocks; the conn owns frame from now
	// on and the caller must not modify it. Sending on an ended conn
	// returns an error wrapping ErrClosed and sends nothing.
	Send(frame []byte) error

	// SendParts queues one frame made of parts, in order: byte slices and
	// regions of files (a fetch response's record bytes, which the
	// production transport sends with sendfile, never copying them
	// through user space). Like Send it never blocks and the conn owns
	// the byte slices from now on. The transport takes its own reference
	// to every file region before returning, so the caller may close the
	// file or unpin the region at once; the bytes sent are the file's
	// when the transport sends them, as with sendfile (a truncation
	// meanwhile changes them, which Kafka's fetch accepts too). A region
	// that cannot be read in full when it is sent ends the conn, because
	// the frame's size prefix already promised its bytes.
	SendParts(parts []Part) error

	// Buffered reports the bytes queued by Send but not yet handed to the
	// transport, so that a producer of responses can apply back-pressure.
	Buffered() int

	// Pause stops reading requests from the peer until Resume: the
	// transport stops reading the socket, so TCP pushes back on the peer
	// instead of its frames filling our memory. Frames the transport had
	// already read may still be delivered after Pause (at most a small,
	// transport-defined number: the production transport's read-ahead is
	// node.MaxQueuedFramesPerConn frames); the handler must accept them.
	// Pause and Resume are idempotent.
	Pause()
	// Resume undoes Pause.
	Resume()

	// Close ends the conn. Queued frames not yet handed to the transport
	// are discarded.
	Close()

	// LocalAddr and RemoteAddr identify the two ends.
	LocalAddr() string
	RemoteAddr() string
}

// FrameReceiver is implemented by a Conn whose transport receives a
// frame's bytes over time (the production TCP transport; the simulator,
// for frames on a link it gives a bandwidth, which it delivers whole once
// their last byte is due, applying the node's progress rule meanwhile).
// ReceivingFrame
// reports whether part of a frame has arrived and the rest has not yet,
// so that an idle timeout does not close a connection in the middle of a
// slow upload: bytes are moving, as Kafka's connections.max.idle.ms
// counts them. (The transport bounds how slowly a frame may arrive.)
type FrameReceiver interface {
	ReceivingFrame() bool
}

// Part is a piece of a frame passed to Conn.SendParts: either Bytes, or,
// when File is not nil, Length bytes of File at Offset.
type Part struct {
	Bytes  []byte
	File   File
	Offset int64
	Length int64
}

// Len is the number of bytes the part contributes to its frame.
func (p Part) Len() int64 {
	if p.File != nil {
		return p.Length
	}
	return int64(len(p.Bytes))
}

// SecureNet is implemented by a Net that can run TLS (the node's; the
// simulator's cannot, and its scenarios use SASL without TLS). The TLS
// configuration of each listener (its certificate, trust store and client
// authentication, Kafka's ssl.* keys) is the implementation's: the core
// names the listener, never a key or a file.
type SecureNet interface {
	// ListenTLS is Listen with TLS as the named listener's configuration
	// says. accept runs once the handshake completed; a handshake that
	// fails or times out closes the connection without calling accept.
	ListenTLS(addr, listener string, accept func(Conn)) (Listener, error)
	// DialTLS is Dial with TLS, as a client of the named listener: it
	// verifies the server by the listener's trust store and presents the
	// listener's certificate, for mutual TLS between nodes. done runs once
	// the handshake completed or failed.
	DialTLS(addr, listener string, done func(Conn, error))
}

// TLSConn is implemented by a Conn over TLS.
type TLSConn interface {
	// PeerCertificate is the peer's verified leaf certificate, or nil if
	// it sent none (a client on a listener with ssl.client.auth=none or
	// requested).
	PeerCertificate() *x509.Certificate
}

// PeerCertificate is c's peer's verified leaf certificate: nil when c is
// not over TLS or the peer sent none.
func PeerCertificate(c Conn) *x509.Certificate {
	if tc, ok := c.(TLSConn); ok {
		return tc.PeerCertificate()
	}
	return nil
}
