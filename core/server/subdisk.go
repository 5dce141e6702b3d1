package server

import (
	"path"

	"github.com/strata-log/strata/core/env"
)

// metadataDir is the metadata quorum's directory under the data directory
// (log.dirs), Kafka's name for it.
const metadataDir = "__cluster_metadata-0"

// subdirEnv is an Env whose Disk is rooted at a subdirectory: the metadata
// quorum member keeps its files under <log.dirs>/__cluster_metadata-0/ and
// sees that directory as its root.
type subdirEnv struct {
	env.Env
	disk subDisk
}

func (e subdirEnv) Disk() env.Disk { return e.disk }

// subDisk is an env.Disk that prefixes every name with dir. The files it
// opens are the parent's, wrapped only so that Name is relative to the
// subdirectory as the env.File contract says (core/kraft reopens files by
// their Name); Unwrap gives the parent's file back (the production
// transport sends regions of its own files with sendfile).
//
// The subdirectory's own entry in the parent directory must be durable
// before anything inside it is: a crash that loses the entry loses every
// file under it, synced or not. So until a SyncDir of the parent has
// succeeded, every SyncDir first syncs the parent (a subdirectory created
// by Start, or one a previous incarnation created and did not sync).
type subDisk struct {
	parent env.Disk
	dir    string
	// entryDurable is shared by the copies of one subDisk: set once a
	// SyncDir of the parent covering the subdirectory's entry succeeded.
	entryDurable *bool
}

func newSubDisk(parent env.Disk, dir string) subDisk {
	return subDisk{parent: parent, dir: dir, entryDurable: new(bool)}
}

// name maps a name under the subdirectory to one under the parent root,
// without cleaning it, so that the parent's validation (no "..", not
// absolute) still sees what the caller wrote.
func (d subDisk) name(n string) string {
	if n == "" || n == "." {
		return d.dir
	}
	return d.dir + "/" + n
}

func (d subDisk) Open(name string, create bool) (env.File, error) {
	f, err := d.parent.Open(d.name(name), create)
	if err != nil {
		return nil, err
	}
	return subFile{File: f, name: name}, nil
}
func (d subDisk) Remove(name string) error { return d.parent.Remove(d.name(name)) }
func (d subDisk) Rename(oldName, newName string) error {
	return d.parent.Rename(d.name(oldName), d.name(newName))
}
func (d subDisk) MkdirAll(dir string) error         { return d.parent.MkdirAll(d.name(dir)) }
func (d subDisk) List(dir string) ([]string, error) { return d.parent.List(d.name(dir)) }

// SyncDir syncs the subdirectory's parent first until that has
// succeeded once, then the directory asked for.
func (d subDisk) BootID() string { return d.parent.BootID() }

func (d subDisk) SyncDir(dir string, done func(error)) {
	if *d.entryDurable {
		d.parent.SyncDir(d.name(dir), done)
		return
	}
	d.parent.SyncDir(path.Dir(d.dir), func(err error) {
		if err != nil {
			done(err)
			return
		}
		*d.entryDurable = true
		d.parent.SyncDir(d.name(dir), done)
	})
}

// subFile is a parent disk's file named relative to a subDisk.
type subFile struct {
	env.File
	name string
}

func (f subFile) Name() string { return f.name }

// Unwrap returns the parent disk's file.
func (f subFile) Unwrap() env.File { return f.File }
