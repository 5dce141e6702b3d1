package sasl_test

import (
	"errors"
	"fmt"

	"github.com/strata-log/strata/core/sasl"
)

// users is a Credentials over a map, as the broker's metadata image
// will provide.
type users map[string]sasl.ScramCredential

func (u users) LookupScram(m sasl.Mechanism, user string) (sasl.ScramCredential, bool) {
	c, ok := u[string(m)+"/"+user]
	return c, ok
}

// Example creates a user the way `strata user create` will (the salt
// comes from the caller's randomness), then authenticates it with PLAIN.
func Example() {
	salt := []byte("0123456789abcdef0123456789abcdef") // random in real use
	salted, _ := sasl.SaltedPassword(sasl.ScramSHA512, "alice-secret", salt, sasl.DefaultIterations)
	cred, _ := sasl.DeriveScramCredential(sasl.ScramSHA512, salt, sasl.DefaultIterations, salted)

	server, err := sasl.NewServer(sasl.Config{
		Enabled:     []sasl.Mechanism{sasl.ScramSHA512, sasl.Plain},
		Credentials: users{"SCRAM-SHA-512/alice": cred},
		Nonce:       func(n int) []byte { return make([]byte, n) }, // env randomness in real use
		DecoySecret: []byte("a cluster-wide secret of 16+ bytes"),
	})
	if err != nil {
		panic(err)
	}

	_, err = server.Start("GSSAPI")
	fmt.Println(err)

	sess, _ := server.Start("PLAIN")
	_, done, err := sess.Step([]byte("\x00alice\x00alice-secret"))
	fmt.Println(done, err, sess.User())

	sess, _ = server.Start("PLAIN")
	_, _, err = sess.Step([]byte("\x00alice\x00wrong"))
	fmt.Println(errors.Is(err, sasl.ErrAuthenticationFailed), err)
	// Output:
	// Unsupported SASL mechanism GSSAPI, enabled mechanisms are [SCRAM-SHA-512, PLAIN]
	// true <nil> alice
	// true Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN
}
