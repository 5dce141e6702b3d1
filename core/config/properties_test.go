package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseProperties(t *testing.T) {
	in := strings.Join([]string{
		"# a comment",
		"! another comment",
		"   # an indented comment",
		"",
		"node.id=3",
		"  listeners =  PLAINTEXT://127.0.0.1:9093  ",
		"log.dirs: /var/lib/strata",
		"socket.request.max.bytes 1048576",
		"process.roles = broker,\\",
		"    controller",
		"weird\\=key=value\\twith\\u0041escapes",
		"empty.value=",
		"bare.key",
		"node.id=4",
	}, "\n")
	props, err := ParseProperties(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, []Property{
		{"node.id", "3", 5},
		{"listeners", "PLAINTEXT://127.0.0.1:9093", 6},
		{"log.dirs", "/var/lib/strata", 7},
		{"socket.request.max.bytes", "1048576", 8},
		{"process.roles", "broker,controller", 9},
		{"weird=key", "value\twithAescapes", 11},
		{"empty.value", "", 12},
		{"bare.key", "", 13},
		{"node.id", "4", 14},
	}, props)

	_, err = ParseProperties(strings.NewReader("k=\\u12"))
	require.ErrorContains(t, err, "line 1")
}
