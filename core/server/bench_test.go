package server_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/server"
	"github.com/strata-log/strata/sim/servertest"
)

// BenchmarkProduceFetch measures the CPU of one acks=all produce of ten
// 100-byte records and one fetch of them, through the whole server in the
// simulator (client, wire, broker, partition, log; the disk is the
// simulator's, so there is no fsync wait), with metrics on and off: what
// counting costs per request, without the noise of a real disk.
func BenchmarkProduceFetch(b *testing.B) {
	for _, tc := range []struct {
		name  string
		start func(servertest.T, uint64, func(*server.Config)) *servertest.Single
	}{{"metrics=on", servertest.Start}, {"metrics=off", servertest.StartWithoutMetrics}} {
		b.Run(tc.name, func(b *testing.B) {
			x := tc.start(b, 1, nil)
			x.CreateTopic("bench", 1, nil)
			x.WaitServing("bench", 1)
			values := make([]string, 10)
			for i := range values {
				values[i] = strings.Repeat("v", 100)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				resp := x.Produce("bench", 0, values...)
				require.Zero(b, resp.ErrorCode)
				_, got := x.Fetch("bench", 0, resp.BaseOffset)
				require.Len(b, got, 10)
			}
		})
	}
}
