package protocol

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestCompatibilityDocMatchesTable keeps docs/compatibility.md in step with
// the one table of supported APIs.
func TestCompatibilityDocMatchesTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range Supported() {
		row := fmt.Sprintf("| %s | %d | %d–%d |", a.Name(), a.Key, a.MinVersion, a.MaxVersion)
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/compatibility.md lacks the row %q", row)
		}
	}
}
