package node

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/server"
)

// operationsSection is docs/operations.md from heading up to the next
// "## " heading.
func operationsSection(t *testing.T, heading string) string {
	t.Helper()
	text, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	doc := string(text)
	start := strings.Index(doc, heading)
	require.GreaterOrEqual(t, start, 0, "docs/operations.md has no %q section", heading)
	section := doc[start:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	return section
}

// TestOperationsDocListsEveryKey keeps docs/operations.md's
// server.properties tables and the rows (core/server's broker keys and
// node's) in step: every row is documented with its default and its valid
// values (the row's check's words, as the topic config table has them),
// and every documented key is a row's.
func TestOperationsDocListsEveryKey(t *testing.T) {
	section := operationsSection(t, "## server.properties keys")
	row := regexp.MustCompile("(?m)^\\| (`[^|]*) \\| ([^|]*) \\| ([^|]*) \\|")
	tick := regexp.MustCompile("`([^`]*)`")
	documented := map[string]string{} // key -> default cell
	valid := map[string]string{}      // key -> valid values cell
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		for _, k := range tick.FindAllStringSubmatch(m[1], -1) {
			documented[k[1]], valid[k[1]] = m[2], m[3]
		}
	}
	var names []string
	for _, k := range allRows() {
		names = append(names, k.Name)
		cell, ok := documented[k.Name]
		if !ok {
			t.Errorf("docs/operations.md does not document %s", k.Name)
			continue
		}
		if k.Default != "" {
			require.Contains(t, cell, "`"+k.Default+"`", "the documented default of %s", k.Name)
		}
		require.Equal(t, "`"+k.ValidValues()+"`", valid[k.Name], "the documented valid values of %s", k.Name)
	}
	for key := range documented { //determinism:unordered a test's checks, in any order
		if !slices.Contains(names, key) {
			t.Errorf("docs/operations.md documents %s, which no row has", key)
		}
	}
}

// TestConfigKeysAreUnique: one row per key, across both tables, each
// with its documentation, a setter, and a default that its own check
// accepts.
func TestConfigKeysAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range allRows() {
		require.False(t, seen[k.Name], "%s twice", k.Name)
		seen[k.Name] = true
		require.NotEmpty(t, k.Doc, k.Name)
		if k.Default != "" {
			require.NoError(t, k.Validate(k.Default), "the default of %s", k.Name)
		}
	}
	for _, k := range server.Keys() {
		require.NotNil(t, k.Set, k.Name)
	}
	for _, k := range nodeKeys {
		require.NotNil(t, k.Set, k.Name)
	}
}

// TestOperationsDocListsEveryMetric keeps docs/operations.md's metric
// table and the catalog in step: every family is documented with its
// type and labels, and every documented name is in the catalog.
func TestOperationsDocListsEveryMetric(t *testing.T) {
	section := operationsSection(t, "### Every metric")
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
