package connlimit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHostOf(t *testing.T) {
	for remote, host := range map[string]string{
		"10.0.0.1:5000":   "10.0.0.1",
		"[::1]:5000":      "::1",
		"[fe80::1%lo]:80": "fe80::1%lo",
		"n1:9092":         "n1",
		"cli":             "cli",
	} {
		require.Equal(t, host, HostOf(remote), remote)
	}
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, Config{}.Validate())
	require.NoError(t, Config{MaxPerHost: -1, PerHostOverrides: map[string]int{"a": 1}}.Validate())
	for _, bad := range []Config{
		{MaxConnections: -1},
		{MaxIdle: -1},
		{MaxPerHost: -1},
		{PerHostOverrides: map[string]int{"a": 1, "b": -2}},
	} {
		require.Error(t, bad.Validate(), "%+v", bad)
	}
}
