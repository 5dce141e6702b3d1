package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/log"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
)

// A broker whose start-up scrub finds a damaged partition log registers
// with PreviousBrokerEpoch -1 (as a broker whose disk was replaced), so
// that the controller stops counting it as holding every committed
// record; one whose logs are intact registers with the epoch its data
// directory remembers. The metadata log is not scrubbed.
func TestDamagedLogRegistersAsReplacedDisk(t *testing.T) {
	for _, damaged := range []bool{false, true} {
		t.Run(fmt.Sprintf("damaged %v", damaged), func(t *testing.T) {
			s := sim.New(sim.Config{Seed: 7})
			var e env.Env
			var srv *Server
			var reg *metrics.Registry
			withServer := false
			p := s.AddProcess("n1", func(pe env.Env) {
				e, srv = pe, nil
				if !withServer {
					return
				}
				reg = metrics.New()
				var err error
				srv, err = Start(pe, Config{NodeID: 1, ClusterID: "c2ltLWNsdXN0ZXItMDAwMQ", Broker: true, Controller: true,
					Quorum:         kraft.Config{Voters: []kraft.Voter{{ID: 1, Addr: "n1:9093"}}},
					BrokerListener: broker.Config{ListenAddr: "n1:9092", AdvertisedHost: "n1"}, Metrics: reg})
				require.NoError(t, err)
			})
			runUntil := func(what string, cond func() bool) {
				for i := 0; i < 30_000 && !cond(); i++ {
					require.NoError(t, s.RunFor(time.Millisecond))
				}
				require.True(t, cond(), what)
			}

			// A first server incarnation registers and notes its epoch.
			withServer = true
			p.Start()
			runUntil("registered", func() bool { return srv != nil && srv.Registered() })
			first := srv.reg.epoch
			require.GreaterOrEqual(t, first, int64(0))
			require.NoError(t, s.RunFor(time.Second)) // the epoch note is synced
			p.Crash()
			srv = nil

			// Then, with the server down, a partition log with a few
			// segments, shut down cleanly (its recovery point at its end).
			withServer = false
			p.Start()
			require.NoError(t, s.RunFor(0))
			cfg := log.DefaultConfig()
			cfg.SegmentBytes = 1024
			l, err := log.Open(e, "events-0", cfg)
			require.NoError(t, err)
			for i := range 20 {
				b := record.NewBuilder()
				b.Append(int64(i), nil, []byte(strings.Repeat("v", 100)))
				batch, err := b.AppendTo(nil)
				require.NoError(t, err)
				runUntil("the log settled", func() bool { return !l.Busy() })
				_, err = l.Append(batch, 0)
				require.NoError(t, err)
			}
			shut := false
			l.Shutdown(func(err error) { require.NoError(t, err); shut = true })
			runUntil("the log shut down", func() bool { return shut })
			if damaged {
				// A bit flipped at rest in the first segment, well below
				// the recovery point.
				f, err := e.Disk().Open("events-0/00000000000000000000.log", false)
				require.NoError(t, err)
				buf := make([]byte, 1)
				const pos = 300
				_, err = f.ReadAt(buf, pos)
				require.NoError(t, err)
				buf[0] ^= 0x10
				require.NoError(t, f.WriteAt(buf, pos))
				synced := false
				f.Sync(func(err error) { require.NoError(t, err); synced = true })
				runUntil("synced", func() bool { return synced })
				require.NoError(t, f.Close())
			}
			p.Crash()
			withServer = true
			p.Start()
			runUntil("registered again", func() bool { return srv != nil && srv.Registered() })
			damagedLogs, _ := reg.Value(metrics.LogScrubDamaged)
			scrubbed, _ := reg.Value(metrics.LogScrubBytes)
			require.Positive(t, scrubbed)
			if damaged {
				require.Equal(t, int64(-1), srv.reg.sentPrevious)
				require.Equal(t, float64(1), damagedLogs)
			} else {
				require.Equal(t, first, srv.reg.sentPrevious)
				require.Zero(t, damagedLogs)
			}
		})
	}
}
