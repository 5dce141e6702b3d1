package quorum

import (
	"reflect"
	"testing"
)

func logOf(epochs ...int32) *MemoryLog {
	l := NewMemoryLog()
	for i, e := range epochs {
		l.Append([]Entry{{Offset: int64(i), Epoch: e, Data: []byte{byte(i)}}})
	}
	return l
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
	// trimmed entries; epochs below it are unknown.
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
	// The log holds the snapshot's last entry: it is kept whole.
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
	l.Append([]Entry{{Offset: 1, Epoch: 3, Data: []byte("new")}})
	want := []Entry{{Offset: 0, Epoch: 1, Data: []byte{0}}, {Offset: 1, Epoch: 1, Data: []byte{1}}, {Offset: 2, Epoch: 2, Data: []byte{2}}}
	if got := c.Entries(0, 1<<20); !reflect.DeepEqual(got, want) {
		t.Fatalf("clone changed: %v", got)
	}
	// Entries returned earlier do not change when the log is rewritten.
	before := l.Entries(0, 1<<20)
	l.TruncateTo(0)
	l.Append([]Entry{{Offset: 0, Epoch: 4}})
	if before[0].Epoch != 1 {
		t.Fatalf("returned entries aliased the log: %v", before)
	}
}

func TestMemoryLogEntriesBound(t *testing.T) {
	l := logOf(1, 1, 1, 1)
	if got := l.Entries(0, 1); len(got) != 1 {
		t.Fatalf("at least one entry: got %d", len(got))
	}
	if got := l.Entries(1, 2*(1+entryOverheadBytes)); len(got) != 2 {
		t.Fatalf("two entries fit: got %d", len(got))
	}
	if got := l.Entries(4, 100); len(got) != 0 {
		t.Fatalf("at the end: got %d", len(got))
	}
}
