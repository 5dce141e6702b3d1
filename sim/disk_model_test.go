package sim

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/strata-log/strata/core/env"
)

// TestDiskCrashModel runs random sequences of writes, appends, truncations,
// syncs, directory changes and crashes, and checks every crash outcome
// against what the durability model allows:
//
//   - file bytes covered by a successful Sync survive byte for byte;
//   - unsynced bytes survive only as an in-order prefix of appends, cut at a
//     sector boundary or at the end of a write, never over synced bytes;
//     or, under DiskFaults.PageCrash, as any subset of 4 KiB pages, each
//     page all durable or all page cache, at a size the file had;
//   - data covered by a failed Sync (and not durable before) never survives,
//     and no byte ever shows up at an offset it was not written at;
//   - every directory keeps a prefix of its changes that includes every
//     change covered by a successful SyncDir, and a rename across
//     directories survives in both or in neither;
//   - a failed SyncDir fails the filesystem: from then on every change,
//     Sync and SyncDir fails with env.ErrIO, even after a kill, while reads
//     still show the page cache; the next crash keeps exactly what
//     successful SyncDirs made durable, and the filesystem works again.
//
// Every write fills its range with its own op id (1..250), so each surviving
// byte names the write it came from.
func TestDiskCrashModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runDiskModel(t) })
}

// runDiskModel runs one random case and returns its model.
func runDiskModel(t *rapid.T) *diskModel {
	{
		m := newDiskModel(t)
		actions := map[string]func(*rapid.T){
			"open": m.open, "write": m.write, "append": m.append, "truncate": m.truncate,
			"sync": m.sync, "close": m.close, "remove": m.remove, "rename": m.rename,
			"syncdir": m.syncDir, "run": m.run, "crash": m.crash, "kill": m.kill,
			"read": m.read,
		}
		// Weighted so that files grow and get synced between crashes.
		var deck []string
		for name, weight := range map[string]int{
			"open": 3, "write": 3, "append": 6, "truncate": 1, "sync": 4, "close": 1,
			"remove": 1, "rename": 2, "syncdir": 3, "run": 3, "crash": 1, "kill": 1,
			"read": 1,
		} {
			for range weight {
				deck = append(deck, name)
			}
		}
		slices.Sort(deck) // the draw must not depend on map order
		steps := rapid.IntRange(1, 150).Draw(t, "steps")
		for range steps {
			actions[rapid.SampledFrom(deck).Draw(t, "action")](t)
		}
		m.crash(t) // every case ends with at least one checked crash
		return m
	}
}

const (
	modelMaxOps    = 250 // write ids are byte values, 0 is "no write"
	modelMaxOffset = 3000
	modelMaxWrite  = 1500
	modelDirID     = -1 // the identity of directory "d" in root's entries
)

var (
	modelDirs  = []string{"", "d"}
	modelNames = map[string][]string{"": {"a", "b", "c"}, "d": {"a", "b"}}
)

type modelWrite struct {
	file     int
	off, end int64
}

// modelChange is a change of a file since the last crash; from is the
// lowest offset whose content it affects (a gap it zero-fills included).
type modelChange struct {
	seq     int
	writeID int // 0 for a truncation
	from    int64
	size    int64 // the file's size after the change
}

type modelFile struct {
	data    []byte
	changes []modelChange
	// durable is the snapshot of the latest-called successful Sync that
	// completed, covering changes up to durableSeq.
	durable    []byte
	durableSeq int
	// lostFrom is the lowest offset affected by a change lost to a failed
	// Sync; below it, durable is exact.
	lostFrom int64
	lost     map[int]bool // write ids that can never become durable
}

type modelDirChange struct {
	seq     int
	changes [][2]any // name, identity (0 removes)
	cross   bool
}

type modelDir struct {
	base map[string]int // entries after the last crash
	cur  map[string]int
	ops  []modelDirChange
	// minKeep is how many of ops a crash must keep: those covered by a
	// successful SyncDir (of this directory, or of the other one through a
	// rename across both).
	minKeep int
}

type diskModel struct {
	t       *rapid.T
	s       *Sim
	p       *Process
	e       env.Env
	disk    *Disk
	inc     uint64
	crashes int

	writes   map[int]modelWrite // by write id, across crashes
	nextID   int                // last write id used
	nextFile int
	files    map[int]*modelFile
	ids      map[*inode]int
	handles  map[int]env.File // open handles of the current incarnation
	dirs     map[string]*modelDir
	dirSeq   int
	// fsFailed: a SyncDir failed, so the filesystem refuses every change
	// until the next crash, which keeps exactly minKeep changes per
	// directory.
	fsFailed bool
	// pageCrash: the disk runs DiskFaults.PageCrash, so a crash keeps any
	// page-granular subset of the unsynced changes.
	pageCrash bool
}

func newDiskModel(t *rapid.T) *diskModel {
	m := &diskModel{
		t:       t,
		writes:  map[int]modelWrite{},
		files:   map[int]*modelFile{},
		ids:     map[*inode]int{},
		handles: map[int]env.File{},
		dirs:    map[string]*modelDir{},
	}
	m.s = New(Config{Seed: rapid.Uint64().Draw(t, "seed")})
	m.p = m.s.AddProcess("n1", func(e env.Env) { m.e = e })
	m.disk = m.p.Disk()
	m.disk.SetFaults(DiskFaults{
		SyncLatencyMin:         100 * time.Microsecond,
		SyncLatencyMax:         rapid.SampledFrom([]time.Duration{100 * time.Microsecond, 3 * time.Millisecond}).Draw(t, "maxLatency"),
		SyncFailProbability:    rapid.SampledFrom([]float64{0, 0, 0.2}).Draw(t, "failProb"),
		SyncDirFailProbability: rapid.SampledFrom([]float64{0, 0, 0.05, 0.2}).Draw(t, "dirFailProb"),
		PageCrash:              rapid.Bool().Draw(t, "pageCrash"),
	})
	m.pageCrash = m.disk.Faults().PageCrash
	m.start()
	// Directory "d" is part of the durable base of every case.
	modelMust(m.e.Disk().MkdirAll("d"))
	synced := false
	faults := m.disk.Faults()
	m.disk.SetFaults(DiskFaults{})
	m.e.Disk().SyncDir("", func(err error) { modelMust(err); synced = true })
	m.runFor(10 * time.Millisecond)
	if !synced {
		t.Fatal("setup SyncDir did not complete")
	}
	m.disk.SetFaults(faults)
	m.dirs[""] = &modelDir{base: map[string]int{"d": modelDirID}}
	m.dirs["d"] = &modelDir{base: map[string]int{}}
	for _, d := range m.dirs {
		d.cur = maps.Clone(d.base)
	}
	return m
}

func (m *diskModel) start() {
	m.p.Start()
	m.runFor(0)
	m.inc = m.p.Incarnation()
}

func (m *diskModel) runFor(d time.Duration) {
	if err := m.s.RunFor(d); err != nil {
		m.t.Fatal(err)
	}
}

func (m *diskModel) path(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func (m *diskModel) drawPath(t *rapid.T, label string) (string, string) {
	dir := rapid.SampledFrom(modelDirs).Draw(t, label+"Dir")
	return dir, rapid.SampledFrom(modelNames[dir]).Draw(t, label+"Name")
}

// drawOpen picks an open file, or returns nil if none is open.
func (m *diskModel) drawOpen(t *rapid.T) (int, env.File) {
	if len(m.handles) == 0 {
		return 0, nil
	}
	ids := slices.Sorted(maps.Keys(m.handles))
	id := rapid.SampledFrom(ids).Draw(t, "file")
	return id, m.handles[id]
}

// dirChange records a directory change in the model, mirroring the disk's.
func (m *diskModel) dirChange(dir string, cross bool, changes ...[2]any) {
	d := m.dirs[dir]
	for _, c := range changes {
		if id := c[1].(int); id == 0 {
			delete(d.cur, c[0].(string))
		} else {
			d.cur[c[0].(string)] = id
		}
	}
	d.ops = append(d.ops, modelDirChange{seq: m.dirSeq, changes: changes, cross: cross})
}

func (m *diskModel) open(t *rapid.T) {
	dir, name := m.drawPath(t, "open")
	create := rapid.Bool().Draw(t, "create")
	f, err := m.e.Disk().Open(m.path(dir, name), create)
	id, exists := m.dirs[dir].cur[name]
	switch {
	case !exists && !create:
		if !errors.Is(err, env.ErrNotExist) {
			t.Fatalf("open of missing %q: got %v", m.path(dir, name), err)
		}
		return
	case !exists && m.refused(t, "create "+m.path(dir, name), err):
		return
	case err != nil:
		t.Fatalf("open %q: %v", m.path(dir, name), err)
	}
	node := f.(*fileHandle).node
	if !exists {
		m.nextFile++
		id = m.nextFile
		m.ids[node] = id
		m.files[id] = &modelFile{lostFrom: math.MaxInt64, lost: map[int]bool{}, durable: []byte{}}
		m.dirSeq++
		m.dirChange(dir, false, [2]any{name, id})
	} else if m.ids[node] != id {
		t.Fatalf("open %q: disk has file %d, model %d", m.path(dir, name), m.ids[node], id)
	}
	if old := m.handles[id]; old != nil {
		modelMust(old.Close())
	}
	m.handles[id] = f
}

// refused checks the outcome of a change: a failed filesystem refuses it
// with env.ErrIO (and the model records nothing), a working one performs
// it. It reports whether the change was refused.
func (m *diskModel) refused(t *rapid.T, op string, err error) bool {
	if !m.fsFailed {
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		return false
	}
	if !errors.Is(err, env.ErrIO) {
		t.Fatalf("%s on a failed filesystem: got %v, want an error wrapping env.ErrIO", op, err)
	}
	return true
}

// newWriteID returns a fresh write id, or 0 when they ran out.
func (m *diskModel) newWriteID() int {
	if m.nextID >= modelMaxOps {
		return 0
	}
	m.nextID++
	return m.nextID
}

// applyWrite mirrors a successful write in the model.
func (m *diskModel) applyWrite(id, wid int, off int64, n int) {
	f := m.files[id]
	from := min(off, int64(len(f.data)))
	f.data = growTo(f.data, off+int64(n))
	copy(f.data[off:], bytes.Repeat([]byte{byte(wid)}, n))
	f.changes = append(f.changes, modelChange{seq: len(f.changes) + 1, writeID: wid, from: from, size: int64(len(f.data))})
	m.writes[wid] = modelWrite{file: id, off: off, end: off + int64(n)}
}

func (m *diskModel) write(t *rapid.T) {
	m.writeBytes(t, "write", func(_ int, f env.File, data []byte) (int64, error) {
		off := rapid.Int64Range(0, modelMaxOffset).Draw(t, "off")
		return off, f.WriteAt(data, off)
	})
}

func (m *diskModel) append(t *rapid.T) {
	m.writeBytes(t, "append", func(id int, f env.File, data []byte) (int64, error) {
		off, err := f.Append(data)
		if err == nil && off != int64(len(m.files[id].data)) {
			t.Fatalf("append at %d, model size %d", off, len(m.files[id].data))
		}
		return off, err
	})
}

// writeBytes draws an open file and a write of a fresh id's bytes to it,
// which do makes (file id, handle, bytes) and returns the offset of; the
// model takes the write unless the failed filesystem refused it, which
// gives the id back.
func (m *diskModel) writeBytes(t *rapid.T, op string, do func(id int, f env.File, data []byte) (int64, error)) {
	id, f := m.drawOpen(t)
	if f == nil {
		return
	}
	n := rapid.IntRange(1, modelMaxWrite).Draw(t, "len")
	wid := m.newWriteID()
	if wid == 0 {
		return
	}
	off, err := do(id, f, bytes.Repeat([]byte{byte(wid)}, n))
	if m.refused(t, op, err) {
		m.nextID--
		return
	}
	m.applyWrite(id, wid, off, n)
}

func (m *diskModel) truncate(t *rapid.T) {
	id, f := m.drawOpen(t)
	if f == nil {
		return
	}
	size := rapid.Int64Range(0, modelMaxOffset).Draw(t, "size")
	if m.refused(t, "truncate", f.Truncate(size)) {
		return
	}
	mf := m.files[id]
	from := min(size, int64(len(mf.data)))
	if size <= int64(len(mf.data)) {
		mf.data = mf.data[:size]
	} else {
		mf.data = growTo(mf.data, size)
	}
	mf.changes = append(mf.changes, modelChange{seq: len(mf.changes) + 1, from: from, size: int64(len(mf.data))})
}

func (m *diskModel) sync(t *rapid.T) {
	id, f := m.drawOpen(t)
	if f == nil {
		return
	}
	mf := m.files[id]
	upTo := len(mf.changes)
	snapshot := slices.Clone(mf.data)
	inc, crashes := m.inc, m.crashes
	f.Sync(func(err error) {
		if m.p.Incarnation() != inc || m.crashes != crashes {
			t.Fatalf("a Sync of incarnation %d called back after a crash", inc)
		}
		if m.fsFailed && !errors.Is(err, env.ErrIO) {
			t.Fatalf("a Sync completing on a failed filesystem: got %v, want an error wrapping env.ErrIO", err)
		}
		if err != nil {
			// Everything covered and not yet durable is lost.
			for _, c := range mf.changes {
				if c.seq > mf.durableSeq && c.seq <= upTo {
					mf.lostFrom = min(mf.lostFrom, c.from)
					if c.writeID != 0 {
						mf.lost[c.writeID] = true
					}
				}
			}
			return
		}
		if upTo > mf.durableSeq {
			mf.durableSeq, mf.durable = upTo, snapshot
		}
	})
}

func (m *diskModel) close(t *rapid.T) {
	id, f := m.drawOpen(t)
	if f == nil {
		return
	}
	modelMust(f.Close())
	delete(m.handles, id)
}

func (m *diskModel) remove(t *rapid.T) {
	dir, name := m.drawPath(t, "remove")
	err := m.e.Disk().Remove(m.path(dir, name))
	if _, ok := m.dirs[dir].cur[name]; !ok {
		if !errors.Is(err, env.ErrNotExist) {
			t.Fatalf("remove of missing %q: %v", m.path(dir, name), err)
		}
		return
	}
	if m.refused(t, "remove", err) {
		return
	}
	m.dirSeq++
	m.dirChange(dir, false, [2]any{name, 0})
}

func (m *diskModel) rename(t *rapid.T) {
	fromDir, fromName := m.drawPath(t, "from")
	toDir, toName := m.drawPath(t, "to")
	if fromDir == toDir && fromName == toName {
		return
	}
	err := m.e.Disk().Rename(m.path(fromDir, fromName), m.path(toDir, toName))
	id, ok := m.dirs[fromDir].cur[fromName]
	if !ok {
		if !errors.Is(err, env.ErrNotExist) {
			t.Fatalf("rename of missing %q: %v", m.path(fromDir, fromName), err)
		}
		return
	}
	if m.refused(t, "rename", err) {
		return
	}
	m.dirSeq++
	if fromDir == toDir {
		m.dirChange(fromDir, false, [2]any{fromName, 0}, [2]any{toName, id})
	} else {
		m.dirChange(fromDir, true, [2]any{fromName, 0})
		m.dirChange(toDir, true, [2]any{toName, id})
	}
}

func (m *diskModel) syncDir(t *rapid.T) {
	dir := rapid.SampledFrom(modelDirs).Draw(t, "syncDir")
	upTo := m.dirSeq
	inc, crashes := m.inc, m.crashes
	m.e.Disk().SyncDir(dir, func(err error) {
		if m.p.Incarnation() != inc || m.crashes != crashes {
			t.Fatalf("a SyncDir of incarnation %d called back after a crash", inc)
		}
		if m.fsFailed && !errors.Is(err, env.ErrIO) {
			t.Fatalf("a SyncDir completing on a failed filesystem: got %v, want an error wrapping env.ErrIO", err)
		}
		if err != nil {
			// The filesystem fails: every unsynced change is lost.
			m.fsFailed = true
			return
		}
		d := m.dirs[dir]
		d.minKeep = max(d.minKeep, countUpTo(d.ops, upTo))
		// A rename across directories made durable also makes durable
		// what the other directory did before it.
		cross := 0
		for _, op := range d.ops[:countUpTo(d.ops, upTo)] {
			if op.cross {
				cross = op.seq
			}
		}
		if cross > 0 {
			for _, other := range modelDirs {
				if o := m.dirs[other]; other != dir {
					o.minKeep = max(o.minKeep, countUpTo(o.ops, cross))
				}
			}
		}
	})
}

// countUpTo counts the changes of ops with seq at most upTo (a prefix).
func countUpTo(ops []modelDirChange, upTo int) int {
	n := 0
	for n < len(ops) && ops[n].seq <= upTo {
		n++
	}
	return n
}

// read checks that an open file reads as the model says, whether or not
// the filesystem failed.
func (m *diskModel) read(t *rapid.T) {
	id, f := m.drawOpen(t)
	if f == nil {
		return
	}
	want := m.files[id].data
	if int64(len(want)) != f.Size() {
		t.Fatalf("file #%d has size %d, model %d", id, f.Size(), len(want))
	}
	got := make([]byte, len(want))
	if n, err := f.ReadAt(got, 0); err != nil || n != len(want) || !bytes.Equal(got, want) {
		t.Fatalf("read of file #%d (failed filesystem %v): %d bytes, %v, equal %v", id, m.fsFailed, n, err, bytes.Equal(got, want))
	}
}

func (m *diskModel) run(t *rapid.T) {
	m.runFor(time.Duration(rapid.IntRange(0, 4000).Draw(t, "runMicros")) * time.Microsecond)
}

func (m *diskModel) crash(t *rapid.T) {
	m.runFor(time.Duration(rapid.IntRange(0, 2000).Draw(t, "preCrashMicros")) * time.Microsecond)
	if m.disk.Failed() != m.fsFailed {
		t.Fatalf("before a crash: the disk says failed=%v, the model %v", m.disk.Failed(), m.fsFailed)
	}
	m.p.Crash()
	m.crashes++
	if m.disk.Failed() {
		t.Fatal("a crash left the filesystem failed")
	}
	m.checkDirs(t)
	for _, name := range m.disk.Files() {
		node := m.disk.resolve(name, false)
		id, ok := m.ids[node]
		if !ok {
			t.Fatalf("crash %d: file %q is no file the model created", m.crashes, name)
		}
		m.checkFile(t, name, id, node.data)
	}
	m.reset()
	m.start()
}

// kill ends the incarnation with the machine up (Process.Kill): every
// file keeps its page-cache content exactly, synced or not, the
// handles die, and what was not durable stays not durable for a later
// crash to judge.
func (m *diskModel) kill(t *rapid.T) {
	m.runFor(time.Duration(rapid.IntRange(0, 2000).Draw(t, "preKillMicros")) * time.Microsecond)
	m.p.Kill()
	for _, name := range m.disk.Files() {
		node := m.disk.resolve(name, false)
		id, ok := m.ids[node]
		if !ok {
			t.Fatalf("kill: file %q is no file the model created", name)
		}
		if !bytes.Equal(node.data, m.files[id].data) {
			t.Fatalf("kill: file %q changed: %d bytes, model %d", name, len(node.data), len(m.files[id].data))
		}
	}
	for _, f := range m.handles {
		if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, env.ErrClosed) {
			t.Fatalf("kill: a handle of the killed incarnation still works: %v", err)
		}
	}
	m.handles = map[int]env.File{}
	m.start()
	if m.disk.Failed() != m.fsFailed {
		t.Fatalf("after a kill: the disk says failed=%v, the model %v (a kill must not clear it)", m.disk.Failed(), m.fsFailed)
	}
}

// checkDirs checks the directories' entries after a crash: each kept a
// prefix of its changes, at least the synced ones (exactly those after a
// failed SyncDir), with cross-directory renames whole.
func (m *diskModel) checkDirs(t *rapid.T) {
	observed := map[string]map[string]int{}
	for _, dir := range modelDirs {
		node := m.disk.resolve(dir, false)
		got := map[string]int{}
		if node != nil {
			for name, child := range node.entries {
				if child.isDir {
					got[name] = modelDirID
				} else {
					got[name] = m.ids[child]
				}
			}
		}
		observed[dir] = got
	}
	prefixes := map[string][]int{}
	for _, dir := range modelDirs {
		d := m.dirs[dir]
		state := maps.Clone(d.base)
		for k := 0; k <= len(d.ops); k++ {
			if k > 0 {
				for _, c := range d.ops[k-1].changes {
					if id := c[1].(int); id == 0 {
						delete(state, c[0].(string))
					} else {
						state[c[0].(string)] = id
					}
				}
			}
			if k >= d.minKeep && (!m.fsFailed || k == d.minKeep) && maps.Equal(state, observed[dir]) {
				prefixes[dir] = append(prefixes[dir], k)
			}
		}
		if len(prefixes[dir]) == 0 {
			t.Fatalf("crash %d: directory %q kept %v, which is no prefix of at least %d of its changes from %v (exactly, as the filesystem failed: %v): %v",
				m.crashes, dir, observed[dir], d.minKeep, d.base, m.fsFailed, d.ops)
		}
	}
	// Some choice of prefixes must keep each cross-directory rename in both
	// directories or in neither.
	kept := func(dir string, k int, seq int) (bool, bool) {
		for i, op := range m.dirs[dir].ops {
			if op.seq == seq && op.cross {
				return i < k, true
			}
		}
		return false, false
	}
	for _, kr := range prefixes[""] {
		for _, kd := range prefixes["d"] {
			ok := true
			for _, op := range m.dirs[""].ops {
				if !op.cross {
					continue
				}
				inRoot, _ := kept("", kr, op.seq)
				inD, found := kept("d", kd, op.seq)
				if found && inRoot != inD {
					ok = false
					break
				}
			}
			if ok {
				return
			}
		}
	}
	t.Fatalf("crash %d: a rename across directories survived in one directory only (prefixes %v)", m.crashes, prefixes)
}

// checkFile checks one surviving file's content c.
func (m *diskModel) checkFile(t *rapid.T, name string, id int, c []byte) {
	f := m.files[id]
	fail := func(format string, args ...any) {
		t.Fatalf("crash %d: file %q (#%d): %s\ndurable(seq %d, lostFrom %d) %s\ngot %s", m.crashes, name, id,
			fmt.Sprintf(format, args...), f.durableSeq, f.lostFrom, runs(f.durable), runs(c))
	}
	// No byte at a wrong offset, of another file, or lost to a failed Sync.
	for i, v := range c {
		if v == 0 {
			continue
		}
		w, ok := m.writes[int(v)]
		switch {
		case !ok || w.file != id:
			fail("byte %d comes from write %d of another file", i, v)
		case int64(i) < w.off || int64(i) >= w.end:
			fail("byte %d comes from write %d at [%d,%d)", i, v, w.off, w.end)
		case f.lost[int(v)]:
			fail("byte %d comes from write %d, lost to a failed Sync", i, v)
		}
	}
	if m.pageCrash {
		m.checkPages(fail, f, c)
		return
	}
	// Synced bytes survive untouched.
	exact := min(int64(len(f.durable)), f.lostFrom)
	if int64(len(c)) < exact || !bytes.Equal(c[:exact], f.durable[:exact]) {
		fail("synced bytes [0,%d) altered", exact)
	}
	// Unsynced writes survive only as an in-order prefix, the last one
	// possibly torn at a sector boundary.
	var unsynced []int
	for _, ch := range f.changes {
		if ch.seq > f.durableSeq && ch.writeID != 0 && !f.lost[ch.writeID] {
			unsynced = append(unsynced, ch.writeID)
		}
	}
	appears := func(wid int) bool { return bytes.IndexByte(c, byte(wid)) >= 0 }
	last := -1
	for i, wid := range unsynced {
		if appears(wid) {
			if last != i-1 {
				fail("unsynced write %d survived without the earlier unsynced write %d", wid, unsynced[i-1])
			}
			last = i
		}
	}
	if last < 0 {
		if f.lostFrom == math.MaxInt64 && len(c) != len(f.durable) {
			fail("size %d though no unsynced write survived and the durable size is %d", len(c), len(f.durable))
		}
		return
	}
	for _, wid := range unsynced[:last] {
		w := m.writes[wid]
		if int64(len(c)) < w.end || !bytes.Equal(c[w.off:w.end], bytes.Repeat([]byte{byte(wid)}, int(w.end-w.off))) {
			fail("unsynced write %d survived partially but is not the last survivor", wid)
		}
	}
	w := m.writes[unsynced[last]]
	size := int64(len(c))
	if size <= w.off || size > w.end || size != w.end && size%sectorBytes != 0 {
		fail("the last surviving write %d [%d,%d) is cut at %d", unsynced[last], w.off, w.end, size)
	}
	if !bytes.Equal(c[w.off:], bytes.Repeat([]byte{byte(unsynced[last])}, int(size-w.off))) {
		fail("the last surviving write %d has holes", unsynced[last])
	}
}

// checkPages checks a file that survived a crash under
// DiskFaults.PageCrash: its size is the durable size or its size after one
// of the unsynced changes, and each 4 KiB page holds the page's durable
// content or its page-cache content (both zero-filled past their end).
// Where a failed Sync lost changes the page cache shows bytes that can
// never survive; checkFile's byte-origin check covers those, so pages are
// compared only below the lowest offset such a change affected.
func (m *diskModel) checkPages(fail func(string, ...any), f *modelFile, c []byte) {
	size := int64(len(c))
	sizes := []int64{int64(len(f.durable))}
	for _, ch := range f.changes {
		if ch.seq > f.durableSeq && (ch.writeID == 0 || !f.lost[ch.writeID]) {
			sizes = append(sizes, ch.size)
		}
	}
	if f.lostFrom == math.MaxInt64 && !slices.Contains(sizes, size) {
		fail("size %d is none of the durable size and the sizes after unsynced changes %v", size, sizes)
	}
	var oldPage, newPage [pageBytes]byte
	for start := int64(0); start < min(size, f.lostFrom); start += pageBytes {
		end := min(start+pageBytes, size)
		got := c[start:end]
		o, n := pageOf(oldPage[:end-start], f.durable, start), pageOf(newPage[:end-start], f.data, start)
		if end > f.lostFrom {
			got, o, n = got[:f.lostFrom-start], o[:f.lostFrom-start], n[:f.lostFrom-start]
		}
		if !bytes.Equal(got, o) && !bytes.Equal(got, n) {
			fail("page at %d is neither its durable nor its page-cache content", start)
		}
	}
}

// reset makes the observed post-crash state the model's new base.
func (m *diskModel) reset() {
	alive := map[int]bool{}
	for _, name := range m.disk.Files() {
		node := m.disk.resolve(name, false)
		id := m.ids[node]
		alive[id] = true
		f := m.files[id]
		f.data = slices.Clone(node.data)
		f.durable = slices.Clone(node.data)
		f.changes, f.durableSeq, f.lostFrom = nil, 0, math.MaxInt64
	}
	for id := range m.files { // deleting only; order does not matter
		if !alive[id] {
			delete(m.files, id)
		}
	}
	m.handles = map[int]env.File{}
	for _, dir := range modelDirs {
		node := m.disk.resolve(dir, false)
		d := m.dirs[dir]
		d.base = map[string]int{}
		for name, child := range node.entries {
			if child.isDir {
				d.base[name] = modelDirID
			} else {
				d.base[name] = m.ids[child]
			}
		}
		d.cur, d.ops, d.minKeep = maps.Clone(d.base), nil, 0
	}
	m.fsFailed = false
}

// runs renders file content compactly: "5x3 0x10" is three bytes of write
// 5 then ten zeros.
func runs(b []byte) string {
	var out bytes.Buffer
	for i := 0; i < len(b); {
		j := i
		for j < len(b) && b[j] == b[i] {
			j++
		}
		fmt.Fprintf(&out, "%dx%d ", b[i], j-i)
		i = j
	}
	return out.String()
}

func modelMust(err error) {
	if err != nil {
		panic(err)
	}
}
