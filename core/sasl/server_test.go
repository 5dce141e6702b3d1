package sasl

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestStartUnsupportedMechanism(t *testing.T) {
	s := newTestServer(t, memCreds{}, ScramSHA512, Plain)
	for _, name := range []string{"GSSAPI", "OAUTHBEARER", "SCRAM-SHA-256", "scram-sha-512", "", "PLAIN "} {
		sess, err := s.Start(name)
		require.Nil(t, sess)
		require.ErrorIs(t, err, kerr.UnsupportedSaslMechanism, name)
		var ue *UnsupportedMechanismError
		require.True(t, errors.As(err, &ue))
		require.Equal(t, name, ue.Requested)
		require.Equal(t, []Mechanism{ScramSHA512, Plain}, ue.Enabled)
		require.Equal(t, "Unsupported SASL mechanism "+name+", enabled mechanisms are [SCRAM-SHA-512, PLAIN]", err.Error())
	}
	for _, name := range []string{"SCRAM-SHA-512", "PLAIN"} {
		sess, err := s.Start(name)
		require.NoError(t, err)
		require.Equal(t, Mechanism(name), sess.Mechanism())
	}

	// Enabled is a copy: the caller cannot change the server's list.
	en := s.Enabled()
	en[0] = "GSSAPI"
	require.Equal(t, []Mechanism{ScramSHA512, Plain}, s.Enabled())
}

func TestNewServerChecksConfig(t *testing.T) {
	good := func() Config {
		return Config{
			Enabled: []Mechanism{Plain}, Credentials: memCreds{},
			Nonce: seededNonce(1), DecoySecret: testSecret,
		}
	}
	tests := []struct {
		name   string
		change func(*Config)
	}{
		{"no mechanism", func(c *Config) { c.Enabled = nil }},
		{"unknown mechanism", func(c *Config) { c.Enabled = []Mechanism{"GSSAPI"} }},
		{"duplicate", func(c *Config) { c.Enabled = []Mechanism{Plain, ScramSHA256, Plain} }},
		{"no credentials", func(c *Config) { c.Credentials = nil }},
		{"no nonce", func(c *Config) { c.Nonce = nil }},
		{"short secret", func(c *Config) { c.DecoySecret = []byte("short") }},
		{"negative bound", func(c *Config) { c.MaxTokenBytes = -1 }},
	}
	_, err := NewServer(good())
	require.NoError(t, err)
	for _, tc := range tests {
		cfg := good()
		tc.change(&cfg)
		_, err := NewServer(cfg)
		require.Error(t, err, tc.name)
	}
}

func TestDecoyDependsOnSecret(t *testing.T) {
	a := newTestServer(t, memCreds{})
	other := make([]byte, len(testSecret))
	copy(other, testSecret)
	other[0] ^= 1
	b, err := NewServer(Config{Enabled: []Mechanism{Plain}, Credentials: memCreds{}, Nonce: seededNonce(1), DecoySecret: other})
	require.NoError(t, err)
	for _, m := range []Mechanism{ScramSHA256, ScramSHA512} {
		da, db := a.decoy(m, "ghost"), b.decoy(m, "ghost")
		require.NotEqual(t, da.Salt, db.Salt)
		require.Equal(t, a.decoy(m, "ghost"), da, "stable for a name")
		_, ok := da.usable(m)
		require.True(t, ok, "a decoy is shaped like a real credential")
		require.Len(t, da.Salt, DefaultSaltBytes)
		require.Len(t, da.StoredKey, m.hashSize())
	}
	require.NotEqual(t, a.decoy(ScramSHA256, "ghost").Salt, a.decoy(ScramSHA512, "ghost").Salt)
	// No name collision between "a"+"\x00b" style inputs across fields.
	require.NotEqual(t, a.decoy(ScramSHA256, "x").Salt, a.decoy(ScramSHA256, "x\x00").Salt)
}
