package node

import (
	"bytes"
	crand "crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/meta"
)

func scramRecord(name string) *meta.UserScramCredentialRecord {
	return &meta.UserScramCredentialRecord{Name: name, Mechanism: meta.ScramSHA512, Iterations: 4096,
		Salt: []byte("salt"), StoredKey: bytes.Repeat([]byte{1}, 64), ServerKey: bytes.Repeat([]byte{2}, 64)}
}

// TestFormatWritesBootstrap: Format writes meta.properties and the
// bootstrap records, which read back equal; a second Format is
// ErrFormatted; a directory without a bootstrap file has none.
func TestFormatWritesBootstrap(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LogDir = t.TempDir()
	id, err := NewClusterID(crand.Reader)
	require.NoError(t, err)
	records := []meta.Record{scramRecord("alice"), scramRecord("bob")}
	dir, err := Format(cfg, id, records)
	require.NoError(t, err)
	got, err := readBootstrap(dir)
	require.NoError(t, err)
	require.Equal(t, records, got)
	m, created, err := loadOrCreateMeta(dir, cfg.NodeID, "")
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, id, m.ClusterID)

	_, err = Format(cfg, id, nil)
	require.ErrorIs(t, err, ErrFormatted)

	none, err := readBootstrap(t.TempDir())
	require.NoError(t, err)
	require.Nil(t, none)
}

// TestBootstrapFileRefusesDamage: a flipped byte, a truncated file, a
// foreign file and records that do not replay are errors, never records.
func TestBootstrapFileRefusesDamage(t *testing.T) {
	good := encodeBootstrap([]meta.Record{scramRecord("alice")})
	flipped := bytes.Clone(good)
	flipped[len(bootstrapMagic)+3] ^= 0x40
	for name, data := range map[string][]byte{
		"flipped":   flipped,
		"truncated": good[:len(good)-5],
		"foreign":   []byte("cluster.id=x\n"),
		"empty":     nil,
		"invalid":   encodeBootstrap([]meta.Record{&meta.UserScramCredentialRecord{Name: "x", Mechanism: meta.ScramSHA512, Iterations: 1}}),
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, BootstrapFile), data, 0o644))
		_, err := readBootstrap(dir)
		require.Error(t, err, name)
	}
	_, err := Format(Config{LogDir: t.TempDir()}, "AAAAAAAAAAAAAAAAAAAAAA", []meta.Record{&meta.UserScramCredentialRecord{Name: "x", Mechanism: meta.ScramSHA512, Iterations: 1}})
	require.ErrorContains(t, err, "bootstrap record 0")
}
