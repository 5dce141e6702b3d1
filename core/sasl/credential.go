package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"fmt"
	"hash"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ScramCredential is what the metadata log keeps for one user and one
// SCRAM mechanism (Kafka's UserScramCredentialRecord without the name
// and mechanism): never the password, only the salt, the iteration count
// and the keys RFC 5802 derives from the salted password.
type ScramCredential struct {
	// Salt is the PBKDF2 salt, raw bytes.
	Salt []byte
	// Iterations is the PBKDF2 iteration count.
	Iterations int
	// StoredKey is H(HMAC(SaltedPassword, "Client Key")).
	StoredKey []byte
	// ServerKey is HMAC(SaltedPassword, "Server Key").
	ServerKey []byte
}

// usable reports whether c can serve an exchange of mechanism m; a
// credential that cannot is treated as absent, so a bad record never
// shows as a different failure from an unknown user.
func (c ScramCredential) usable(m Mechanism) (string, bool) {
	switch {
	case c.Iterations < MinIterations || c.Iterations > MaxIterations:
		return fmt.Sprintf("stored credential has %d iterations, outside [%d, %d]", c.Iterations, MinIterations, MaxIterations), false
	case len(c.Salt) == 0 || len(c.Salt) > MaxSaltBytes:
		return fmt.Sprintf("stored credential has a %d-byte salt", len(c.Salt)), false
	case len(c.StoredKey) != m.hashSize() || len(c.ServerKey) != m.hashSize():
		return "stored credential keys do not fit the mechanism's hash", false
	}
	return "", true
}

// credentialError is a KIP-554 per-user error: errors.Is matches the kerr
// code (UNACCEPTABLE_CREDENTIAL or UNSUPPORTED_SASL_MECHANISM) and Error
// is the message AlterUserScramCredentials answers with.
type credentialError struct {
	code    *kerr.Error
	message string
}

func (e *credentialError) Error() string { return e.message }
func (e *credentialError) Unwrap() error { return e.code }

// ValidateScramUpsertion checks one AlterUserScramCredentials upsertion
// as Kafka's ScramControlManager does, returning nil or an error that
// errors.Is matches against kerr.UnsupportedSaslMechanism or
// kerr.UnacceptableCredential and whose text is the per-user error
// message: an empty user, a mechanism other than SCRAM-SHA-256/512,
// iterations outside [MinIterations, MaxIterations]. Beyond Kafka it
// also refuses an empty or oversized salt and a salted password whose
// length is not the hash's (which no correct client sends).
func ValidateScramUpsertion(user string, m Mechanism, salt []byte, iterations int, saltedPassword []byte) error {
	if user == "" {
		return &credentialError{kerr.UnacceptableCredential, "Username must not be empty"}
	}
	if !m.IsScram() {
		return &credentialError{kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism"}
	}
	if err := validateFactors(salt, iterations); err != nil {
		return err
	}
	if len(saltedPassword) != m.hashSize() {
		return &credentialError{kerr.UnacceptableCredential,
			fmt.Sprintf("Salted password must be %d bytes for %s", m.hashSize(), m)}
	}
	return nil
}

func validateFactors(salt []byte, iterations int) error {
	switch {
	case iterations < MinIterations:
		return &credentialError{kerr.UnacceptableCredential, "Too few iterations"}
	case iterations > MaxIterations:
		return &credentialError{kerr.UnacceptableCredential, "Too many iterations"}
	case len(salt) == 0:
		return &credentialError{kerr.UnacceptableCredential, "Salt must not be empty"}
	case len(salt) > MaxSaltBytes:
		return &credentialError{kerr.UnacceptableCredential,
			fmt.Sprintf("Salt must be at most %d bytes", MaxSaltBytes)}
	}
	return nil
}

// DeriveScramCredential turns what AlterUserScramCredentials carries
// (the salted password a client computed, its salt and iteration count)
// into what is stored, as the controller does for KIP-554: RFC 5802's
// ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey = H(ClientKey),
// ServerKey = HMAC(SaltedPassword, "Server Key"). The inputs are checked
// by ValidateScramUpsertion (with a placeholder user name) first.
func DeriveScramCredential(m Mechanism, salt []byte, iterations int, saltedPassword []byte) (ScramCredential, error) {
	if err := ValidateScramUpsertion("-", m, salt, iterations, saltedPassword); err != nil {
		return ScramCredential{}, err
	}
	h, _ := m.hashOf()
	clientKey := hmacSum(h, saltedPassword, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return ScramCredential{
		Salt:       append([]byte(nil), salt...),
		Iterations: iterations,
		StoredKey:  stored.Sum(nil),
		ServerKey:  hmacSum(h, saltedPassword, "Server Key"),
	}, nil
}

// SaltedPassword computes RFC 5802's Hi(password, salt, iterations), that
// is PBKDF2 with the mechanism's HMAC, for `strata user create` and
// format-time --add-scram (KIP-900), which then call
// DeriveScramCredential. Like Kafka's ScramFormatter (and unlike RFC
// 5802's SASLprep) the password is used as its UTF-8 bytes, unchanged,
// so a credential made here matches one made by kafka-configs.sh.
// The salt comes from the caller's randomness (DefaultSaltBytes long).
func SaltedPassword(m Mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	if !m.IsScram() {
		return nil, &credentialError{kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism"}
	}
	if err := validateFactors(salt, iterations); err != nil {
		return nil, err
	}
	return saltedPassword(m, password, salt, iterations)
}

// saltedPassword is PBKDF2 without the checks.
func saltedPassword(m Mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	h, _ := m.hashOf()
	return pbkdf2.Key(h, password, salt, iterations, m.hashSize())
}

func hmacSum(h func() hash.Hash, key []byte, data string) []byte {
	mac := hmac.New(h, key)
	mac.Write([]byte(data))
	return mac.Sum(nil)
}
