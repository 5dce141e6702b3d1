package node

import (
	"bytes"
	crand "crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewClusterIDIsKafkaShaped(t *testing.T) {
	for range 200 {
		id, err := NewClusterID(crand.Reader)
		require.NoError(t, err)
		require.Len(t, id, 22)
		require.False(t, strings.HasPrefix(id, "-"))
		raw, err := base64.RawURLEncoding.DecodeString(id)
		require.NoError(t, err)
		require.Len(t, raw, 16)
		require.Equal(t, byte(0x40), raw[6]&0xf0, "version 4")
		require.Equal(t, byte(0x80), raw[8]&0xc0, "IETF variant")
	}
	// An id that would start with '-' is redrawn: 0xf8 encodes to '-' in
	// the first position; the second draw does not.
	src := append(bytes.Repeat([]byte{0xf8}, 16), bytes.Repeat([]byte{0x10}, 16)...)
	id, err := NewClusterID(bytes.NewReader(src))
	require.NoError(t, err)
	require.False(t, strings.HasPrefix(id, "-"))
}

func TestMetaPropertiesCreateThenLoad(t *testing.T) {
	dir := t.TempDir()
	meta, created, err := loadOrCreateMeta(dir, 3, "")
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, int32(3), meta.NodeID)
	require.Equal(t, 1, meta.Version)

	content, err := os.ReadFile(filepath.Join(dir, MetaPropertiesFile))
	require.NoError(t, err)
	require.Contains(t, string(content), "cluster.id="+meta.ClusterID+"\n")
	require.Contains(t, string(content), "node.id=3\n")
	require.Contains(t, string(content), "version=1\n")
	_, err = os.Stat(filepath.Join(dir, MetaPropertiesFile+".tmp"))
	require.ErrorIs(t, err, os.ErrNotExist)

	again, created, err := loadOrCreateMeta(dir, 3, "")
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, meta, again)

	_, _, err = loadOrCreateMeta(dir, 4, "")
	require.ErrorIs(t, err, ErrMetaMismatch)
	require.ErrorContains(t, err, "node.id=3")
	require.ErrorContains(t, err, "node.id=4")
}

func TestMetaPropertiesFromKafka(t *testing.T) {
	// As written by kafka-storage.sh format (with a directory.id we ignore).
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, MetaPropertiesFile), []byte(
		"#\n#Tue Jan 02 10:00:00 UTC 2024\nnode.id=1\ndirectory.id=q3K8vYvXRlWnXb8oUyb6Xw\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n"), 0o644))
	meta, created, err := loadOrCreateMeta(dir, 1, "")
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, "MkU3OEVBNTcwNTJENDM2Qk", meta.ClusterID)
}

func TestMetaPropertiesCorrupt(t *testing.T) {
	for _, content := range []string{
		"cluster.id=abc\nnode.id=1\n",            // no version
		"version=0\ncluster.id=abc\nnode.id=1\n", // ZooKeeper-era version
		"version=1\nnode.id=1\n",                 // no cluster id
		"version=1\ncluster.id=abc\nnode.id=x\n", // bad node id
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, MetaPropertiesFile), []byte(content), 0o644))
		_, _, err := loadOrCreateMeta(dir, 1, "")
		require.Error(t, err, content)
		require.ErrorContains(t, err, MetaPropertiesFile)
	}
}

func TestMetaGivenClusterID(t *testing.T) {
	dir := t.TempDir()
	id, err := NewClusterID(crand.Reader)
	require.NoError(t, err)
	require.NoError(t, CheckClusterID(id))
	meta, created, err := loadOrCreateMeta(dir, 3, id)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, id, meta.ClusterID)
	_, _, err = loadOrCreateMeta(dir, 3, id)
	require.NoError(t, err)
	_, _, err = loadOrCreateMeta(dir, 3, "")
	require.NoError(t, err, "no --cluster-id: the directory's is used")
	other, err := NewClusterID(crand.Reader)
	require.NoError(t, err)
	_, _, err = loadOrCreateMeta(dir, 3, other)
	require.ErrorIs(t, err, ErrMetaMismatch)
	require.ErrorContains(t, err, "belongs to another cluster")

	cfg := DefaultConfig()
	cfg.ClusterID = "not-a-cluster-id"
	require.ErrorIs(t, cfg.Validate(), ErrInvalidConfig)
}
