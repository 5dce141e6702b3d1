package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMain lets a test re-run this binary as the strata command: with
// STRATA_TEST_MAIN=1 it runs main with the given arguments instead of the
// tests.
func TestMain(m *testing.M) {
	if os.Getenv("STRATA_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func TestDispatch(t *testing.T) {
	var out bytes.Buffer
	require.Equal(t, exitUsage, dispatch(nil, &out))
	require.Contains(t, out.String(), "Usage:")

	out.Reset()
	require.Equal(t, exitOK, dispatch([]string{"help"}, &out))

	out.Reset()
	require.Equal(t, exitUsage, dispatch([]string{"nope"}, &out))
	require.Contains(t, out.String(), `unknown command "nope"`)
}

func TestUsageListsCommandsSorted(t *testing.T) {
	var out bytes.Buffer
	usage(&out)
	var listed []string
	for _, line := range strings.Split(out.String(), "\n") {
		if fields := strings.Fields(line); len(fields) > 1 && strings.HasPrefix(line, "  ") && commands[fields[0]].run != nil {
			listed = append(listed, fields[0])
		}
	}
	require.Contains(t, listed, "serve")
	require.Contains(t, listed, "version")
	require.IsIncreasing(t, listed)
	require.Len(t, listed, len(commands))
}

func TestRegisterRejectsDuplicates(t *testing.T) {
	require.Panics(t, func() { register("serve", "again", func([]string) int { return 0 }) })
}

func TestVersionString(t *testing.T) {
	require.Regexp(t, `^strata \S+ .*\(go1\.`, versionString())
}

func TestServeRejectsBadFlags(t *testing.T) {
	require.Equal(t, exitUsage, serve([]string{"--no-such-flag"}))
	require.Equal(t, exitUsage, serve([]string{"extra-arg"}))
	require.Equal(t, exitUsage, serve([]string{"--node.id", "-4"}))
	require.Equal(t, exitError, serve([]string{"--config", filepath.Join(t.TempDir(), "missing.properties")}))
}

// TestServeProcess runs `strata serve` as a child process, talks to it with
// franz-go, and stops it with SIGTERM: it must log the signal, shut down
// cleanly and exit 0.
func TestServeProcess(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	require.NoError(t, os.WriteFile(props, []byte("node.id=9\nnum.network.threads=3\n"), 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "serve",
		"--config", props, "--listeners", "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "--log.dirs", filepath.Join(dir, "data"), "--metrics.listener", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "STRATA_TEST_MAIN=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	// Read the log until the node says where it listens.
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var logged []string
	addrRE := regexp.MustCompile(`msg="node started".* listener=(\S+)`)
	var addr string
	for addr == "" {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "serve exited early:\n%s", strings.Join(logged, "\n"))
			logged = append(logged, line)
			if m := addrRE.FindStringSubmatch(line); m != nil {
				addr = m[1]
			}
		case <-ctx.Done():
			t.Fatalf("serve did not start:\n%s", strings.Join(logged, "\n"))
		}
	}
	require.Contains(t, strings.Join(logged, "\n"), "key=num.network.threads", "unknown keys are logged as ignored")

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	md, err := kadm.NewClient(cl).Metadata(ctx)
	cl.Close()
	require.NoError(t, err)
	require.Len(t, md.Brokers, 1)
	require.Equal(t, int32(9), md.Brokers[0].NodeID)
	_, err = os.Stat(filepath.Join(dir, "data", "meta.properties"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "data", "__cluster_metadata-0"))
	require.NoError(t, err, "the metadata quorum lives under the data dir")
	_, err = os.Stat(filepath.Join(dir, "data", "objects"))
	require.NoError(t, err, "the filesystem bucket lives under the data dir")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	for line := range lines {
		logged = append(logged, line)
	}
	require.NoError(t, cmd.Wait(), "serve must exit 0 after SIGTERM:\n%s", strings.Join(logged, "\n"))
	all := strings.Join(logged, "\n")
	require.Contains(t, all, "signal received")
	require.Contains(t, all, `msg="node stopped"`)
}
