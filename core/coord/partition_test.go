package coord

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The hash codes are Java's ("polygenelubricants".hashCode() is
// Integer.MIN_VALUE; an emoji is two UTF-16 code units).
func TestPartitionForIsKafkas(t *testing.T) {
	require.Equal(t, int32(99162322), javaHashCode("hello"))
	require.Equal(t, int32(-1<<31), javaHashCode("polygenelubricants"))
	require.Equal(t, int32(0xD83D*31+0xDE00), javaHashCode("😀"))
	require.Equal(t, int32(99162322%50), PartitionFor("hello", 50))
	require.Equal(t, int32(0), PartitionFor("polygenelubricants", 50), "abs(MIN_VALUE) is 0 in Kafka's Utils.abs")
	h := javaHashCode("consumer-group-7")
	if h < 0 {
		h = -h
	}
	require.Equal(t, h%50, PartitionFor("consumer-group-7", 50))
}
