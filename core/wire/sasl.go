package wire

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/sasl"
)

// ErrAuthentication wraps every failed SASL login of a Peer.
var ErrAuthentication = errors.New("wire: SASL authentication failed")

// SASLLogin is a PeerConfig.Authenticate that logs in with a new client
// session from start on each connection: SaslHandshake v1 naming its
// mechanism, then SaslAuthenticate v2 rounds until the session is done
// (for SCRAM, once the server's signature verified), as Kafka's
// SaslClientAuthenticator does.
func SASLLogin(start func() (*sasl.ClientSession, error)) func(cl *Client, done func(error)) {
	return func(cl *Client, done func(error)) {
		sess, err := start()
		if err != nil {
			done(fmt.Errorf("%w: %w", ErrAuthentication, err))
			return
		}
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, string(sess.Mechanism())
		err = cl.Do(hs, func(r kmsg.Response, err error) {
			if err != nil {
				done(err)
				return
			}
			if code := r.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
				done(fmt.Errorf("%w: SaslHandshake %s: %w", ErrAuthentication, sess.Mechanism(), kerr.ErrorForCode(code)))
				return
			}
			saslRound(cl, sess, nil, done)
		})
		if err != nil {
			done(err)
		}
	}
}

// saslRound sends the session's answer to challenge and goes on with the
// server's next token until the session is done.
func saslRound(cl *Client, sess *sasl.ClientSession, challenge []byte, done func(error)) {
	token, err := sess.Step(challenge)
	if err != nil {
		done(fmt.Errorf("%w: %w", ErrAuthentication, err))
		return
	}
	if sess.Done() && challenge != nil {
		done(nil) // SCRAM: the server's final message verified
		return
	}
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 2, token
	err = cl.Do(req, func(r kmsg.Response, err error) {
		if err != nil {
			done(err)
			return
		}
		resp := r.(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != 0 {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = ": " + *resp.ErrorMessage
			}
			done(fmt.Errorf("%w: %w%s", ErrAuthentication, kerr.ErrorForCode(resp.ErrorCode), msg))
			return
		}
		if sess.Done() {
			done(nil) // PLAIN: the server accepted the one token
			return
		}
		saslRound(cl, sess, resp.SASLAuthBytes, done)
	})
	if err != nil {
		done(err)
	}
}
