package replica

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/meta"
)

// Directory layout, as Kafka's:
//
//	<topic>-<partition>/                   a partition's log (core/log)
//	<topic>-<partition>/partition.metadata  "version: 0\ntopic_id: <id>\n"
//	<topic>-<partition>.<id>-delete/        a removed partition being deleted
//
// partition.metadata ties a directory to one incarnation of its topic
// name: a topic deleted while this broker was down and recreated under the
// same name finds the old directory with the old id, which is deleted
// rather than served as the new topic's data.

const (
	partitionMetadataFile = "partition.metadata"
	deleteSuffix          = "-delete"
)

// ensurePartitionMetadata creates p's directory and partition.metadata if
// missing; a directory whose partition.metadata names another topic id
// belongs to an older topic of the same name and is set aside for
// deletion first.
func (m *Manager) ensurePartitionMetadata(p *Partition) error {
	d := m.e.Disk()
	want := fmt.Sprintf("version: 0\ntopic_id: %s\n", p.topicID)
	name := p.dir + "/" + partitionMetadataFile
	f, err := d.Open(name, false)
	switch {
	case err == nil:
		got, rerr := readAll(f)
		if rerr == nil && string(got) != want {
			// What differs decides whether the directory is deleted:
			// believe it only once two reads agree.
			got, rerr = confirmRead(f, got)
		}
		_ = f.Close()
		if rerr != nil {
			return rerr
		}
		if string(got) == want {
			return nil
		}
		if id, ok := parsePartitionMetadata(got); ok && id != p.topicID {
			p.log.Warn("directory belongs to an older topic of the same name; deleting it", "dir_topic_id", id.String(), "topic_id", p.topicID.String())
			if err := m.setAside(p.dir, id); err != nil {
				return err
			}
		}
		// A damaged file is rewritten below.
	case errors.Is(err, env.ErrNotExist):
	default:
		return err
	}
	if err := d.MkdirAll(p.dir); err != nil {
		return err
	}
	f, err = d.Open(name, true)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := f.Truncate(0); err != nil {
		return err
	}
	if err := f.WriteAt([]byte(want), 0); err != nil {
		return err
	}
	// Durable with the log's own flushes' directory syncs; the file's
	// data is synced here, best effort (a lost file is rewritten at the
	// next open, and a torn one too).
	f.Sync(func(err error) {
		if err != nil {
			p.log.Warn("sync partition.metadata", "err", err)
		}
	})
	return nil
}

func parsePartitionMetadata(b []byte) (meta.UUID, bool) {
	for _, line := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "topic_id: ")
		if !ok {
			continue
		}
		id, err := meta.ParseUUID(strings.TrimSpace(v))
		return id, err == nil
	}
	return meta.UUID{}, false
}

// maxConfirmReads bounds the reads confirmRead makes.
const maxConfirmReads = 5

// confirmRead reads f again until two reads in a row agree, starting from
// first, and returns what they agree on. The disk may flip a bit in what
// one read returns (the data stays intact), and a single flipped bit of a
// topic id in partition.metadata would have the directory, and every
// acknowledged record in it, deleted as an older topic's (log seed 917).
func confirmRead(f env.File, first []byte) ([]byte, error) {
	prev := first
	for i := 1; i < maxConfirmReads; i++ {
		got, err := readAll(f)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(got, prev) {
			return got, nil
		}
		prev = got
	}
	return nil, fmt.Errorf("%s: %d reads in a row disagree: %w", f.Name(), maxConfirmReads, env.ErrIO)
}

func readAll(f env.File) ([]byte, error) {
	size := f.Size()
	if size > 4096 {
		size = 4096 // partition.metadata is a few dozen bytes
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if n == len(buf) {
		return buf, nil
	}
	return nil, err
}

// setAside renames a partition directory to its -delete name; deleteDir
// then removes it.
func (m *Manager) setAside(dir string, id meta.UUID) error {
	aside := dir + "." + id.String() + deleteSuffix
	if err := m.e.Disk().Rename(dir, aside); err != nil {
		return fmt.Errorf("set %s aside for deletion: %w", dir, err)
	}
	m.removeTree(aside)
	return nil
}

// deleteDir deletes a removed partition's directory: renamed aside first
// (one directory change, so a crash leaves either the old name, which the
// next sweep finds unhosted, or the -delete name, which it finishes), then
// its files, then itself, then the root is synced.
func (m *Manager) deleteDir(dir string, id meta.UUID) {
	if err := m.setAside(dir, id); err != nil && !errors.Is(err, env.ErrNotExist) {
		m.log.Warn("cannot delete a removed partition's directory", "dir", dir, "err", err)
	}
}

// removeTree deletes a directory of files (a partition directory has no
// subdirectories) and syncs the root.
func (m *Manager) removeTree(dir string) {
	d := m.e.Disk()
	names, err := d.List(dir)
	if err != nil {
		m.log.Warn("list a directory to delete", "dir", dir, "err", err)
		return
	}
	for _, n := range names {
		if strings.HasSuffix(n, "/") {
			m.removeTree(dir + "/" + strings.TrimSuffix(n, "/"))
			continue
		}
		if err := d.Remove(dir + "/" + n); err != nil && !errors.Is(err, env.ErrNotExist) {
			m.log.Warn("delete a file", "file", dir+"/"+n, "err", err)
			return
		}
	}
	if err := d.Remove(dir); err != nil && !errors.Is(err, env.ErrNotExist) {
		m.log.Warn("delete a directory", "dir", dir, "err", err)
		return
	}
	d.SyncDir("", func(err error) {
		if err != nil {
			m.log.Warn("sync the data directory after a deletion", "err", err)
		}
	})
}

// sweep runs once the image is first caught up: it finishes deletions a
// crash interrupted and deletes partition directories of partitions this
// broker no longer hosts (a topic deleted while it was down).
func (m *Manager) sweep() {
	names, err := m.e.Disk().List("")
	if err != nil {
		m.log.Warn("list the data directory", "err", err)
		return
	}
	for _, n := range names {
		if !strings.HasSuffix(n, "/") {
			continue
		}
		n = strings.TrimSuffix(n, "/")
		if strings.HasSuffix(n, deleteSuffix) {
			m.log.Info("finishing an interrupted deletion", "dir", n)
			m.removeTree(n)
			continue
		}
		topic, id, ok := parsePartitionDir(n)
		if !ok || slices.Contains(m.cfg.KeepDirs, n) {
			continue // the metadata log, the object store, ...
		}
		if _, hosted := m.find(topic, id); hosted {
			continue
		}
		m.log.Info("deleting the directory of a partition not hosted here", "dir", n)
		m.removeTree(n)
	}
}
