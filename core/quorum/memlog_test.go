package quorum

import (
	"reflect"
	"testing"
)

// logOf returns a log of one-record batches with these epochs.
func logOf(epochs ...int32) *MemoryLog {
	l := NewMemoryLog()
	for i, e := range epochs {
		l.Append([]Batch{{BaseOffset: int64(i), Epoch: e, Records: [][]byte{{byte(i)}}}})
	}
	return l
}

// recs returns n one-byte records.
func recs(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte{byte(i)}
	}
	return out
}

func TestMemoryLogEndOffsetForEpoch(t *testing.T) {
	l := logOf(1, 1, 3, 3, 3, 6) // offsets 0..5
	for _, c := range []struct {
		epoch int32
		want  OffsetAndEpoch
		ok    bool
	}{
		{0, OffsetAndEpoch{Offset: 0, Epoch: 0}, true},
		{1, OffsetAndEpoch{Offset: 2, Epoch: 1}, true},
		{2, OffsetAndEpoch{Offset: 2, Epoch: 1}, true},
		{3, OffsetAndEpoch{Offset: 5, Epoch: 3}, true},
		{5, OffsetAndEpoch{Offset: 5, Epoch: 3}, true},
		{6, OffsetAndEpoch{Offset: 6, Epoch: 6}, true},
		{9, OffsetAndEpoch{Offset: 6, Epoch: 6}, true},
	} {
		got, ok := l.EndOffsetForEpoch(c.epoch)
		if got != c.want || ok != c.ok {
			t.Errorf("EndOffsetForEpoch(%d) = %v, %v; want %v, %v", c.epoch, got, ok, c.want, c.ok)
		}
	}

	// Trimmed to a snapshot at 3@3: the start epoch stands in for the
	// trimmed batches; epochs below it are unknown.
	l.SaveSnapshot(SnapshotID{EndOffset: 3, Epoch: 3}, []byte("s"))
	if err := l.InstallSnapshot(SnapshotID{EndOffset: 3, Epoch: 3}); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 0 {
		t.Fatalf("install trimmed the log: start %d", l.StartOffset())
	}
	l.TrimPrefix(3)
	if l.StartOffset() != 3 || l.EndOffset() != (OffsetAndEpoch{Offset: 6, Epoch: 6}) {
		t.Fatalf("after trim: start %d end %v", l.StartOffset(), l.EndOffset())
	}
	if got, ok := l.EndOffsetForEpoch(1); ok {
		t.Errorf("epoch 1 after trim: got %v, want not ok", got)
	}
	if got, _ := l.EndOffsetForEpoch(3); got != (OffsetAndEpoch{Offset: 5, Epoch: 3}) {
		t.Errorf("epoch 3 after trim: got %v", got)
	}
}

func TestMemoryLogInstallSnapshot(t *testing.T) {
	// The log holds the snapshot's last batch: it is kept whole.
	l := logOf(1, 1, 2, 2)
	id := SnapshotID{EndOffset: 3, Epoch: 2}
	l.SaveSnapshot(id, []byte("snap"))
	if err := l.InstallSnapshot(id); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 0 || l.EndOffset().Offset != 4 {
		t.Fatalf("kept log: [%d, %d)", l.StartOffset(), l.EndOffset().Offset)
	}
	// A snapshot the log diverges from empties it.
	l2 := logOf(1, 1, 1, 1)
	if err := l2.WriteSnapshotChunk(id, 0, []byte("sn")); err != nil {
		t.Fatal(err)
	}
	if err := l2.WriteSnapshotChunk(id, 2, []byte("ap")); err != nil {
		t.Fatal(err)
	}
	if err := l2.WriteSnapshotChunk(id, 1, []byte("x")); err == nil {
		t.Fatal("out-of-order chunk accepted")
	}
	if err := l2.InstallSnapshot(id); err != nil {
		t.Fatal(err)
	}
	if l2.StartOffset() != 3 || l2.EndOffset() != (OffsetAndEpoch{Offset: 3, Epoch: 2}) {
		t.Fatalf("reset log: start %d end %v", l2.StartOffset(), l2.EndOffset())
	}
	if _, data, _ := l2.SnapshotData(); string(data) != "snap" {
		t.Fatalf("snapshot data %q", data)
	}
	if chunk, size, err := l2.ReadSnapshot(id, 1, 2); err != nil || string(chunk) != "na" || size != 4 {
		t.Fatalf("ReadSnapshot = %q, %d, %v", chunk, size, err)
	}
	if err := l2.InstallSnapshot(SnapshotID{EndOffset: 2, Epoch: 1}); err == nil {
		t.Fatal("older snapshot installed")
	}
}

func TestMemoryLogCloneIsIndependent(t *testing.T) {
	l := logOf(1, 1, 2)
	c := l.Clone()
	l.TruncateTo(1)
	l.Append([]Batch{{BaseOffset: 1, Epoch: 3, Records: [][]byte{[]byte("new")}}})
	want := []Batch{
		{BaseOffset: 0, Epoch: 1, Records: [][]byte{{0}}},
		{BaseOffset: 1, Epoch: 1, Records: [][]byte{{1}}},
		{BaseOffset: 2, Epoch: 2, Records: [][]byte{{2}}},
	}
	if got := c.Batches(0, 1<<20); !reflect.DeepEqual(got, want) {
		t.Fatalf("clone changed: %v", got)
	}
	// Batches returned earlier do not change when the log is rewritten.
	before := l.Batches(0, 1<<20)
	l.TruncateTo(0)
	l.Append([]Batch{{BaseOffset: 0, Epoch: 4, Records: recs(1)}})
	if before[0].Epoch != 1 {
		t.Fatalf("returned batches aliased the log: %v", before)
	}
}

func TestMemoryLogBatchesBound(t *testing.T) {
	l := logOf(1, 1, 1, 1)
	one := Batch{Records: recs(1)}.Size()
	if got := l.Batches(0, 1); len(got) != 1 {
		t.Fatalf("at least one batch: got %d", len(got))
	}
	if got := l.Batches(1, 2*one); len(got) != 2 {
		t.Fatalf("two batches fit: got %d", len(got))
	}
	if got := l.Batches(4, 100); len(got) != 0 {
		t.Fatalf("at the end: got %d", len(got))
	}
}

// Batches are units: reads return them whole, positions inside one are
// rounded down to its base, and truncating inside one is a broken
// invariant.
func TestMemoryLogBatchesAreWhole(t *testing.T) {
	l := NewMemoryLog()
	l.Append([]Batch{
		{BaseOffset: 0, Epoch: 1, Kind: BatchLeaderChange, Records: recs(1)},
		{BaseOffset: 1, Epoch: 1, Records: recs(4)}, // [1, 5)
		{BaseOffset: 5, Epoch: 2, Records: recs(2)}, // [5, 7)
	})
	if end := l.EndOffset(); end != (OffsetAndEpoch{Offset: 7, Epoch: 2}) {
		t.Fatalf("end %v", end)
	}
	for offset, want := range []int64{0, 1, 1, 1, 1, 5, 5, 7} {
		if got := l.FloorBatchBoundary(int64(offset)); got != want {
			t.Errorf("FloorBatchBoundary(%d) = %d, want %d", offset, got, want)
		}
	}
	// A batch larger than maxBytes still comes whole, and alone.
	if got := l.Batches(1, 1); len(got) != 1 || len(got[0].Records) != 4 {
		t.Fatalf("oversized batch: %v", got)
	}
	if got, _ := l.EndOffsetForEpoch(1); got != (OffsetAndEpoch{Offset: 5, Epoch: 1}) {
		t.Fatalf("end of epoch 1: %v", got)
	}
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"TruncateTo", func() { l.Clone().TruncateTo(3) }},
		{"Batches", func() { l.Batches(2, 100) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s inside a batch did not panic", c.name)
				}
			}()
			c.f()
		}()
	}
	// A snapshot that ends inside a batch does not keep the log.
	inside := SnapshotID{EndOffset: 3, Epoch: 1}
	c := l.Clone()
	c.SaveSnapshot(inside, []byte("s"))
	if err := c.InstallSnapshot(inside); err != nil {
		t.Fatal(err)
	}
	if c.StartOffset() != 3 || c.EndOffset().Offset != 3 {
		t.Fatalf("snapshot inside a batch kept the log: [%d, %d)", c.StartOffset(), c.EndOffset().Offset)
	}
	// One at a batch end does; trimming to it drops whole batches.
	at := SnapshotID{EndOffset: 5, Epoch: 1}
	l.SaveSnapshot(at, []byte("s"))
	if err := l.InstallSnapshot(at); err != nil {
		t.Fatal(err)
	}
	l.TrimPrefix(5)
	if l.StartOffset() != 5 || l.EndOffset().Offset != 7 || len(l.Batches(5, 1<<20)) != 1 {
		t.Fatalf("after trim: [%d, %d)", l.StartOffset(), l.EndOffset().Offset)
	}
}
