package sasl

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/xdg-go/scram"
)

// TestDeriveMatchesXdgClient: what the controller derives from a salted
// password equals what xdg-go/scram's client derives from the password,
// for both hashes and a few iteration counts.
func TestDeriveMatchesXdgClient(t *testing.T) {
	salt := []byte("a salt of some sixteen+ bytes")
	for _, m := range []Mechanism{ScramSHA256, ScramSHA512} {
		for _, iters := range []int{MinIterations, 8192, MaxIterations} {
			salted, err := SaltedPassword(m, "pencil", salt, iters)
			require.NoError(t, err)
			require.Len(t, salted, m.hashSize())
			got, err := DeriveScramCredential(m, salt, iters, salted)
			require.NoError(t, err)

			client, err := m.scramHash().NewClientUnprepped("user", "pencil", "")
			require.NoError(t, err)
			want, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iters})
			require.NoError(t, err)
			require.Equal(t, want.StoredKey, got.StoredKey, "%s %d", m, iters)
			require.Equal(t, want.ServerKey, got.ServerKey, "%s %d", m, iters)
			require.Equal(t, salt, got.Salt)
			require.Equal(t, iters, got.Iterations)
		}
	}
}

// TestSaltedPasswordRFC7677 checks PBKDF2 against the salted password of
// RFC 7677's example (user "user", password "pencil"), as computed from
// its published client proof.
func TestSaltedPasswordRFC7677(t *testing.T) {
	salt, err := hex.DecodeString("5b6d99689d12358eeca04b141236fa81") // W22ZaJ0SNY7soEsUEjb6gQ==
	require.NoError(t, err)
	salted, err := SaltedPassword(ScramSHA256, "pencil", salt, 4096)
	require.NoError(t, err)
	require.Equal(t, "c4a49510323ab4f952cac1fa99441939e78ea74d6be81ddf7096e87513dc615d", hex.EncodeToString(salted))
}

func TestValidateScramUpsertion(t *testing.T) {
	salt := make([]byte, DefaultSaltBytes)
	key256 := make([]byte, 32)
	key512 := make([]byte, 64)
	tests := []struct {
		name    string
		user    string
		mech    Mechanism
		salt    []byte
		iters   int
		salted  []byte
		code    *kerr.Error // nil: accepted
		message string
	}{
		{"ok 256", "alice", ScramSHA256, salt, 4096, key256, nil, ""},
		{"ok 512 max", "alice", ScramSHA512, salt, 16384, key512, nil, ""},
		{"empty user", "", ScramSHA256, salt, 4096, key256, kerr.UnacceptableCredential, "Username must not be empty"},
		{"plain is no SCRAM", "alice", Plain, salt, 4096, key256, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism"},
		{"unknown mechanism", "alice", "SCRAM-SHA-1", salt, 4096, key256, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism"},
		{"too few iterations", "alice", ScramSHA256, salt, 4095, key256, kerr.UnacceptableCredential, "Too few iterations"},
		{"negative iterations", "alice", ScramSHA256, salt, -1, key256, kerr.UnacceptableCredential, "Too few iterations"},
		{"too many iterations", "alice", ScramSHA512, salt, 16385, key512, kerr.UnacceptableCredential, "Too many iterations"},
		{"empty salt", "alice", ScramSHA256, nil, 4096, key256, kerr.UnacceptableCredential, "Salt must not be empty"},
		{"huge salt", "alice", ScramSHA256, make([]byte, MaxSaltBytes+1), 4096, key256, kerr.UnacceptableCredential, "Salt must be at most 1024 bytes"},
		{"salted password of the other hash", "alice", ScramSHA256, salt, 4096, key512, kerr.UnacceptableCredential, "Salted password must be 32 bytes for SCRAM-SHA-256"},
		{"empty salted password", "alice", ScramSHA512, salt, 4096, nil, kerr.UnacceptableCredential, "Salted password must be 64 bytes for SCRAM-SHA-512"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateScramUpsertion(tc.user, tc.mech, tc.salt, tc.iters, tc.salted)
			_, derr := DeriveScramCredential(tc.mech, tc.salt, tc.iters, tc.salted)
			if tc.code == nil {
				require.NoError(t, err)
				require.NoError(t, derr)
				return
			}
			require.ErrorIs(t, err, tc.code)
			require.Equal(t, tc.message, err.Error())
			var ke *kerr.Error
			require.True(t, errors.As(err, &ke))
			require.Equal(t, tc.code.Code, ke.Code)
			if tc.user != "" {
				require.ErrorIs(t, derr, tc.code, "Derive refuses what Validate refuses")
			}
		})
	}
}

func TestSaltedPasswordRefuses(t *testing.T) {
	_, err := SaltedPassword(Plain, "pw", []byte("salt"), 4096)
	require.ErrorIs(t, err, kerr.UnsupportedSaslMechanism)
	_, err = SaltedPassword(ScramSHA256, "pw", []byte("salt"), 100)
	require.ErrorIs(t, err, kerr.UnacceptableCredential)
	_, err = SaltedPassword(ScramSHA256, "pw", nil, 4096)
	require.ErrorIs(t, err, kerr.UnacceptableCredential)
}
