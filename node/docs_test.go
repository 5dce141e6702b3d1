package node

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/metrics"
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

// TestOperationsDocListsEveryMetric keeps docs/operations.md's metric
// table and the catalog in step: every family is documented with its
// type and labels, and every documented name is in the catalog.
func TestOperationsDocListsEveryMetric(t *testing.T) {
	text, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	doc := string(text)
	start := strings.Index(doc, "### Every metric")
	require.GreaterOrEqual(t, start, 0, "docs/operations.md has no metric table")
	section := doc[start:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\| ([a-z]+) \\| ([^|]*) \\|")
	documented := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented[m[1]] = m[2:]
	}
	for _, d := range metrics.Catalog {
		cells, ok := documented[d.Name]
		if !ok {
			t.Errorf("docs/operations.md does not document %s", d.Name)
			continue
		}
		require.Equal(t, d.Kind.String(), cells[0], "the documented type of %s", d.Name)
		for _, l := range d.Labels {
			require.Contains(t, cells[1], "`"+l+"`", "the documented labels of %s", d.Name)
		}
		delete(documented, d.Name)
	}
	require.Empty(t, documented, "documented metrics the catalog does not have")
}
