package meta

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kbin"
)

// FrameVersion is the version of the header in front of every record value.
// It changes only if the header itself changes; record evolution uses the
// per-type version inside it.
const FrameVersion = 1

// recordSpec describes one record type: its Kafka-style name, the newest
// body version this build writes and reads (every version from 0 up to it is
// readable), and a constructor for decoding.
type recordSpec struct {
	name       string
	maxVersion int16
	new        func() Record
}

// recordSpecs is the one table of record types and versions. Bump a
// maxVersion, and teach the type's appendBody/readBody the new version, when
// a record gains a field an older reader must not ignore; a field an older
// reader may ignore goes into the tagged-field section instead and needs no
// bump (see the package documentation).
var recordSpecs = map[RecordType]recordSpec{
	TypeRegisterBroker:            {"RegisterBrokerRecord", 0, func() Record { return new(RegisterBrokerRecord) }},
	TypeUnregisterBroker:          {"UnregisterBrokerRecord", 0, func() Record { return new(UnregisterBrokerRecord) }},
	TypeTopic:                     {"TopicRecord", 0, func() Record { return new(TopicRecord) }},
	TypePartition:                 {"PartitionRecord", 1, func() Record { return new(PartitionRecord) }},
	TypeConfig:                    {"ConfigRecord", 0, func() Record { return new(ConfigRecord) }},
	TypePartitionChange:           {"PartitionChangeRecord", 1, func() Record { return new(PartitionChangeRecord) }},
	TypeFenceBroker:               {"FenceBrokerRecord", 0, func() Record { return new(FenceBrokerRecord) }},
	TypeUnfenceBroker:             {"UnfenceBrokerRecord", 0, func() Record { return new(UnfenceBrokerRecord) }},
	TypeRemoveTopic:               {"RemoveTopicRecord", 0, func() Record { return new(RemoveTopicRecord) }},
	TypeFeatureLevel:              {"FeatureLevelRecord", 0, func() Record { return new(FeatureLevelRecord) }},
	TypeProducerIDs:               {"ProducerIdsRecord", 0, func() Record { return new(ProducerIDsRecord) }},
	TypeBrokerRegistrationChange:  {"BrokerRegistrationChangeRecord", 0, func() Record { return new(BrokerRegistrationChangeRecord) }},
	TypeNoOp:                      {"NoOpRecord", 0, func() Record { return new(NoOpRecord) }},
	TypeAccessControlEntry:        {"AccessControlEntryRecord", 0, func() Record { return new(AccessControlEntryRecord) }},
	TypeRemoveAccessControlEntry:  {"RemoveAccessControlEntryRecord", 0, func() Record { return new(RemoveAccessControlEntryRecord) }},
	TypeUserScramCredential:       {"UserScramCredentialRecord", 0, func() Record { return new(UserScramCredentialRecord) }},
	TypeRemoveUserScramCredential: {"RemoveUserScramCredentialRecord", 0, func() Record { return new(RemoveUserScramCredentialRecord) }},
	TypeClientQuota:               {"ClientQuotaRecord", 0, func() Record { return new(ClientQuotaRecord) }},
}

// LatestVersion returns the newest version of t that this build writes, and
// false for an unknown type.
func LatestVersion(t RecordType) (int16, bool) {
	s, ok := recordSpecs[t]
	return s.maxVersion, ok
}

// Header is the frame in front of every record value.
type Header struct {
	// Frame is the frame version (FrameVersion).
	Frame uint32
	// Type is the record type.
	Type RecordType
	// Version is the version of the body that follows.
	Version int16
}

// EncodeRecord appends rec's value bytes, at the newest version of its type,
// to dst and returns the extended slice. The output depends only on rec.
//
// The value is a header of three unsigned varints (frame version, record
// type, record version) followed by the body.
func EncodeRecord(dst []byte, rec Record) []byte {
	v, ok := LatestVersion(rec.Type())
	if !ok {
		panic(fmt.Sprintf("meta: record type %v has no spec", rec.Type()))
	}
	out, err := EncodeRecordVersion(dst, rec, v)
	if err != nil {
		// The newest version carries every field.
		panic(fmt.Sprintf("meta: encoding %v at its newest version: %v", rec, err))
	}
	return out
}

// EncodeRecordVersion appends rec's value bytes at the given version of its
// type. It fails with ErrUnsupportedVersion for a version this build does not
// know, and with ErrFieldNotInVersion when rec sets a field the version
// cannot carry. Writers use it to stay at a version every reader in the
// cluster understands (the feature level decides which).
func EncodeRecordVersion(dst []byte, rec Record, version int16) ([]byte, error) {
	spec, ok := recordSpecs[rec.Type()]
	if !ok {
		return dst, fmt.Errorf("%w: %v", ErrUnknownRecordType, rec.Type())
	}
	if version < 0 || version > spec.maxVersion {
		return dst, fmt.Errorf("%w: %s version %d (this build writes 0..%d)", ErrUnsupportedVersion, spec.name, version, spec.maxVersion)
	}
	start := len(dst)
	dst = appendHeader(dst, rec.Type(), version)
	out, err := rec.appendBody(dst, version)
	if err != nil {
		return dst[:start], fmt.Errorf("%s version %d: %w", spec.name, version, err)
	}
	return out, nil
}

// appendHeader appends the frame of a record value.
func appendHeader(dst []byte, t RecordType, version int16) []byte {
	dst = kbin.AppendUvarint(dst, FrameVersion)
	dst = kbin.AppendUvarint(dst, uint32(t))
	return kbin.AppendUvarint(dst, uint32(version))
}

// ReadHeader decodes the frame of a record value and returns it with the
// body bytes that follow. It fails with ErrCorrupt on a truncated header,
// ErrUnsupportedVersion on an unknown frame version or a record version newer
// than this build reads, and ErrUnknownRecordType on an unknown type.
func ReadHeader(value []byte) (Header, []byte, error) {
	r := kbin.Reader{Src: value}
	frame := r.Uvarint()
	typ := r.Uvarint()
	version := r.Uvarint()
	if !r.Ok() {
		return Header{}, nil, corrupt("truncated header")
	}
	if frame != FrameVersion {
		return Header{}, nil, fmt.Errorf("%w: frame version %d (this build reads %d)", ErrUnsupportedVersion, frame, FrameVersion)
	}
	spec, ok := recordSpecs[RecordType(typ)]
	if typ > math.MaxUint16 || !ok {
		return Header{}, nil, fmt.Errorf("%w: %d", ErrUnknownRecordType, typ)
	}
	if version > uint32(spec.maxVersion) {
		return Header{}, nil, fmt.Errorf("%w: %s version %d (this build reads 0..%d)", ErrUnsupportedVersion, spec.name, version, spec.maxVersion)
	}
	return Header{Frame: frame, Type: RecordType(typ), Version: int16(version)}, r.Src, nil
}

// DecodeRecord decodes one record value, of any version from 0 to the
// newest this build knows; fields a version lacks decode as their zero
// value. It never panics: bad input gets ErrCorrupt, ErrUnknownRecordType or
// ErrUnsupportedVersion. The record does not alias value.
func DecodeRecord(value []byte) (Record, error) {
	h, body, err := ReadHeader(value)
	if err != nil {
		return nil, err
	}
	rec := recordSpecs[h.Type].new()
	r := newReader(body)
	rec.readBody(r, h.Version)
	if err := r.finish(); err != nil {
		return nil, fmt.Errorf("%v version %d: %w", h.Type, h.Version, err)
	}
	if n := len(r.kr.Src); n != 0 {
		return nil, fmt.Errorf("%v version %d: %w", h.Type, h.Version, corrupt("%d trailing bytes", n))
	}
	return rec, nil
}
