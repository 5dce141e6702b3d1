package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/strata-log/strata/core/env"
)

// The Net's TLS side (env.SecureNet): a TLS conn is a tcpConn whose nc is
// a tls.Conn over the socket, so framing, back-pressure and the progress
// rule are the plaintext conn's; only the handshake before it and the
// writing of file regions (writeTLS: no sendfile) differ.

// SetTLS registers the TLS configuration of the listener named listener
// (any case), which ListenTLS and DialTLS with that name use. It reads and
// checks the certificate, key and trust store files now; the error wraps
// ErrInvalidConfig and names the key at fault. Call it before the
// listener starts; calling it again for a name replaces the configuration
// for the handshakes that follow, on listeners already started too.
func (n *Net) SetTLS(listener string, cfg TLSConfig) error {
	if cfg.Listener == "" {
		cfg.Listener = strings.ToUpper(listener)
	}
	s, err := newTLSStore(cfg, n.log)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.tls[strings.ToUpper(listener)] = s
	n.mu.Unlock()
	return nil
}

// tlsStore returns the registered TLS configuration of listener.
func (n *Net) tlsStore(listener string) (*tlsStore, error) {
	n.mu.Lock()
	s := n.tls[strings.ToUpper(listener)]
	n.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("%w: listener %s has no TLS configuration (ssl.* keys)", ErrInvalidConfig, listener)
	}
	return s, nil
}

// ListenTLS implements env.SecureNet: Listen, with each accepted
// connection's TLS handshake run on a goroutine of its own, bounded by
// NetConfig.TLSHandshakeTimeout, before accept runs on the loop. A
// handshake that fails or times out closes the socket; the core never
// sees that connection.
func (n *Net) ListenTLS(addr, listener string, accept func(env.Conn)) (env.Listener, error) {
	s, err := n.tlsStore(listener)
	if err != nil {
		return nil, err
	}
	if !s.cfg.HasCertificate() {
		return nil, fmt.Errorf("%w: listener %s accepts TLS but has no certificate: set %s, or %s and %s",
			ErrInvalidConfig, s.cfg.Listener, KeySSLKeystoreLocation, KeySSLCertificateLocation, KeySSLKeyLocation)
	}
	nl, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, netErr(err)
	}
	l := &tcpListener{net: n, nl: nl, accept: accept, tlsName: s.cfg.Listener,
		handshakes: make(chan struct{}, n.cfg.MaxTLSHandshakes), stop: make(chan struct{})}
	n.mu.Lock()
	n.listeners[l] = struct{}{}
	n.mu.Unlock()
	if !n.goroutine(l.acceptLoop) {
		_ = nl.Close()
		return nil, fmt.Errorf("listen %s: %w", addr, env.ErrClosed)
	}
	return l, nil
}

// handshakeSlot takes a slot for the next accepted connection's
// handshake, waiting while MaxTLSHandshakes are in progress (the kernel's
// backlog holds the connections meanwhile, as Kafka's acceptor waits for
// a connection slot). It reports false when the listener or the Net
// closed.
func (l *tcpListener) handshakeSlot() bool {
	select {
	case l.handshakes <- struct{}{}:
		return true
	default:
	}
	if now := time.Now(); now.Sub(l.fullLogged) >= fullLogInterval {
		l.fullLogged = now
		l.net.log.Warn("TLS handshakes in progress at their bound; accepting no more until one ends",
			"listener", l.tlsName, "addr", l.Addr(), "bound", cap(l.handshakes))
	}
	select {
	case l.handshakes <- struct{}{}:
		return true
	case <-l.stop:
		return false
	case <-l.net.ctx.Done():
		return false
	}
}

// fullLogInterval bounds how often a TLS listener logs that its
// handshakes are at their bound.
const fullLogInterval = 10 * time.Second

// handshake runs the server side of an accepted connection's handshake,
// then delivers it, and gives its handshake slot back.
func (l *tcpListener) handshake(raw net.Conn) {
	defer func() { <-l.handshakes }()
	n := l.net
	var tc *tls.Conn
	s, err := n.tlsStore(l.tlsName)
	if err == nil {
		tc = tls.Server(raw, s.base)
		err = n.handshake(tc)
	}
	if err != nil {
		_ = raw.Close()
		n.log.Info("TLS handshake failed", "listener", l.tlsName, "remote", raw.RemoteAddr().String(), "err", err)
		return
	}
	c := n.newConn(raw, tc, true)
	if c == nil {
		return
	}
	l.deliver(c, &tlsConn{tcpConn: c, peer: peerCertificate(tc.ConnectionState(), false)})
}

// handshake runs tc's handshake within the handshake timeout, or until
// the Net closes (HandshakeContext then closes the socket).
func (n *Net) handshake(tc *tls.Conn) error {
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.TLSHandshakeTimeout)
	defer cancel()
	err := tc.HandshakeContext(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("TLS handshake not done within %v: %w", n.cfg.TLSHandshakeTimeout, env.ErrTimeout)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("TLS handshake: node shutting down: %w", env.ErrClosed)
	}
	return fmt.Errorf("TLS handshake: %w", netErr(err))
}

// DialTLS implements env.SecureNet: Dial, then the client side of a TLS
// handshake on the same helper goroutine, bounded by
// NetConfig.TLSHandshakeTimeout, before done runs on the loop. The server
// is verified by the listener's trust store and, with
// ssl.endpoint.identification.algorithm=https, by the host in addr; the
// listener's certificate is presented when the server asks for one.
func (n *Net) DialTLS(addr, listener string, done func(env.Conn, error)) {
	s, err := n.tlsStore(listener)
	if err != nil {
		n.loop.Post(func() { done(nil, fmt.Errorf("dial %s: %w", addr, err)) })
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		n.loop.Post(func() { done(nil, fmt.Errorf("dial %s: %w", addr, err)) })
		return
	}
	started := n.goroutine(func() {
		fail := func(err error) {
			err = fmt.Errorf("dial %s: %w", addr, err)
			n.loop.Post(func() { done(nil, err) })
		}
		d := net.Dialer{Timeout: DialTimeout}
		raw, err := d.DialContext(n.ctx, "tcp", addr)
		if err != nil {
			fail(netErr(err))
			return
		}
		tc := tls.Client(raw, s.clientConfig(host))
		if err := n.handshake(tc); err != nil {
			_ = raw.Close()
			fail(err)
			return
		}
		c := n.newConn(raw, tc, false)
		if c == nil {
			return // Net closed meanwhile; raw is closed
		}
		face := &tlsConn{tcpConn: c, peer: peerCertificate(tc.ConnectionState(), true)}
		n.loop.Post(func() {
			done(face, nil)
			c.start()
		})
	})
	if !started {
		err := fmt.Errorf("dial %s: %w", addr, env.ErrClosed)
		n.loop.Post(func() { done(nil, err) })
	}
}

// tlsConn is the face of a TLS tcpConn given to the core: env.Conn (and
// env.FrameReceiver) by the tcpConn, env.TLSConn by the verified peer
// certificate. Plaintext conns are not env.TLSConn, so the core can tell
// the two apart.
type tlsConn struct {
	*tcpConn
	peer *x509.Certificate
}

var (
	_ env.TLSConn       = (*tlsConn)(nil)
	_ env.Conn          = (*tlsConn)(nil)
	_ env.FrameReceiver = (*tlsConn)(nil)
)

// PeerCertificate implements env.TLSConn.
func (c *tlsConn) PeerCertificate() *x509.Certificate { return c.peer }
