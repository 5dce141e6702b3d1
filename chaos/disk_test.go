package chaos

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDiskFillLeavesTheHeadroom: a filled disk takes what the node's
// files hold plus the headroom and no more, and emptying it gives the
// room back.
func TestDiskFillLeavesTheHeadroom(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("not root (euid %d): mounting a tmpfs needs CAP_SYS_ADMIN", os.Geteuid())
		}
		t.Skipf("not root (euid %d): mounting a tmpfs needs CAP_SYS_ADMIN", os.Geteuid())
	}
	d := newDisk(t)
	seg := filepath.Join(d.Data(), "segment")
	require.NoError(t, os.WriteFile(seg, make([]byte, 40_000), 0o644))
	used := d.used()
	require.GreaterOrEqual(t, used, int64(40_000))

	d.fill(used + 8192)
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Write(make([]byte, 4096))
	require.NoError(t, err, "the headroom takes a page")
	_, err = f.Write(make([]byte, 64<<10))
	require.ErrorIs(t, err, syscall.ENOSPC, "past the headroom the disk is full")

	d.empty()
	_, err = f.Write(make([]byte, 64<<10))
	require.NoError(t, err, "an emptied disk has room again")
}
