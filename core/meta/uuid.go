package meta

import (
	"bytes"
	"encoding/base64"
	"fmt"
)

// UUID is a 128-bit identifier as Kafka uses them for topics and broker
// incarnations. The zero UUID means "none" and is never a valid topic id.
type UUID [16]byte

// String formats the UUID the way Kafka does: URL-safe base64 without
// padding (22 characters).
func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// ParseUUID parses Kafka's form of a UUID (String's).
func ParseUUID(s string) (UUID, error) {
	var u UUID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return u, fmt.Errorf("meta: uuid %q: %w", s, err)
	}
	if len(b) != len(u) {
		return u, fmt.Errorf("meta: uuid %q decodes to %d bytes, want %d", s, len(b), len(u))
	}
	copy(u[:], b)
	return u, nil
}

// IsZero reports whether u is the zero UUID.
func (u UUID) IsZero() bool { return u == UUID{} }

// compareUUID orders UUIDs bytewise; it is the key order of the image's
// topic-by-id tree.
func compareUUID(a, b UUID) int { return bytes.Compare(a[:], b[:]) }
