package node

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOperationsDocListsEveryKey keeps docs/operations.md's
// server.properties tables and configKeys in step: every key of the table
// is documented with its default, and every documented key is in the
// table.
func TestOperationsDocListsEveryKey(t *testing.T) {
	text, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	doc := string(text)
	start := strings.Index(doc, "## server.properties keys")
	require.GreaterOrEqual(t, start, 0, "docs/operations.md has no server.properties section")
	section := doc[start:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	row := regexp.MustCompile("(?m)^\\| (`[^|]*) \\| ([^|]*) \\|")
	tick := regexp.MustCompile("`([^`]*)`")
	documented := map[string]string{} // key -> default cell
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		for _, k := range tick.FindAllStringSubmatch(m[1], -1) {
			documented[k[1]] = m[2]
		}
	}
	var names []string
	for _, k := range configKeys {
		names = append(names, k.name)
		cell, ok := documented[k.name]
		if !ok {
			t.Errorf("docs/operations.md does not document %s", k.name)
			continue
		}
		if k.def != "" {
			require.Contains(t, cell, "`"+k.def+"`", "the documented default of %s", k.name)
		}
	}
	for key := range documented { //determinism:unordered a test's checks, in any order
		if !slices.Contains(names, key) {
			t.Errorf("docs/operations.md documents %s, which configKeys does not have", key)
		}
	}
}

// TestConfigKeysAreUnique: one row per key.
func TestConfigKeysAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range configKeys {
		require.False(t, seen[k.name], "%s twice", k.name)
		seen[k.name] = true
		require.NotEmpty(t, k.doc, k.name)
		require.NotNil(t, k.set, k.name)
	}
}
