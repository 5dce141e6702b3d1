package interop

import (
	"os"
	"testing"

	"github.com/strata-log/strata/internal/proccluster"
)

// TestMain runs the tests and removes the strata binary that the
// multi-process tests built (internal/proccluster).
func TestMain(m *testing.M) { os.Exit(proccluster.RunTests(m)) }
