// Package bad breaks every rule of the determinism contract once; the
// detguard tests check that each is reported.
package bad

import (
	crand "crypto/rand"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"
)

var mu sync.Mutex

func Goroutine() { go func() {}() }

func Channels() {
	ch := make(chan int, 1)
	ch <- 1
	<-ch
	select {}
}

func Clock() time.Duration {
	time.Sleep(time.Millisecond)
	return time.Since(time.Now())
}

func GlobalRand() int { return rand.IntN(10) }

func CryptoRand() { _, _ = crand.Read(make([]byte, 1)) }

func Files() { _, _ = os.Open("x") }

func MapOrder(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func MapDecision(m map[string]int) string {
	for k, v := range m {
		if v > 0 {
			return k
		}
	}
	return ""
}

func AnnotationWithoutReason(m map[string]int) int {
	n := 0
	//determinism:unordered
	for _, v := range m {
		n += v
	}
	return n
}

func MapIterators(m map[string]int) ([]string, int) {
	keys := slices.Collect(maps.Keys(m))
	n := 0
	for _, v := range maps.All(m) {
		n = n*31 + v
	}
	return keys, n
}

func SortedClaimNotTrue(m map[string]int) []string {
	var out []string
	//determinism:unordered sorted below
	for k := range m {
		out = append(out, k)
	}
	return out
}

func FilterWithEffect(m map[string]int, seen func(string) bool) []string {
	var out []string
	//determinism:unordered sorted below
	for k := range m {
		if seen(k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
