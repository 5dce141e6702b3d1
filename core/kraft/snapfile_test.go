package kraft

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/strata-log/strata/core/quorum"
)

func testSnapshotValues(n int) [][]byte {
	values := make([][]byte, n)
	for i := range values {
		values[i] = []byte(fmt.Sprintf("record-%d-%s", i, bytes.Repeat([]byte{'x'}, i%50)))
	}
	return values
}

func TestSnapshotFileRoundTrip(t *testing.T) {
	id := quorum.SnapshotID{EndOffset: 1234, Epoch: 7}
	for _, n := range []int{0, 1, 3, snapshotBatchMaxRecords + 5} {
		values := testSnapshotValues(n)
		data, err := encodeSnapshotFile(id, values)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeSnapshotFile(id, data)
		if err != nil {
			t.Fatalf("%d values: %v", n, err)
		}
		if len(got) != n {
			t.Fatalf("%d values decoded as %d", n, len(got))
		}
		for i := range got {
			if !bytes.Equal(got[i], values[i]) {
				t.Fatalf("value %d: %q, want %q", i, got[i], values[i])
			}
		}
		if _, err := decodeSnapshotFile(quorum.SnapshotID{EndOffset: 1234, Epoch: 8}, data); err == nil {
			t.Fatalf("%d values: decoded under another epoch", n)
		}
	}
}

// A snapshot cut anywhere (a torn or partial file) or with any bit flipped
// does not decode, and never panics.
func TestSnapshotFileDamage(t *testing.T) {
	id := quorum.SnapshotID{EndOffset: 40, Epoch: 2}
	data, err := encodeSnapshotFile(id, testSnapshotValues(40))
	if err != nil {
		t.Fatal(err)
	}
	for cut := 0; cut < len(data); cut++ {
		if _, err := decodeSnapshotFile(id, data[:cut]); err == nil {
			t.Fatalf("a file cut at %d of %d bytes decoded", cut, len(data))
		}
	}
	for bit := 0; bit < len(data)*8; bit += 7 {
		bad := bytes.Clone(data)
		bad[bit/8] ^= 1 << (bit % 8)
		if _, err := decodeSnapshotFile(id, bad); err == nil {
			// A flip in a batch's base offset or partition leader epoch
			// is outside its CRC, but those are checked against the id.
			t.Fatalf("a file with bit %d flipped decoded", bit)
		}
	}
	if _, err := decodeSnapshotFile(id, append(bytes.Clone(data), data...)); err == nil {
		t.Fatal("a file with batches after the footer decoded")
	}
}

func FuzzDecodeSnapshotFile(f *testing.F) {
	id := quorum.SnapshotID{EndOffset: 10, Epoch: 1}
	data, err := encodeSnapshotFile(id, testSnapshotValues(5))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeSnapshotFile(id, b)
	})
}

func TestSnapshotNames(t *testing.T) {
	id := quorum.SnapshotID{EndOffset: 12345, Epoch: 3}
	name := snapshotName(id)
	if name != "00000000000000012345-0000000003.checkpoint" {
		t.Fatalf("name %q", name)
	}
	if got, ok := parseSnapshotName(name); !ok || got != id {
		t.Fatalf("parse %q: %v %v", name, got, ok)
	}
	for _, bad := range []string{
		name + ".part", name + ".tmp", "00000000000000000000.log", "quorum-state",
		"0000000000000001234x-0000000003.checkpoint", "00000000000000012345-00000000003.checkpoint",
		"00000000000000000000-0000000003.checkpoint", // a snapshot ends after at least one batch
		"00000000000000012345-9999999999.checkpoint", // epoch beyond int32
	} {
		if _, ok := parseSnapshotName(bad); ok {
			t.Fatalf("parsed %q", bad)
		}
	}
}
