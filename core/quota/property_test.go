package quota

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestThrottleBoundsProperty drives a Manager with random quotas,
// configuration and traffic (times may even go backwards) and checks that
// every throttle is at least zero and at most its bound: MaxByteRateThrottle
// for byte rates, one window for request_percentage and
// connection_creation_rate, MaxWireThrottle for mutations; and that a
// second Manager fed the same calls answers the same (no hidden state).
func TestThrottleBoundsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{
			WindowNum:            rapid.IntRange(0, 15).Draw(t, "windowNum"),
			WindowSize:           time.Duration(rapid.IntRange(0, 3000).Draw(t, "windowMs")) * ms,
			ControllerWindowNum:  rapid.IntRange(0, 15).Draw(t, "controllerWindowNum"),
			ControllerWindowSize: time.Duration(rapid.IntRange(0, 3000).Draw(t, "controllerWindowMs")) * ms,
			MaxByteRateThrottle:  time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "maxByteThrottle")),
		}
		a, err := NewManager(cfg)
		require.NoError(t, err)
		b, err := NewManager(cfg)
		require.NoError(t, err)
		eff := cfg.withDefaults()

		users := []string{"alice", "bob"}
		clients := []string{"app", "etl", ""}
		name := func(t *rapid.T, label string, names []string) Name {
			switch rapid.IntRange(0, 2).Draw(t, label) {
			case 0:
				return Name{}
			case 1:
				return Default()
			}
			return Named(rapid.SampledFrom(names[:2]).Draw(t, label+"Name"))
		}
		var now time.Duration
		for i := rapid.IntRange(1, 60).Draw(t, "calls"); i > 0; i-- {
			now += time.Duration(rapid.Int64Range(-int64(2*time.Second), int64(15*time.Second)).Draw(t, "dt"))
			user, client := rapid.SampledFrom(users).Draw(t, "user"), rapid.SampledFrom(clients).Draw(t, "client")
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0: // configure
				e := Entity{User: name(t, "u", users), ClientID: name(t, "c", clients)}
				k := rapid.SampledFrom([]Key{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}).Draw(t, "key")
				op := Op{Key: k, Value: float64(rapid.IntRange(1, 1e7).Draw(t, "quota"))}
				errA, errB := a.Alter(e, []Op{op}, false), b.Alter(e, []Op{op}, false)
				require.Equal(t, errA == nil, errB == nil)
			case 1:
				e := Entity{IP: Default()}
				if rapid.Bool().Draw(t, "ipNamed") {
					e.IP = Named("10.0.0.1")
				}
				op := Op{Key: ConnectionCreationRate, Value: float64(rapid.IntRange(1, 100).Draw(t, "connQuota"))}
				require.NoError(t, a.Alter(e, []Op{op}, false))
				require.NoError(t, b.Alter(e, []Op{op}, false))
			case 2:
				k := rapid.SampledFrom([]Key{ProducerByteRate, ConsumerByteRate}).Draw(t, "byteKey")
				v := float64(rapid.Int64Range(0, 1<<40).Draw(t, "bytes"))
				da, err := a.Record(k, user, client, v, now)
				require.NoError(t, err)
				db, _ := b.Record(k, user, client, v, now)
				require.Equal(t, da, db)
				require.GreaterOrEqual(t, da, time.Duration(0))
				require.LessOrEqual(t, da, eff.MaxByteRateThrottle)
			case 3:
				d := time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, "thread"))
				da, db := a.RecordRequestTime(user, client, d, now), b.RecordRequestTime(user, client, d, now)
				require.Equal(t, da, db)
				require.GreaterOrEqual(t, da, time.Duration(0))
				require.LessOrEqual(t, da, eff.WindowSize)
			case 4:
				n := float64(rapid.IntRange(0, 1e6).Draw(t, "mutations"))
				strict := rapid.Bool().Draw(t, "strict")
				da, errA := a.RecordMutations(user, client, n, now, strict)
				db, errB := b.RecordMutations(user, client, n, now, strict)
				require.Equal(t, da, db)
				require.Equal(t, errA == nil, errB == nil)
				require.GreaterOrEqual(t, da, time.Duration(0))
				require.LessOrEqual(t, da, MaxWireThrottle)
				if errA != nil {
					require.ErrorIs(t, errA, ErrThrottlingQuotaExceeded)
					require.True(t, strict)
				}
			case 5:
				ip := rapid.SampledFrom([]string{"10.0.0.1", "10.0.0.2"}).Draw(t, "ip")
				da, db := a.RecordConnection(ip, now), b.RecordConnection(ip, now)
				require.Equal(t, da, db)
				require.GreaterOrEqual(t, da, time.Duration(0))
				require.LessOrEqual(t, da, eff.WindowSize)
			}
		}
		da, err := a.Describe(Filter{})
		require.NoError(t, err)
		db, err := b.Describe(Filter{})
		require.NoError(t, err)
		require.Equal(t, da, db)
	})
}

// TestThrottleTimeProperty checks the formulas alone over any inputs:
// never negative, never above the bound or the wire's limit.
func TestThrottleTimeProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		observed := rapid.Float64().Draw(t, "observed")
		quota := rapid.Float64().Draw(t, "quota")
		window := time.Duration(rapid.Int64().Draw(t, "window"))
		bound := time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "bound"))
		d := BoundedThrottleTime(observed, quota, window, bound)
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, bound)
		tt := TokenThrottleTime(rapid.Float64().Draw(t, "tokens")-rapid.Float64().Draw(t, "debt"), quota)
		require.GreaterOrEqual(t, tt, time.Duration(0))
		require.LessOrEqual(t, tt, MaxWireThrottle)
	})
}

// TestHostileAlterDescribeProperty feeds AlterClientQuotas and
// DescribeClientQuotas shapes a client could send, well formed or not:
// nothing panics, every refusal carries Kafka's code, and what is
// accepted is what Describe then shows.
func TestHostileAlterDescribeProperty(t *testing.T) {
	types := []string{EntityUser, EntityClientID, EntityIP, "", "group", "USER"}
	keys := []Key{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate, ConnectionCreationRate, "", "bogus"}
	values := []float64{1, 1.5, 0, -1, 1e20, 1 << 31, 1 << 63, nan(), math.Inf(1), 100}
	optName := func(t *rapid.T, label string) *string {
		if rapid.Bool().Draw(t, label+"Nil") {
			return nil
		}
		return strp(rapid.SampledFrom([]string{"", "alice", "10.0.0.1", "<default>"}).Draw(t, label))
	}
	rapid.Check(t, func(t *rapid.T) {
		m, err := NewManager(Config{})
		require.NoError(t, err)
		want := map[Entity]map[Key]float64{}
		for i := rapid.IntRange(1, 20).Draw(t, "alterations"); i > 0; i-- {
			var comps []Component
			for j := rapid.IntRange(0, 3).Draw(t, "components"); j > 0; j-- {
				comps = append(comps, Component{Type: rapid.SampledFrom(types).Draw(t, "type"), Name: optName(t, "name")})
			}
			var ops []Op
			for j := rapid.IntRange(0, 3).Draw(t, "ops"); j > 0; j-- {
				ops = append(ops, Op{
					Key:    rapid.SampledFrom(keys).Draw(t, "key"),
					Value:  rapid.SampledFrom(values).Draw(t, "value"),
					Remove: rapid.Bool().Draw(t, "remove"),
				})
			}
			e, err := EntityFromComponents(comps)
			if err == nil {
				err = m.Alter(e, ops, false)
			}
			if err != nil {
				var re *RequestError
				require.True(t, errors.As(err, &re), "%v", err)
				require.ErrorIs(t, err, ErrInvalidRequest)
				continue
			}
			for _, op := range ops {
				if op.Remove {
					delete(want[e], op.Key)
					continue
				}
				if want[e] == nil {
					want[e] = map[Key]float64{}
				}
				want[e][op.Key] = op.Value
			}
		}
		got, err := m.Describe(Filter{})
		require.NoError(t, err)
		gotMap := map[Entity]map[Key]float64{}
		for i, d := range got {
			if i > 0 {
				require.Negative(t, CompareEntities(got[i-1].Entity, d.Entity), "sorted")
			}
			require.NotEmpty(t, d.Values)
			gotMap[d.Entity] = map[Key]float64{}
			for _, v := range d.Values {
				gotMap[d.Entity][v.Key] = v.Value
			}
		}
		for e, kv := range want {
			if len(kv) == 0 {
				delete(want, e)
			}
		}
		require.Equal(t, want, gotMap)

		var f Filter
		for j := rapid.IntRange(0, 3).Draw(t, "filterComponents"); j > 0; j-- {
			f.Components = append(f.Components, FilterComponent{
				Type:  rapid.SampledFrom(types).Draw(t, "filterType"),
				Match: MatchType(rapid.IntRange(-1, 3).Draw(t, "match")),
				Name:  optName(t, "filterName"),
			})
		}
		f.Strict = rapid.Bool().Draw(t, "strict")
		if _, err := m.Describe(f); err != nil {
			var re *RequestError
			require.True(t, errors.As(err, &re), "%v", err)
		}
	})
}
