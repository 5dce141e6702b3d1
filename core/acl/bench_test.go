package acl

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchBindings returns n bindings over n/4 topics, a quarter of them
// PREFIXED, for principals user-0 to user-9.
func benchBindings(n int) []Binding {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]Binding, 0, n)
	for i := range n {
		b := Binding{
			Principal:    fmt.Sprintf("User:user-%d", rng.IntN(10)),
			Host:         Wildcard,
			ResourceType: kmsg.ACLResourceTypeTopic,
			ResourceName: fmt.Sprintf("topic-%d", i/4),
			PatternType:  kmsg.ACLResourcePatternTypeLiteral,
			Operation:    kmsg.ACLOperationRead,
			Permission:   kmsg.ACLPermissionTypeAllow,
		}
		if i%4 == 3 {
			b.PatternType = kmsg.ACLResourcePatternTypePrefixed
		}
		out = append(out, b)
	}
	return out
}

// BenchmarkAuthorize measures Authorize over the index against the baseline
// of a scan of every binding (naiveAuthorize), at 100 and 10,000 bindings:
// the index's cost should stay flat while the scan's grows with the count.
// It reports the scan's ns/op and the ratio scan/index.
func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		bs := benchBindings(n)
		ix, err := Index{}.Add(bs...)
		require.NoError(b, err)
		policy, err := NewPolicy(nil, false)
		require.NoError(b, err)
		req := Request{Principal: "User:user-3", Host: "10.0.0.1", Operation: kmsg.ACLOperationDescribe,
			ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: fmt.Sprintf("topic-%d-partitioned", n/8)}
		require.Equal(b, naiveAuthorize(bs, nil, false, req), ix.Authorize(policy, req))
		b.Run(fmt.Sprintf("bindings=%d", n), func(b *testing.B) {
			for b.Loop() {
				ix.Authorize(policy, req)
			}
			indexNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			const scans = 100
			start := time.Now()
			for range scans {
				naiveAuthorize(bs, nil, false, req)
			}
			scanNs := float64(time.Since(start).Nanoseconds()) / scans
			b.ReportMetric(scanNs, "scan-ns/op")
			b.ReportMetric(scanNs/indexNs, "scan/index")
		})
	}
}
