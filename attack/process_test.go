package attack

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-log/strata/internal/proccluster"
)

// TestMain runs the tests, or the victim client in a child process, and
// removes the strata binary the tests built (internal/proccluster).
func TestMain(m *testing.M) {
	if target := os.Getenv(envVictim); target != "" {
		os.Exit(victimMain(target))
	}
	os.Exit(proccluster.RunTests(m))
}

// memory is a process's resident set and its peak, from
// /proc/PID/status, in bytes.
type memory struct{ rss, hwm int64 }

func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			m.rss = kb << 10
		case "VmHWM:":
			m.hwm = kb << 10
		}
	}
	if m.rss == 0 {
		return m, errors.New("no VmRSS in /proc/PID/status")
	}
	return m, nil
}

// resetPeak resets the process's VmHWM to its current RSS (Linux 4.0+),
// so that the next reading is the peak since now.
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}
