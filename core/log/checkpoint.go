package log

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-log/strata/core/env"
)

// Checkpoint files use Kafka's checkpoint text format: a version line, a
// count line, then that many entry lines of space-separated fields, each
// line ending in '\n'. They are replaced atomically: the new content goes
// to <name>.tmp, which is synced, renamed over <name>, and the directory is
// synced (see flush.go). A file that does not parse is corruption, since a
// checkpoint is never visible half-written.
//
// The recovery checkpoint of a partition directory holds two entries:
//
//	0
//	2
//	recovery-point 1234
//	log-start-offset 1000
//
// recovery-point: every batch below it is durable, and so are the indexes
// of every segment that ends at or below it and the leader epochs that
// start below it; recovery scans only from there. log-start-offset: the
// log start offset as of the checkpoint (DeleteRecords, retention).
//
// A log with a transaction index (Config.TxnIndex) adds a third entry,
// txn-index-end N: the .txnindex files durably hold every aborted
// transaction whose marker lies below N (txnindex.go). Without it no
// entry is trusted.
const (
	checkpointVersion   = 0
	keyRecoveryPoint    = "recovery-point"
	keyLogStartOffset   = "log-start-offset"
	keyTxnIndexEnd      = "txn-index-end"
	maxCheckpointBytes  = 1 << 20 // a larger checkpoint file is corrupt
	maxCheckpointFields = 2
)

// checkpoint is the content of the recovery checkpoint.
type checkpoint struct {
	recoveryPoint  int64
	logStartOffset int64
	// txnIndexEnd is -1 when the checkpoint has no txn-index-end.
	txnIndexEnd int64
}

func (c checkpoint) encode() []byte {
	lines := []string{
		keyRecoveryPoint + " " + strconv.FormatInt(c.recoveryPoint, 10),
		keyLogStartOffset + " " + strconv.FormatInt(c.logStartOffset, 10),
	}
	if c.txnIndexEnd >= 0 {
		lines = append(lines, keyTxnIndexEnd+" "+strconv.FormatInt(c.txnIndexEnd, 10))
	}
	return encodeCheckpointLines(lines)
}

func encodeCheckpointLines(lines []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// parseCheckpointLines checks the version and count and returns the entry
// lines split into exactly fields fields each.
func parseCheckpointLines(data []byte, fields int) ([][]string, error) {
	text := string(data)
	if !strings.HasSuffix(text, "\n") {
		return nil, errors.New("does not end with a newline")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 2 {
		return nil, errors.New("missing version or count line")
	}
	if lines[0] != strconv.Itoa(checkpointVersion) {
		return nil, fmt.Errorf("version %q, want %d", lines[0], checkpointVersion)
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("count line %q, but %d entries follow", lines[1], len(lines)-2)
	}
	out := make([][]string, 0, n)
	for i, l := range lines[2:] {
		f := strings.Split(l, " ")
		if len(f) != fields {
			return nil, fmt.Errorf("entry %d %q has %d fields, want %d", i, l, len(f), fields)
		}
		out = append(out, f)
	}
	return out, nil
}

func parseCheckpoint(data []byte) (checkpoint, error) {
	entries, err := parseCheckpointLines(data, maxCheckpointFields)
	if err != nil {
		return checkpoint{}, err
	}
	c := checkpoint{recoveryPoint: -1, logStartOffset: -1, txnIndexEnd: -1}
	for _, f := range entries {
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || v < 0 {
			return checkpoint{}, fmt.Errorf("%s value %q is not an offset", f[0], f[1])
		}
		switch f[0] {
		case keyRecoveryPoint:
			c.recoveryPoint = v
		case keyLogStartOffset:
			c.logStartOffset = v
		case keyTxnIndexEnd:
			c.txnIndexEnd = v
		default:
			return checkpoint{}, fmt.Errorf("unknown entry %q", f[0])
		}
	}
	if c.recoveryPoint < 0 || c.logStartOffset < 0 {
		return checkpoint{}, errors.New("missing recovery-point or log-start-offset")
	}
	return c, nil
}

// readCheckpointFile returns the content of a checkpoint file read stably,
// or ok false when it does not exist.
func readCheckpointFile(d env.Disk, name string) (data []byte, ok bool, err error) {
	f, err := d.Open(name, false)
	if errors.Is(err, env.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("log: open %s: %w", name, err)
	}
	defer f.Close()
	if f.Size() > maxCheckpointBytes {
		return nil, false, corruptAt(name, 0, nil, "checkpoint of %d bytes, at most %d expected", f.Size(), maxCheckpointBytes)
	}
	data, err = readFileStable(f)
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// newCheckpoint is the recovery checkpoint with recovery point rp and the
// current log start offset (and, with a transaction index, the index end
// it may claim: the entries below it are written and synced in the step
// that writes the checkpoint).
func (l *Log) newCheckpoint(rp int64) checkpoint {
	ck := checkpoint{recoveryPoint: rp, logStartOffset: l.logStart, txnIndexEnd: -1}
	if l.cfg.TxnIndex {
		ck.txnIndexEnd = l.txnEndFor(rp)
	}
	return ck
}
