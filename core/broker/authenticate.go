package broker

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/sasl"
	"github.com/strata-log/strata/core/wire"
)

// authState is where a connection stands in its authentication (Kafka's
// SaslServerAuthenticator states).
type authState int8

const (
	// authTransport: the transport authenticated the connection, or
	// nothing does (PLAINTEXT, SSL); no SASL request is expected.
	authTransport authState = iota
	// authHandshake: a SASL listener's connection before (or, for a
	// re-authentication, after) SaslHandshake; ApiVersions and
	// SaslHandshake are served.
	authHandshake
	// authExchange: SaslHandshake v1 chose a mechanism; SaslAuthenticate
	// requests carry the tokens.
	authExchange
	// authRawTokens: SaslHandshake v0 chose a mechanism; the next frames
	// are raw tokens, not requests (kafka-python 2.0 still does this).
	authRawTokens
	// authDone: authenticated; every request is served (and authorized).
	authDone
)

// connAuth is a connection's authentication state.
type connAuth struct {
	state authState
	// session is the exchange in progress (authExchange, authRawTokens).
	session *sasl.Session
	// reauthenticating: the exchange in progress re-authenticates an
	// authenticated connection (KIP-368), which keeps serving requests
	// meanwhile as Kafka does; its principal and mechanism must not
	// change.
	reauthenticating bool
	// mechanism is the mechanism the connection authenticated with.
	mechanism sasl.Mechanism
	// expires is when the session ends (connections.max.reauth.ms after
	// it authenticated), zero for never.
	expires time.Duration
}

// authenticated reports whether cn may send any request.
func (cn *conn) authenticated() bool {
	return cn.auth.state == authTransport || cn.auth.state == authDone || cn.auth.reauthenticating
}

// startAuthentication sets up a new connection's authentication by its
// listener's protocol; false closes the connection (an SSL client
// certificate no mapping rule maps).
func (b *Broker) startAuthentication(cn *conn) bool {
	switch cn.l.Protocol {
	case meta.SecuritySASLPlaintext, meta.SecuritySASLSSL:
		cn.auth.state = authHandshake
		return true
	case meta.SecuritySSL:
		p, err := cn.l.Principals.Build(principal.Authentication{Mechanism: principal.TLS, PeerCertificate: env.PeerCertificate(cn.c)})
		if err != nil {
			b.log.Warn("closing connection: client certificate maps to no principal", "remote", cn.remote,
				"listener", cn.l.Name, "err", err)
			return false
		}
		cn.principal = p
	}
	return true
}

// preAuthAPIs are the requests a SASL connection may send before it
// authenticated; any other closes it, as Kafka closes it.
func preAuthAllowed(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return true
	}
	return false
}

// checkAuthenticated decides whether a parsed request may be served on
// cn: false closes the connection (a request before authentication, or
// after the session expired), as Kafka's authenticator does.
func (b *Broker) checkAuthenticated(cn *conn, hdr wire.RequestHeader) bool {
	key := kmsg.Key(hdr.Key)
	if !cn.authenticated() && !preAuthAllowed(hdr.Key) {
		b.log.Warn("closing connection: request before authentication", "remote", cn.remote,
			"listener", cn.l.Name, "api_name", hdr.APIName())
		return false
	}
	if cn.auth.state == authDone && cn.auth.expires > 0 && b.e.Monotonic() >= cn.auth.expires &&
		!cn.auth.reauthenticating && key != kmsg.SASLHandshake && key != kmsg.SASLAuthenticate {
		b.log.Info("closing connection: SASL session expired without re-authentication", "remote", cn.remote,
			"listener", cn.l.Name, "principal", cn.principal.String())
		return false
	}
	return true
}

// handleSaslHandshake chooses the connection's mechanism (SaslHandshake
// v0 and v1).
func handleSaslHandshake(b *Broker, r *request) {
	req := r.body.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	cn := r.cn
	if cn.l.sasl == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		r.respond(resp)
		return
	}
	for _, m := range cn.l.sasl.Enabled() {
		resp.SupportedMechanisms = append(resp.SupportedMechanisms, string(m))
	}
	reauth := cn.auth.state == authDone
	switch {
	case cn.auth.state != authHandshake && !reauth,
		reauth && req.Version < 1: // KIP-368 needs SaslAuthenticate
		resp.ErrorCode = kerr.IllegalSaslState.Code
		r.respond(resp)
		b.closeAfterAnswers(cn)
		return
	}
	sess, err := cn.l.sasl.Start(req.Mechanism)
	if err == nil && reauth && sess.Mechanism() != cn.auth.mechanism {
		err = &sasl.UnsupportedMechanismError{Requested: req.Mechanism, Enabled: []sasl.Mechanism{cn.auth.mechanism}}
	}
	if err != nil {
		// Kafka answers, then closes the connection.
		b.log.Info("closing connection: unsupported SASL mechanism", "remote", cn.remote, "listener", cn.l.Name,
			"mechanism", req.Mechanism)
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		r.respond(resp)
		b.closeAfterAnswers(cn)
		return
	}
	cn.auth.session = sess
	cn.auth.reauthenticating = reauth
	if reauth || req.Version >= 1 {
		if !reauth {
			cn.auth.state = authExchange
		}
	} else {
		cn.auth.state = authRawTokens
	}
	r.respond(resp)
}

// handleSaslAuthenticate steps the exchange with a SaslAuthenticate's
// token.
func handleSaslAuthenticate(b *Broker, r *request) {
	req := r.body.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	cn := r.cn
	if cn.auth.session == nil || cn.auth.state == authRawTokens {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("Unexpected SaslAuthenticate request: no SASL handshake chose a mechanism.")
		r.respond(resp)
		if cn.l.sasl != nil {
			b.closeAfterAnswers(cn)
		}
		return
	}
	token, done, failure := b.stepAuthentication(cn, req.SASLAuthBytes)
	if failure != "" {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(failure)
		b.failAuthentication(r, func() { r.respond(resp) })
		return
	}
	resp.SASLAuthBytes = token
	if done && b.cfg.Security.MaxReauth > 0 {
		resp.SessionLifetimeMillis = b.cfg.Security.MaxReauth.Milliseconds()
	}
	r.respond(resp)
}

// rawTokenAPI serves a raw token after SaslHandshake v0: the frame is
// the token, the answer is the server's token, both without a request or
// response header.
var rawTokenAPI = apiHandler{
	API: api(kmsg.SASLAuthenticate, 0, 0),
	handle: func(b *Broker, r *request) {
		token, _, failure := b.stepAuthentication(r.cn, r.raw)
		if failure != "" {
			// Version 0 has no way to say why: Kafka closes the
			// connection (after the failed-authentication delay).
			b.failAuthentication(r, r.noResponse)
			return
		}
		if token == nil {
			token = []byte{}
		}
		r.respondFrame(token)
	},
}

// stepAuthentication feeds one client token to cn's exchange. It
// returns the server's token, done once the connection authenticated, or
// the failure message for the client.
func (b *Broker) stepAuthentication(cn *conn, token []byte) (out []byte, done bool, failure string) {
	sess := cn.auth.session
	out, done, err := sess.Step(token)
	if err != nil {
		var ae *sasl.AuthenticationError
		reason := err.Error()
		if errors.As(err, &ae) {
			reason = ae.Reason
		}
		b.log.Info("SASL authentication failed", "remote", cn.remote, "listener", cn.l.Name,
			"mechanism", string(sess.Mechanism()), "reason", reason)
		return nil, false, authenticationFailedMessage(sess.Mechanism())
	}
	if !done {
		return out, false, ""
	}
	p, err := cn.l.Principals.Build(principal.Authentication{Mechanism: principal.SASL, AuthorizationID: sess.User()})
	if err != nil {
		b.log.Info("SASL authentication failed: no principal", "remote", cn.remote, "listener", cn.l.Name, "err", err)
		return nil, false, authenticationFailedMessage(sess.Mechanism())
	}
	if cn.auth.reauthenticating && p != cn.principal {
		b.log.Warn("SASL re-authentication refused: the principal changed", "remote", cn.remote,
			"listener", cn.l.Name, "was", cn.principal.String(), "now", p.String())
		return nil, false, fmt.Sprintf("Cannot change principals during re-authentication from %s: %s", cn.principal, p)
	}
	cn.principal = p
	cn.auth = connAuth{state: authDone, mechanism: sess.Mechanism()}
	if b.cfg.Security.MaxReauth > 0 {
		cn.auth.expires = b.e.Monotonic() + b.cfg.Security.MaxReauth
	}
	return out, true, ""
}

// authenticationFailedMessage is Kafka's answer to any failed exchange:
// it says nothing of whether the user exists.
func authenticationFailedMessage(m sasl.Mechanism) string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + string(m)
}

// failAuthentication ends a connection whose authentication failed:
// nothing more is read from it, and answer (the failure's answer, or no
// answer) runs after connection.failed.authentication.delay.ms, after
// which the connection closes once the answer is sent.
func (b *Broker) failAuthentication(r *request, answer func()) {
	cn := r.cn
	cn.draining = true
	cn.c.Pause()
	cn.auth = connAuth{state: authHandshake}
	delay := b.cfg.Security.FailedAuthenticationDelay
	if delay <= 0 {
		answer()
		return
	}
	b.e.AfterFunc(delay, answer)
}
