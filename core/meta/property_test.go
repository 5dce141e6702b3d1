package meta

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestReplayGroupingsAgree: replaying a valid sequence one delta per record,
// all in one delta, or in random chunks gives equal images with equal
// digests, and every image keeps the invariants.
func TestReplayGroupingsAgree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs, oneByOne := genValidRecords(t, rapid.IntRange(0, 150).Draw(t, "candidates"))
		last := positionOf(len(recs) - 1)
		if len(recs) == 0 {
			last = EmptyPosition
		}

		bulk := Empty().NewDelta()
		for _, r := range recs {
			require.NoError(t, bulk.Replay(r))
		}
		all := bulk.Apply(last)

		chunked := Empty()
		for i := 0; i < len(recs); {
			n := rapid.IntRange(1, 10).Draw(t, "chunk")
			d := chunked.NewDelta()
			for ; n > 0 && i < len(recs); n, i = n-1, i+1 {
				require.NoError(t, d.Replay(recs[i]))
			}
			chunked = d.Apply(positionOf(i - 1))
		}

		require.Empty(t, Diff(oneByOne, all))
		require.Empty(t, Diff(oneByOne, chunked))
		require.True(t, Equal(all, chunked))
		require.Equal(t, oneByOne.Digest(), all.Digest())
		require.Equal(t, oneByOne.Digest(), chunked.Digest())
		checkInvariants(t, oneByOne)
		checkInvariants(t, all)
	})
}

// TestImagesAreImmutable: building later images never changes earlier
// ones, whose snapshots stay byte-identical.
func TestImagesAreImmutable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		img := Empty()
		type frozen struct {
			img      *Image
			snapshot [][]byte
			digest   Digest
		}
		var history []frozen
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			d := img.NewDelta()
			_ = d.Replay(genCandidate(t, img))
			_ = d.Replay(genCandidate(t, img))
			img = d.Apply(positionOf(i))
			history = append(history, frozen{img, EncodeSnapshot(img), img.Digest()})
		}
		for _, h := range history {
			require.Equal(t, h.snapshot, EncodeSnapshot(h.img))
			require.Equal(t, h.digest, h.img.Digest())
		}
	})
}

// TestSnapshotRoundTrip: an image's snapshot, replayed or decoded, gives an
// equal image, whose own snapshot is byte-identical.
func TestSnapshotRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		_, img := genValidRecords(t, rapid.IntRange(0, 150).Draw(t, "candidates"))

		loaded, err := LoadSnapshot(img.Position(), img.SnapshotRecords())
		require.NoError(t, err)
		require.Empty(t, Diff(img, loaded))
		require.Equal(t, img.Digest(), loaded.Digest())

		values := EncodeSnapshot(img)
		decoded, err := DecodeSnapshot(img.Position(), values)
		require.NoError(t, err)
		require.Empty(t, Diff(img, decoded))
		require.Equal(t, values, EncodeSnapshot(decoded))
		checkInvariants(t, decoded)
	})
}

// TestDigestDistinguishes: images that differ have different digests, and
// the digest covers the position.
func TestDigestDistinguishes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		_, img := genValidRecords(t, rapid.IntRange(1, 40).Draw(t, "candidates"))
		d := img.NewDelta()
		if err := d.Replay(genCandidate(t, img)); err != nil || d.Len() == 0 {
			t.Skip("no valid change drawn")
		}
		next := d.Apply(img.Position())
		require.Equal(t, Equal(img, next), img.Digest() == next.Digest())
		moved := img.NewDelta().Apply(Position{Offset: img.Position().Offset + 1, Epoch: img.Position().Epoch})
		require.NotEqual(t, img.Digest(), moved.Digest())
		require.False(t, Equal(img, moved))
	})
}

// TestReplayArbitraryRecords: any record, valid or not, replays without a
// panic; a refused one is a *ReplayError, an accepted one keeps every
// invariant.
func TestReplayArbitraryRecords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		_, img := genValidRecords(t, rapid.IntRange(0, 30).Draw(t, "candidates"))
		d := img.NewDelta()
		for range rapid.IntRange(1, 20).Draw(t, "records") {
			var rec Record
			if rapid.Bool().Draw(t, "arbitrary") {
				rec = genAnyRecord().Draw(t, "record")
			} else {
				rec = genCandidate(t, img)
			}
			if err := d.Replay(rec); err != nil {
				var re *ReplayError
				require.True(t, errors.As(err, &re), "%v", err)
				require.ErrorIs(t, err, ErrInvalidRecord)
			}
		}
		checkInvariants(t, d.Apply(img.Position()))
	})
}
