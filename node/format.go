package node

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/strata-log/strata/core/meta"
)

// BootstrapFile is the file, in the data directory, of the metadata
// records `strata storage format` was given (KIP-900's --add-scram
// credentials), which the first active controller of the cluster writes
// to the empty metadata log: Kafka's bootstrap.checkpoint.
const BootstrapFile = "bootstrap.records"

// bootstrapMagic starts a bootstrap file: its format and version.
var bootstrapMagic = []byte("STRATA-BOOTSTRAP-1\n")

// maxBootstrapBytes bounds a bootstrap file: thousands of users fit.
const maxBootstrapBytes = 16 << 20

// ErrFormatted is returned by Format for a data directory that already
// has a meta.properties.
var ErrFormatted = errors.New("the data directory is already formatted")

// Format prepares cfg's data directory for a node of cluster clusterID,
// as kafka-storage.sh format does: it writes the bootstrap records, if
// any, then meta.properties (so a crash in between leaves a directory
// that is not formatted and can be formatted again). A directory with a
// meta.properties is ErrFormatted and left alone. Records must replay on
// the empty image.
func Format(cfg Config, clusterID string, records []meta.Record) (dir string, err error) {
	if err := CheckClusterID(clusterID); err != nil {
		return "", err
	}
	if err := checkBootstrap(records); err != nil {
		return "", err
	}
	dir, err = filepath.Abs(cfg.LogDir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", KeyLogDirs, err)
	}
	if err := mkdirAll(dir); err != nil {
		return "", fmt.Errorf("%s %s: %w", KeyLogDirs, dir, err)
	}
	switch _, err := os.Stat(filepath.Join(dir, MetaPropertiesFile)); {
	case err == nil:
		return dir, fmt.Errorf("%w: %s", ErrFormatted, filepath.Join(dir, MetaPropertiesFile))
	case !errors.Is(err, os.ErrNotExist):
		return dir, fmt.Errorf("%s: %w", dir, osErr(err))
	}
	if len(records) > 0 {
		if err := writeFileDurably(dir, BootstrapFile, encodeBootstrap(records)); err != nil {
			return dir, err
		}
	}
	return dir, writeMeta(dir, MetaProperties{ClusterID: clusterID, NodeID: cfg.NodeID, Version: metaVersion})
}

// checkBootstrap checks that records replay, in order, on the empty
// image, so that the controller never proposes one the image refuses.
func checkBootstrap(records []meta.Record) error {
	d := meta.Empty().NewDelta()
	for i, r := range records {
		if err := d.Replay(r); err != nil {
			return fmt.Errorf("bootstrap record %d (%v): %w", i, r, err)
		}
	}
	return nil
}

// encodeBootstrap is a bootstrap file: the magic, each record encoded
// (meta.EncodeRecord) after its uvarint length, then the CRC-32C of all
// that.
func encodeBootstrap(records []meta.Record) []byte {
	b := append([]byte(nil), bootstrapMagic...)
	for _, r := range records {
		v := meta.EncodeRecord(nil, r)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// decodeBootstrap reads a bootstrap file back.
func decodeBootstrap(data []byte) ([]meta.Record, error) {
	if !bytes.HasPrefix(data, bootstrapMagic) || len(data) < len(bootstrapMagic)+4 {
		return nil, errors.New("not a strata bootstrap file")
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != sum {
		return nil, errors.New("checksum mismatch: the file is damaged")
	}
	var records []meta.Record
	for rest := body[len(bootstrapMagic):]; len(rest) > 0; {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, fmt.Errorf("record %d: bad length", len(records))
		}
		r, err := meta.DecodeRecord(rest[k : k+int(n)])
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", len(records), err)
		}
		records = append(records, r)
		rest = rest[k+int(n):]
	}
	return records, nil
}

// readBootstrap is the bootstrap records of dir, nil when it has no
// bootstrap file (a directory formatted without them, or by a first
// start).
func readBootstrap(dir string) ([]meta.Record, error) {
	path := filepath.Join(dir, BootstrapFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, osErr(err))
	}
	defer f.Close()
	data, err := readAllBounded(f, maxBootstrapBytes)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	records, err := decodeBootstrap(data)
	if err == nil {
		err = checkBootstrap(records)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return records, nil
}

// readAllBounded reads f whole, refusing more than limit bytes.
func readAllBounded(f *os.File, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, osErr(err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// writeFileDurably writes dir/name whole or not at all: a temporary
// file, fsync, rename over the final name, fsync of the directory.
func writeFileDurably(dir, name string, data []byte) error {
	final := filepath.Join(dir, name)
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, osErr(err))
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, osErr(err))
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("rename to %s: %w", final, osErr(err))
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
