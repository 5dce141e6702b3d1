package kclient

import (
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/sasl"
	"github.com/strata-log/strata/core/wire"
)

// SASL is a client's SASL login, for brokers whose listener is
// SASL_PLAINTEXT: every new connection sends SaslHandshake v1 and
// SaslAuthenticate (v1 or the broker's highest) after ApiVersions and
// before any other request, as the Java client and franz-go do.
type SASL struct {
	// Mechanism is sasl.Plain, sasl.ScramSHA256 or sasl.ScramSHA512.
	Mechanism sasl.Mechanism
	User      string
	Password  string
}

// AuthError is a refused authentication: the broker's error code and
// message (SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM,
// ILLEGAL_SASL_STATE), or a server token the client cannot verify (code
// 0).
type AuthError struct {
	Code    int16
	Message string
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("kclient: SASL authentication refused: %s: %s", codeName(e.Code), e.Message)
}

// ErrAuthentication matches every *AuthError (errors.Is).
var ErrAuthentication = errors.New("kclient: SASL authentication refused")

// Is makes errors.Is(err, ErrAuthentication) hold for an *AuthError.
func (e *AuthError) Is(target error) bool { return target == ErrAuthentication }

// nonceBytes is the client nonce's entropy (RFC 5802 asks for enough to
// be unpredictable; franz-go draws 16 bytes too).
const nonceBytes = 16

// Authenticate runs login on a connection that has not sent anything but
// ApiVersions: SaslHandshake v1 naming the mechanism, then the
// mechanism's SaslAuthenticate exchange at authVersion (v0–v2). done runs
// once, on the env's loop, with nil once the broker accepted the login,
// an *AuthError when it refused it, or the transport's error; lifetime is
// the session lifetime the broker's last answer gave (KIP-368, v1+; zero
// for none), before which the connection must log in again. The same
// exchange on an authenticated connection re-authenticates it. SCRAM's
// client nonce comes from e.Rand(), so the exchange is as deterministic
// as the rest of the simulation.
func Authenticate(e env.Env, conn *wire.Client, login SASL, authVersion int16, done func(lifetime time.Duration, err error)) {
	authenticate(e, conn, login, nil, authVersion, done)
}

// authenticate is Authenticate with a SCRAM client to reuse (nil: a new
// one): xdg-go/scram's client caches the keys it derived per salt and
// iterations, so a Client's reconnects and re-authentications run PBKDF2
// once.
func authenticate(e env.Env, conn *wire.Client, login SASL, client *scram.Client, authVersion int16, done func(lifetime time.Duration, err error)) {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, string(login.Mechanism)
	err := conn.Do(hs, func(r kmsg.Response, err error) {
		if err != nil {
			done(0, fmt.Errorf("SaslHandshake: %w", err))
			return
		}
		if resp := r.(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
			done(0, &AuthError{Code: resp.ErrorCode, Message: fmt.Sprintf("enabled mechanisms %v", resp.SupportedMechanisms)})
			return
		}
		steps, err := newSASLSteps(e, login, client)
		if err != nil {
			done(0, err)
			return
		}
		authStep(conn, steps, authVersion, "", 0, done)
	})
	if err != nil {
		e.Post(func() { done(0, fmt.Errorf("SaslHandshake: %w", err)) })
	}
}

// saslSteps is a mechanism's client side: step takes the server's last
// token ("" first) and returns the next client token, or last once the
// exchange is complete (the server's final token verified).
type saslSteps func(server string) (token string, last bool, err error)

func newSASLSteps(e env.Env, login SASL, client *scram.Client) (saslSteps, error) {
	switch login.Mechanism {
	case sasl.Plain:
		sent := false
		return func(string) (string, bool, error) {
			if sent {
				return "", true, nil
			}
			sent = true
			return "\x00" + login.User + "\x00" + login.Password, false, nil
		}, nil
	case sasl.ScramSHA256, sasl.ScramSHA512:
		if client == nil {
			var err error
			if client, err = newScramClient(e, login); err != nil {
				return nil, err
			}
		}
		conv := client.NewConversation()
		return func(server string) (string, bool, error) {
			if conv.Done() {
				return "", true, nil
			}
			token, err := conv.Step(server)
			if err != nil {
				return "", false, &AuthError{Message: "the server's SCRAM token: " + err.Error()}
			}
			if conv.Done() {
				return "", true, nil
			}
			return token, false, nil
		}, nil
	}
	return nil, &AuthError{Message: "mechanism " + string(login.Mechanism) + " is not supported by kclient"}
}

// authStep sends the client's next token and feeds the answer back;
// lifetime is the last answer's session lifetime.
func authStep(conn *wire.Client, steps saslSteps, version int16, server string, lifetime time.Duration, done func(time.Duration, error)) {
	token, last, err := steps(server)
	if err != nil || last {
		done(lifetime, err)
		return
	}
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = version, []byte(token)
	err = conn.Do(req, func(r kmsg.Response, err error) {
		if err != nil {
			done(0, fmt.Errorf("SaslAuthenticate: %w", err))
			return
		}
		resp := r.(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != 0 {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = *resp.ErrorMessage
			}
			done(0, &AuthError{Code: resp.ErrorCode, Message: msg})
			return
		}
		authStep(conn, steps, version, string(resp.SASLAuthBytes), time.Duration(resp.SessionLifetimeMillis)*time.Millisecond, done)
	})
	if err != nil {
		done(0, fmt.Errorf("SaslAuthenticate: %w", err))
	}
}

// newScramClient is login's SCRAM client, its nonces from e.Rand().
func newScramClient(e env.Env, login SASL) (*scram.Client, error) {
	gen := scram.SHA512
	if login.Mechanism == sasl.ScramSHA256 {
		gen = scram.SHA256
	}
	client, err := gen.NewClient(login.User, login.Password, "")
	if err != nil {
		return nil, &AuthError{Message: err.Error()}
	}
	return client.WithNonceGenerator(func() string {
		b := make([]byte, nonceBytes)
		for i := range b {
			b[i] = byte(e.Rand().IntN(256))
		}
		return base64.RawStdEncoding.EncodeToString(b)
	}), nil
}
