package sim

// traceHash is a running FNV-1a (64-bit) over (time, label) pairs. FNV is
// not cryptographic; it only has to make two different runs very unlikely to
// print the same number.
type traceHash struct{ h uint64 }

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func newTraceHash() traceHash { return traceHash{h: fnvOffset} }

func (t *traceHash) fold(at uint64, label string) {
	h := t.h
	for i := 0; i < 8; i++ {
		h ^= at & 0xff
		h *= fnvPrime
		at >>= 8
	}
	for i := 0; i < len(label); i++ {
		h ^= uint64(label[i])
		h *= fnvPrime
	}
	h ^= 0xff // separator, so ("ab","c") and ("a","bc") differ
	h *= fnvPrime
	t.h = h
}

func (t *traceHash) sum() uint64 { return t.h }

func fnv64(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// splitmix is SplitMix64's finalizer: it spreads the bits of related inputs
// (seed 1 and seed 2) into unrelated PRNG states.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
