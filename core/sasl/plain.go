package sasl

import (
	"bytes"
	"crypto/hmac"
	"fmt"
	"unicode/utf8"
)

// plainOrder is the order in which PLAIN looks for a SCRAM credential to
// verify a password against: the first found and usable is the only one
// tried, so a wrong password costs one PBKDF2 whatever the user has.
var plainOrder = [...]Mechanism{ScramSHA512, ScramSHA256}

// plain parses and verifies one PLAIN message (RFC 4616):
// authzid NUL authcid NUL passwd, with exactly two NULs, a non-empty user
// and password, and an authzid that is empty or the user (Kafka's
// PlainSaslServer rules). The password is checked against the user's
// SCRAM credential by recomputing the salted password with its salt and
// iterations and comparing stored keys in constant time; a user without
// one is checked against a decoy so the work is the same. It returns the
// user, or a failure reason.
func (s *Session) plain(token []byte) (user string, reason string) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return "", fmt.Sprintf("PLAIN message has %d fields, want 3", len(parts))
	}
	if !utf8.Valid(token) {
		return "", "PLAIN message is not UTF-8"
	}
	authzID, user, password := string(parts[0]), string(parts[1]), string(parts[2])
	switch {
	case user == "":
		return "", "PLAIN message has no user name"
	case password == "":
		return "", "PLAIN message has no password"
	case authzID != "" && authzID != user:
		return "", "authorization id differs from the user name"
	}

	creds := s.server.cfg.Credentials
	mech, decoyReason := plainOrder[0], fmt.Sprintf("unknown user %q", user)
	var cred ScramCredential
	for _, m := range plainOrder {
		c, found := creds.LookupScram(m, user)
		if !found {
			continue
		}
		if why, ok := c.usable(m); !ok {
			decoyReason = fmt.Sprintf("user %q: %s", user, why)
			continue
		}
		mech, cred, decoyReason = m, c, ""
		break
	}
	if decoyReason != "" {
		cred = s.server.decoy(mech, user)
	}
	salted, err := saltedPassword(mech, password, cred.Salt, cred.Iterations)
	if err != nil {
		return "", "PBKDF2: " + err.Error()
	}
	derived, err := DeriveScramCredential(mech, cred.Salt, cred.Iterations, salted)
	if err != nil {
		return "", "derive: " + err.Error()
	}
	match := hmac.Equal(derived.StoredKey, cred.StoredKey)
	switch {
	case decoyReason != "":
		return "", decoyReason
	case !match:
		return "", fmt.Sprintf("wrong password for user %q", user)
	}
	return user, ""
}
