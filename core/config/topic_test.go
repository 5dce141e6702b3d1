package config

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTopicTable(t *testing.T) {
	require.True(t, slices.IsSortedFunc(topicRows, func(a, b Row) int { return strings.Compare(a.Name, b.Name) }),
		"the table is sorted by name")
	servers := map[string]string{}
	for _, r := range TopicRows() {
		require.NoError(t, r.Validate(r.Default), "%s default %q", r.Name, r.Default)
		require.NotEmpty(t, r.Doc, r.Name)
		require.NotEmpty(t, r.ValidValues(), r.Name)
		got, ok := TopicRow(r.Name)
		require.True(t, ok)
		require.Same(t, r, got)
		if r.ServerDefault != "" {
			require.Empty(t, servers[r.ServerDefault], "%s sets the defaults of %s and %s", r.ServerDefault, servers[r.ServerDefault], r.Name)
			servers[r.ServerDefault] = r.Name
			byServer, ok := TopicRowByServerDefault(r.ServerDefault)
			require.True(t, ok)
			require.Same(t, r, byServer)
		}
	}
	_, ok := TopicRow("no.such.key")
	require.False(t, ok)
	_, ok = TopicRowByServerDefault("")
	require.False(t, ok)
	for _, k := range []string{TopicCleanupPolicy, TopicMinInsyncReplicas, TopicUncleanLeaderElection} {
		_, ok := TopicRow(k)
		require.True(t, ok, k)
	}
}

func TestTopicValues(t *testing.T) {
	cases := []struct {
		key, value string
		ok         bool
	}{
		{"cleanup.policy", "compact", true},
		{"cleanup.policy", " compact , delete ", true},
		{"cleanup.policy", "", false},
		{"cleanup.policy", "compact,", false},
		{"cleanup.policy", "shred", false},
		{"compression.gzip.level", "-1", true},
		{"compression.gzip.level", "0", false},
		{"compression.zstd.level", "23", false},
		{"retention.ms", " 100 ", true},
		{"retention.ms", "-2", false},
		{"retention.ms", "1e3", false},
		{"retention.bytes", "-5", true},
		{"segment.bytes", "14", false},
		{"segment.bytes", "61", true},
		{"segment.bytes", "2147483648", false},
		{"segment.index.bytes", "4", false},
		{"segment.index.bytes", "12", true},
		{"max.message.bytes", "0", false},
		{"max.message.bytes", "61", true},
		{"min.cleanable.dirty.ratio", "NaN", false},
		{"min.cleanable.dirty.ratio", "1", true},
		{"unclean.leader.election.enable", "TRUE", true},
		{"unclean.leader.election.enable", "yes", false},
		{"message.timestamp.type", "logappendtime", false},
		{"leader.replication.throttled.replicas", "", true},
		{"leader.replication.throttled.replicas", "0:1, 1:2", true},
		{"leader.replication.throttled.replicas", "0-1", false},
	}
	for _, c := range cases {
		r, ok := TopicRow(c.key)
		require.True(t, ok, c.key)
		err := r.Validate(c.value)
		require.Equal(t, c.ok, err == nil, "%s=%q: %v", c.key, c.value, err)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidValue)
		}
	}
	r, _ := TopicRow("segment.bytes")
	err := r.Validate("14")
	require.ErrorContains(t, err, "[61,...]", "the reason names the bounds")
	v, err := r.Parse(" 4096 ")
	require.NoError(t, err)
	require.Equal(t, int64(4096), v.Int())
	require.Equal(t, "4096", v.String())
	r, _ = TopicRow("cleanup.policy")
	v, err = r.Parse("delete, compact")
	require.NoError(t, err)
	require.Equal(t, []string{"delete", "compact"}, v.List())
	r, _ = TopicRow(TopicUncleanLeaderElection)
	v, err = r.Parse("True")
	require.NoError(t, err)
	require.True(t, v.Bool())
}

// TestOperationsDocListsEveryTopicConfig keeps docs/operations.md's topic
// config table and the rows in step: every row, in order, with its
// default, valid values and broker default key.
func TestOperationsDocListsEveryTopicConfig(t *testing.T) {
	text, err := os.ReadFile("../../docs/operations.md")
	require.NoError(t, err)
	doc := string(text)
	start := strings.Index(doc, "## Topic configs")
	require.GreaterOrEqual(t, start, 0, "docs/operations.md has no topic config section")
	section := doc[start:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	row := regexp.MustCompile("(?m)^(\\| `[a-z0-9.]+` \\| [^|]* \\| [^|]* \\| [^|]* \\|)")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	var want []string
	for _, r := range TopicRows() {
		want = append(want, docRow(r))
	}
	require.Equal(t, want, documented, "docs/operations.md's topic config table differs from core/config (each line: key, default, valid values, broker key)")
}

// docRow is the start of a row's line in docs/operations.md's table.
func docRow(r *Row) string {
	def := "`" + r.Default + "`"
	if r.Default == "" {
		def = "empty"
	}
	server := "—"
	if r.ServerDefault != "" {
		server = "`" + r.ServerDefault + "`"
	}
	return fmt.Sprintf("| `%s` | %s | %s | %s |", r.Name, def, "`"+r.ValidValues()+"`", server)
}

// TestTopicTypes: each row's parser matches its type.
func TestTopicTypes(t *testing.T) {
	for _, r := range TopicRows() {
		v, err := r.Parse(r.Default)
		require.NoError(t, err)
		switch r.Type {
		case kmsg.ConfigTypeList:
			if r.Default != "" {
				require.NotEmpty(t, v.List(), r.Name)
			}
		case kmsg.ConfigTypeBoolean:
			require.Equal(t, r.Default == "true", v.Bool(), r.Name)
		}
	}
}
