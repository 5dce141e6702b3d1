package broker

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCompatibilityDocMatchesTable keeps docs/compatibility.md's API table
// and the broker's API table (apis) in step: one row per API, with its key
// and version range, in the table's order.
func TestCompatibilityDocMatchesTable(t *testing.T) {
	text, err := os.ReadFile("../../docs/compatibility.md")
	require.NoError(t, err)
	// "| Produce | 0 | 3–13 (listed 0–13) |": the served range, then,
	// for a row ApiVersions lists from v0 (KAFKA-18659), what it lists.
	row := regexp.MustCompile(`(?m)^\| ([A-Za-z]+) \| (\d+) \| (\d+)(?:–(\d+))?(?: \(listed (\d+)–(\d+)\))? \|`)
	var documented []string
	for _, m := range row.FindAllStringSubmatch(string(text), -1) {
		hi := m[4]
		if hi == "" {
			hi = m[3]
		}
		entry := fmt.Sprintf("%s key %s versions %s-%s", m[1], m[2], m[3], hi)
		if m[5] != "" {
			entry += fmt.Sprintf(" listed %s-%s", m[5], m[6])
		}
		documented = append(documented, entry)
	}
	var want []string
	for _, a := range APIs().Rows() {
		entry := fmt.Sprintf("%s key %d versions %d-%d", docName(a.Name()), a.Key, a.MinVersion, a.MaxVersion)
		if a.ListedFromV0 {
			entry += fmt.Sprintf(" listed 0-%d", a.MaxVersion)
		}
		want = append(want, entry)
	}
	require.Equal(t, want, documented, "docs/compatibility.md's API table differs from core/broker/apis.go")
	for _, a := range apis {
		require.NotEmpty(t, a.why, "%s: the table says why its versions stop where they do", a.Name())
	}
}

// docName is an API's name as the docs spell it (Kafka's spelling where
// kmsg's differs).
func docName(name string) string {
	if name == "InitProducerID" {
		return "InitProducerId"
	}
	return name
}

// TestOperationsDocListsEachAPIsACLs keeps docs/operations.md's
// authorization table and apiAuth in step: one row per API, in the API
// table's order, saying what apiAuth's row needs.
func TestOperationsDocListsEachAPIsACLs(t *testing.T) {
	text, err := os.ReadFile("../../docs/operations.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(text), "\n## Authorization\n")
	require.True(t, found, "docs/operations.md has an Authorization section")
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\| (.+) \\|$")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1]+": "+m[2])
	}
	var want []string
	for _, a := range APIs().Rows() {
		want = append(want, docName(a.Name())+": "+apiAuth[kmsg.Key(a.Key)].needs)
	}
	require.Equal(t, want, documented, "docs/operations.md's authorization table differs from core/broker/authorize.go")
}
