package coord

// PartitionFor is the partition of a coordinator's topic of n partitions
// that key (a group id, a transactional id) belongs to: Kafka's
// Utils.abs(key.hashCode()) % n, so that Kafka's tools agree on where a
// key is (abs of MinInt32 is 0 there).
func PartitionFor(key string, n int32) int32 {
	h := javaHashCode(key)
	if h == -1<<31 {
		h = 0
	}
	if h < 0 {
		h = -h
	}
	return h % n
}

// javaHashCode is Java's String.hashCode over the UTF-16 code units.
func javaHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
