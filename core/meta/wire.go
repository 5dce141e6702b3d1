package meta

import (
	"github.com/twmb/franz-go/pkg/kbin"
)

// The primitives of a record body. Integers are zigzag varints (ids, epochs
// and counts are small, so most take one byte), counts and lengths are
// unsigned varints, strings and arrays are KIP-482 compact (length+1, with 0
// meaning null where a field is nullable), UUIDs are 16 raw bytes, bools one
// byte that must be 0 or 1.

func appendInt16(b []byte, v int16) []byte { return kbin.AppendVarint(b, int32(v)) }
func appendInt32(b []byte, v int32) []byte { return kbin.AppendVarint(b, v) }
func appendInt64(b []byte, v int64) []byte { return kbin.AppendVarlong(b, v) }
func appendUint16(b []byte, v uint16) []byte {
	return kbin.AppendUvarint(b, uint32(v))
}
func appendUUID(b []byte, u UUID) []byte     { return kbin.AppendUuid(b, u) }
func appendBool(b []byte, v bool) []byte     { return kbin.AppendBool(b, v) }
func appendString(b []byte, s string) []byte { return kbin.AppendCompactString(b, s) }

func appendNullableString(b []byte, s *string) []byte {
	return kbin.AppendCompactNullableString(b, s)
}

func appendBytes(b []byte, v []byte) []byte    { return kbin.AppendCompactBytes(b, v) }
func appendFloat64(b []byte, v float64) []byte { return kbin.AppendFloat64(b, v) }

// appendIDs appends a non-nullable list of broker ids.
func appendIDs(b []byte, ids []int32) []byte {
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendVarint(b, id)
	}
	return b
}

// appendTagged appends one tagged field: its tag, its size, its payload.
func appendTagged(b []byte, tag uint32, payload []byte) []byte {
	b = kbin.AppendUvarint(b, tag)
	b = kbin.AppendUvarint(b, uint32(len(payload)))
	return append(b, payload...)
}

// appendNoTags appends an empty tagged-field section.
func appendNoTags(b []byte) []byte { return kbin.AppendUvarint(b, 0) }

// reader decodes a body. Like kbin.Reader, whose truncation tracking it
// reuses, it never panics and returns zero values once it failed; the first
// failure is kept in err.
type reader struct {
	kr  kbin.Reader
	err error
}

func newReader(b []byte) *reader { return &reader{kr: kbin.Reader{Src: b}} }

// fail records the first semantic failure and stops further reads.
func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = corrupt(format, args...)
	}
	r.kr.Src = nil
}

// finish returns the first failure, including truncation.
func (r *reader) finish() error {
	if r.err != nil {
		return r.err
	}
	if !r.kr.Ok() {
		return corrupt("truncated")
	}
	return nil
}

func (r *reader) int32() int32 { return r.kr.Varint() }
func (r *reader) int64() int64 { return r.kr.Varlong() }

func (r *reader) int16() int16   { return narrow[int16](r, r.kr.Varint()) }
func (r *reader) int8() int8     { return narrow[int8](r, r.kr.Varint()) }
func (r *reader) uint16() uint16 { return narrow[uint16](r, r.kr.Uvarint()) }

// narrow returns the varint v as a T, or fails the read when a T cannot
// hold it.
func narrow[T, V int8 | int16 | uint16 | int32 | uint32](r *reader, v V) T {
	if V(T(v)) != v {
		var zero T
		r.fail("%T out of range: %d", zero, v)
		return 0
	}
	return T(v)
}

func (r *reader) uuid() UUID { return r.kr.Uuid() }

func (r *reader) bool() bool {
	b := r.kr.Int8()
	if b != 0 && b != 1 {
		r.fail("bool byte %d", b)
		return false
	}
	return b == 1
}

// length reads a compact length (stored as n+1) and reports null (stored
// 0). Every element or byte takes at least one byte, so a length above what
// remains is corrupt; this bounds every allocation by the input size.
func (r *reader) length() (n int, null bool) {
	u := r.kr.Uvarint()
	if !r.kr.Ok() || r.err != nil {
		return 0, false
	}
	if u == 0 {
		return 0, true
	}
	n = int(u) - 1
	if n > len(r.kr.Src) {
		r.fail("length %d exceeds the %d bytes left", n, len(r.kr.Src))
		return 0, false
	}
	return n, false
}

func (r *reader) string() string {
	n, null := r.length()
	if null {
		r.fail("null string in a non-nullable field")
		return ""
	}
	return string(r.kr.Span(n))
}

func (r *reader) nullableString() *string {
	n, null := r.length()
	if null {
		return nil
	}
	s := string(r.kr.Span(n))
	return &s
}

// bytes reads non-nullable bytes, copied out of the input; empty bytes
// decode as a non-nil empty slice.
func (r *reader) bytes() []byte {
	n, null := r.length()
	if null {
		r.fail("null bytes in a non-nullable field")
		return nil
	}
	return append([]byte{}, r.kr.Span(n)...)
}

// float64 reads an IEEE 754 double, big-endian. NaN is refused: no record
// carries one, and it would not equal itself after a round trip.
func (r *reader) float64() float64 {
	v := r.kr.Float64()
	if v != v {
		r.fail("NaN float64")
		return 0
	}
	return v
}

// ids reads a non-nullable list of broker ids; an empty list decodes as a
// non-nil empty slice, so that "set to empty" survives a round trip.
func (r *reader) ids() []int32 {
	n, null := r.length()
	if null {
		r.fail("null array in a non-nullable field")
		return nil
	}
	if r.err != nil || !r.kr.Ok() {
		return nil
	}
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = r.kr.Varint()
	}
	return ids
}

// arrayLen reads the element count of a non-nullable array of structs.
func (r *reader) arrayLen() int {
	n, null := r.length()
	if null {
		r.fail("null array in a non-nullable field")
		return 0
	}
	return n
}

// tags reads a tagged-field section. known is called with the tag and a
// reader over exactly its payload, and reports whether it knew the tag; a
// known field must consume its payload exactly. Unknown tags are skipped:
// that is what lets a newer writer add a field an older reader may ignore.
// Tags must be strictly ascending, so a section has one encoding.
func (r *reader) tags(known func(tag uint32, payload *reader) bool) {
	count := r.kr.Uvarint()
	if uint64(count) > uint64(len(r.kr.Src)) {
		r.fail("%d tagged fields in %d bytes", count, len(r.kr.Src))
		return
	}
	last := int64(-1)
	for range count {
		tag := r.kr.Uvarint()
		size := r.kr.Uvarint()
		if r.err != nil || !r.kr.Ok() {
			return
		}
		if int64(tag) <= last {
			r.fail("tag %d after tag %d", tag, last)
			return
		}
		last = int64(tag)
		if uint64(size) > uint64(len(r.kr.Src)) {
			r.fail("tagged field %d of %d bytes, %d left", tag, size, len(r.kr.Src))
			return
		}
		payload := newReader(r.kr.Span(int(size)))
		if known == nil || !known(tag, payload) {
			continue
		}
		if err := payload.finish(); err != nil {
			r.fail("tagged field %d: %v", tag, err)
			return
		}
		if len(payload.kr.Src) != 0 {
			r.fail("tagged field %d: %d trailing bytes", tag, len(payload.kr.Src))
			return
		}
	}
}

// appendArrayLen appends the compact length of a non-nullable array.
func appendArrayLen(b []byte, n int) []byte { return kbin.AppendCompactArrayLen(b, n) }

// appendArrayCount appends the number of fields of a tagged-field section.
func appendArrayCount(b []byte, n int) []byte { return kbin.AppendUvarint(b, uint32(n)) }
