package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/quorum"
	"github.com/strata-log/strata/internal/cli"
)

// resetStateCommand is `strata quorum reset-state`: it rewrites the
// quorum-state file of a stopped member whose state is unusable (Start
// refuses it with kraft.ErrUnusableState: an epoch past quorum.MaxEpoch,
// as a Strata before issue 22 persisted from a forged Vote) to epoch N, no
// vote, no leader. It is safe only as docs/operations.md says: every
// controller stopped, and N past every epoch any voter used. A usable file
// is left alone unless --force.
func resetStateCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("quorum reset-state", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "the member's metadata log directory, `<log.dirs>/__cluster_metadata-0` (or log.dirs itself)")
	epoch := fs.Int64("epoch", -1, "the epoch to resume at: 1 + the largest epoch any voter's metadata log ends in or its usable quorum-state holds")
	force := fs.Bool("force", false, "rewrite the file even when it is usable")
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 || *dir == "" {
		fmt.Fprintln(stderr, "strata quorum reset-state: give --dir <log.dirs>/__cluster_metadata-0 and --epoch N")
		return exitUsage
	}
	if *epoch < 0 || *epoch > int64(quorum.MaxEpoch) {
		fmt.Fprintf(stderr, "strata quorum reset-state: --epoch %d outside [0, %d]\n", *epoch, quorum.MaxEpoch)
		return exitUsage
	}
	d := *dir
	if _, err := os.Stat(filepath.Join(d, "__cluster_metadata-0")); err == nil {
		d = filepath.Join(d, "__cluster_metadata-0")
	}
	path := filepath.Join(d, kraft.StateFileName)
	if old, err := os.ReadFile(path); err == nil && !*force {
		if s, ok := kraft.DecodeStateFile(old); ok && s.Epoch >= 0 && s.Epoch <= quorum.MaxEpoch {
			fmt.Fprintf(stderr, "strata quorum reset-state: %s holds %s, which is usable; not rewritten (--force to rewrite it anyway)\n", path, s)
			return exitError
		}
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "strata quorum reset-state: %v\n", err)
		return exitError
	}
	s := quorum.QuorumState{Epoch: int32(*epoch), VotedFor: quorum.NoNode, LeaderID: quorum.NoNode}
	if err := writeFileDurably(path, kraft.EncodeStateFile(s)); err != nil {
		fmt.Fprintf(stderr, "strata quorum reset-state: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "%s now holds %s\n", path, s)
	return exitOK
}

// writeFileDurably replaces path with data as the member does: a
// temporary file, synced, renamed over it, the directory synced.
func writeFileDurably(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer func() { _ = dir.Close() }()
	return dir.Sync()
}
