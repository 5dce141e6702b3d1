package meta

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestRecordRoundTrip: every record type, with arbitrary field values,
// decodes to what was encoded, and re-encodes to the same bytes.
func TestRecordRoundTrip(t *testing.T) {
	for _, typ := range allTypes() {
		t.Run(typ.String(), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				rec := genArbitraryRecord(typ).Draw(t, "record")
				value := EncodeRecord(nil, rec)
				got, err := DecodeRecord(value)
				require.NoError(t, err)
				require.Equal(t, rec, got)
				require.Equal(t, value, EncodeRecord(nil, got))
				h, _, err := ReadHeader(value)
				require.NoError(t, err)
				latest, _ := LatestVersion(typ)
				require.Equal(t, Header{Frame: FrameVersion, Type: typ, Version: latest}, h)
			})
		})
	}
}

// TestEncodeAppends: EncodeRecord appends and leaves dst's prefix alone.
func TestEncodeAppends(t *testing.T) {
	prefix := []byte("prefix")
	out := EncodeRecord(bytes.Clone(prefix), &NoOpRecord{})
	require.Equal(t, prefix, out[:len(prefix)])
	rec, err := DecodeRecord(out[len(prefix):])
	require.NoError(t, err)
	require.Equal(t, &NoOpRecord{}, rec)
}

// TestGoldenEncoding pins the wire format: a change here breaks every
// existing metadata log and snapshot.
func TestGoldenEncoding(t *testing.T) {
	id := UUID{0: 1, 15: 2}
	cases := []struct {
		rec  Record
		want string
	}{
		{&NoOpRecord{}, "01" + "14" + "00" + "00"},
		{&TopicRecord{Name: "t", TopicID: id}, "01" + "02" + "00" + "0274" + "01000000000000000000000000000002" + "00"},
		{&FenceBrokerRecord{BrokerID: 1, BrokerEpoch: -1}, "01" + "07" + "00" + "02" + "01" + "00"},
		// PartitionChange: isr (tag 0) = [1,2], leader (tag 1) = 2.
		{&PartitionChangeRecord{TopicID: id, Partition: 3, ISR: []int32{1, 2}, Leader: new(int32(2))},
			"01" + "05" + "01" + "01000000000000000000000000000002" + "06" + "02" + "00" + "03" + "030204" + "01" + "01" + "04"},
		{&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "t", Key: "k", Value: nil},
			"01" + "04" + "00" + "04" + "0274" + "026b" + "00" + "00"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, hex.EncodeToString(EncodeRecord(nil, c.rec)), "%v", c.rec)
	}
}

// TestOlderVersions: version 0 of PartitionRecord and PartitionChangeRecord
// decodes (ELR empty), and cannot carry an ELR.
func TestOlderVersions(t *testing.T) {
	id := UUID{1}
	p := &PartitionRecord{TopicID: id, Partition: 1, Replicas: []int32{1, 2}, ISR: []int32{1},
		RemovingReplicas: []int32{}, AddingReplicas: []int32{}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9}
	v0, err := EncodeRecordVersion(nil, p, 0)
	require.NoError(t, err)
	h, _, err := ReadHeader(v0)
	require.NoError(t, err)
	require.Equal(t, int16(0), h.Version)
	got, err := DecodeRecord(v0)
	require.NoError(t, err)
	require.Equal(t, p, got)
	require.Less(t, len(v0), len(EncodeRecord(nil, p)), "v0 has no ELR arrays")

	withELR := *p
	withELR.ISR, withELR.Leader, withELR.ELR = []int32{1}, 1, []int32{2}
	_, err = EncodeRecordVersion(nil, &withELR, 0)
	require.ErrorIs(t, err, ErrFieldNotInVersion)

	change := &PartitionChangeRecord{TopicID: id, Partition: 1, ISR: []int32{1}, Leader: new(int32(1))}
	v0, err = EncodeRecordVersion(nil, change, 0)
	require.NoError(t, err)
	got, err = DecodeRecord(v0)
	require.NoError(t, err)
	require.Equal(t, change, got)
	change.ELR = []int32{}
	_, err = EncodeRecordVersion(nil, change, 0)
	require.ErrorIs(t, err, ErrFieldNotInVersion, "even an empty ELR is a change version 0 cannot carry")

	// A version-0 PartitionChange that somehow carries tag 6 has it skipped
	// as an unknown tag: in version 0, tag 6 means nothing.
	body := EncodeRecord(nil, &PartitionChangeRecord{TopicID: id, Partition: 1, ELR: []int32{3}})
	body[2] = 0 // rewrite the version byte
	got, err = DecodeRecord(body)
	require.NoError(t, err)
	require.Nil(t, got.(*PartitionChangeRecord).ELR)

	_, err = EncodeRecordVersion(nil, p, 2)
	require.ErrorIs(t, err, ErrUnsupportedVersion)
	_, err = EncodeRecordVersion(nil, p, -1)
	require.ErrorIs(t, err, ErrUnsupportedVersion)
}

// TestDecodeErrors: each kind of bad input gets its sentinel, never a panic.
func TestDecodeErrors(t *testing.T) {
	valid := EncodeRecord(nil, &TopicRecord{Name: "t", TopicID: UUID{1}})
	withTag := func(tags ...[]byte) []byte {
		b := EncodeRecord(nil, &NoOpRecord{})
		b = b[:len(b)-1]
		b = append(b, byte(len(tags)))
		for _, tag := range tags {
			b = append(b, tag...)
		}
		return b
	}
	cases := []struct {
		name  string
		value []byte
		want  error
	}{
		{"empty", nil, ErrCorrupt},
		{"header only frame", []byte{1}, ErrCorrupt},
		{"frame version 0", []byte{0, 20, 0, 0}, ErrUnsupportedVersion},
		{"frame version 2", []byte{2, 20, 0, 0}, ErrUnsupportedVersion},
		{"unknown type", []byte{1, 10, 0, 0}, ErrUnknownRecordType},
		{"type beyond uint16", []byte{1, 0x80, 0x80, 0x04, 0, 0}, ErrUnknownRecordType},
		{"too new version", []byte{1, 20, 1, 0}, ErrUnsupportedVersion},
		{"too new partition", []byte{1, 3, 2}, ErrUnsupportedVersion},
		{"truncated body", valid[:len(valid)-3], ErrCorrupt},
		{"trailing bytes", append(bytes.Clone(valid), 0), ErrCorrupt},
		{"missing tag section", []byte{1, 20, 0}, ErrCorrupt},
		{"null string", []byte{1, 2, 0, 0}, ErrCorrupt},
		{"string longer than input", []byte{1, 2, 0, 0x7f, 'a'}, ErrCorrupt},
		{"bad bool", append(EncodeRecord(nil, &RegisterBrokerRecord{})[:3+1+16+1+1+1+1], 2, 0, 0), ErrCorrupt},
		{"tags out of order", withTag([]byte{1, 0}, []byte{0, 0}), ErrCorrupt},
		{"duplicate tag", withTag([]byte{1, 0}, []byte{1, 0}), ErrCorrupt},
		{"tag longer than input", withTag([]byte{1, 5, 0}), ErrCorrupt},
		{"tag count beyond input", []byte{1, 20, 0, 0x7f}, ErrCorrupt},
		{"overlong varint", []byte{1, 8, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0}, ErrCorrupt},
		{"leader tag with trailing bytes",
			append(EncodeRecord(nil, &PartitionChangeRecord{})[:3+16+1], 1, 1, 2, 2, 0), ErrCorrupt},
		{"int16 out of range", append(EncodeRecord(nil, &FeatureLevelRecord{Name: "f"})[:5], 0x80, 0x80, 0x04, 0), ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeRecord(c.value)
			require.ErrorIs(t, err, c.want)
		})
	}
}

// TestUnknownTagsSkipped: a tag this build does not know is skipped, which
// is how fields that older readers may ignore are added.
func TestUnknownTagsSkipped(t *testing.T) {
	b := EncodeRecord(nil, &TopicRecord{Name: "t", TopicID: UUID{1}})
	b = b[:len(b)-1]
	b = append(b, 2, 9, 2, 0xaa, 0xbb, 40, 0)
	rec, err := DecodeRecord(b)
	require.NoError(t, err)
	require.Equal(t, &TopicRecord{Name: "t", TopicID: UUID{1}}, rec)
}

func TestRecordTypeNames(t *testing.T) {
	require.Equal(t, "PartitionChangeRecord", TypePartitionChange.String())
	require.Equal(t, "RecordType(99)", RecordType(99).String())
	_, ok := LatestVersion(99)
	require.False(t, ok)
	for _, typ := range allTypes() {
		rec := recordSpecs[typ].new()
		require.Equal(t, typ, rec.Type())
		require.NotContains(t, rec.String(), "0x", "String must not print pointers")
	}
	require.Equal(t, "PartitionChangeRecord{topic=AQAAAAAAAAAAAAAAAAAAAA partition=2 leader=-1 isr=[]}",
		(&PartitionChangeRecord{TopicID: UUID{1}, Partition: 2, Leader: new(NoLeader), ISR: []int32{}}).String())
	require.True(t, errors.Is(ErrUnknownTopic, ErrInvalidRecord))
}
