package quota

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/internal/coretest"
)

// TestScripts runs the scripts in testdata: a Manager driven call by call,
// each followed by what it answers. Regenerate with -rewrite and read the
// diff.
//
// Names: "<default>" is a default entity component.
//
//	new [window-num=N] [window-size=D] [max-byte-throttle=D]
//	alter [user=U] [client-id=C] [ip=I] [KEY=V ...] [remove=(KEY,...)] [validate-only]
//	resolve key=K user=U client=C
//	record key=K user=U client=C value=V at=D
//	                        Record, with the rate measured after it
//	request user=U client=C thread=D at=D
//	mutate user=U client=C n=N at=D [strict]
//	connect ip=I at=D [n=N] the throttles of n connections, run-length
//	describe [user=exact:U|default|any] [client-id=...] [ip=...] [strict]
//	expire at=D
func TestScripts(t *testing.T) {
	coretest.RunScripts(t, "*.txt", func(*testing.T) coretest.Commands { return (&script{}).run })
}

type script struct{ m *Manager }

func scanDuration(t *testing.T, d *datadriven.TestData, key string) time.Duration {
	var s string
	d.ScanArgs(t, key, &s)
	v, err := time.ParseDuration(s)
	require.NoError(t, err)
	return v
}

func scanFloat(t *testing.T, d *datadriven.TestData, key string) float64 {
	var s string
	d.ScanArgs(t, key, &s)
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v
}

func scanString(t *testing.T, d *datadriven.TestData, key string) string {
	var s string
	if d.HasArg(key) {
		d.ScanArgs(t, key, &s)
	}
	return s
}

func nameArg(s string) Name {
	if s == "<default>" {
		return Default()
	}
	return Named(s)
}

func fmtRate(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "new" && s.m == nil {
		d.Fatalf(t, "new first")
	}
	switch d.Cmd {
	case "new":
		var cfg Config
		if d.HasArg("window-num") {
			d.ScanArgs(t, "window-num", &cfg.WindowNum)
		}
		if d.HasArg("window-size") {
			cfg.WindowSize = scanDuration(t, d, "window-size")
		}
		if d.HasArg("max-byte-throttle") {
			cfg.MaxByteRateThrottle = scanDuration(t, d, "max-byte-throttle")
		}
		m, err := NewManager(cfg)
		if err != nil {
			return err.Error()
		}
		s.m = m
		return "ok"
	case "alter":
		var e Entity
		var ops []Op
		validateOnly := false
		for _, a := range d.CmdArgs {
			switch a.Key {
			case EntityUser:
				e.User = nameArg(a.Vals[0])
			case EntityClientID:
				e.ClientID = nameArg(a.Vals[0])
			case EntityIP:
				e.IP = nameArg(a.Vals[0])
			case "remove":
				for _, k := range a.Vals {
					ops = append(ops, Op{Key: Key(k), Remove: true})
				}
			case "validate-only":
				validateOnly = true
			default:
				v, err := strconv.ParseFloat(a.Vals[0], 64)
				require.NoError(t, err)
				ops = append(ops, Op{Key: Key(a.Key), Value: v})
			}
		}
		if err := s.m.Alter(e, ops, validateOnly); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "resolve":
		res := s.m.Resolve(Key(scanString(t, d, "key")), scanString(t, d, "user"), scanString(t, d, "client"))
		if !res.Limited() {
			return fmt.Sprintf("unlimited sensor=%s", fmtSensor(res.Sensor))
		}
		return fmt.Sprintf("%s limit=%s from %s sensor=%s", res.Level, fmtRate(res.Limit), res.Entity, fmtSensor(res.Sensor))
	case "record":
		k, user, client := Key(scanString(t, d, "key")), scanString(t, d, "user"), scanString(t, d, "client")
		at := scanDuration(t, d, "at")
		throttle, err := s.m.Record(k, user, client, scanFloat(t, d, "value"), at)
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("throttle %v%s", throttle, s.rateNote(k, user, client, at))
	case "request":
		user, client, at := scanString(t, d, "user"), scanString(t, d, "client"), scanDuration(t, d, "at")
		throttle := s.m.RecordRequestTime(user, client, scanDuration(t, d, "thread"), at)
		return fmt.Sprintf("throttle %v%s", throttle, s.rateNote(RequestPercentage, user, client, at))
	case "mutate":
		user, client, at := scanString(t, d, "user"), scanString(t, d, "client"), scanDuration(t, d, "at")
		throttle, err := s.m.RecordMutations(user, client, scanFloat(t, d, "n"), at, d.HasArg("strict"))
		out := fmt.Sprintf("throttle %v", throttle)
		if err != nil {
			var re *RequestError
			require.True(t, errors.As(err, &re))
			out = fmt.Sprintf("refused %s, %s", re.Code.Message, out)
		}
		res := s.m.Resolve(ControllerMutationRate, user, client)
		if sn := s.m.sensors[sensorID{key: ControllerMutationRate, sensor: res.Sensor}]; sn != nil {
			out += fmt.Sprintf(" (tokens %s)", fmtRate(sn.bucket.tokens))
		}
		return out
	case "connect":
		ip, at := scanString(t, d, "ip"), scanDuration(t, d, "at")
		n := 1
		if d.HasArg("n") {
			d.ScanArgs(t, "n", &n)
		}
		var runs []string
		var last time.Duration
		count := 0
		for i := 0; i < n; i++ {
			th := s.m.RecordConnection(ip, at)
			if count > 0 && th != last {
				runs = append(runs, fmt.Sprintf("%v x%d", last, count))
				count = 0
			}
			last = th
			count++
		}
		runs = append(runs, fmt.Sprintf("%v x%d", last, count))
		return "throttles " + strings.Join(runs, ", ")
	case "describe":
		var f Filter
		for _, a := range d.CmdArgs {
			if a.Key == "strict" {
				f.Strict = true
				continue
			}
			c := FilterComponent{Type: a.Key}
			switch v := a.Vals[0]; {
			case v == "default":
				c.Match = MatchDefault
			case v == "any":
				c.Match = MatchAny
			case strings.HasPrefix(v, "exact:"):
				c.Match, c.Name = MatchExact, strp(strings.TrimPrefix(v, "exact:"))
			default:
				d.Fatalf(t, "bad match %q", v)
			}
			f.Components = append(f.Components, c)
		}
		got, err := s.m.Describe(f)
		if err != nil {
			return "error: " + err.Error()
		}
		var out strings.Builder
		for _, e := range got {
			fmt.Fprintf(&out, "%s:", e.Entity)
			for _, v := range e.Values {
				fmt.Fprintf(&out, " %s=%s", v.Key, fmtRate(v.Value))
			}
			out.WriteString("\n")
		}
		if out.Len() == 0 {
			return "none"
		}
		return out.String()
	case "expire":
		return fmt.Sprintf("dropped %d, %d left", s.m.Expire(scanDuration(t, d, "at")), s.m.Sensors())
	}
	d.Fatalf(t, "unknown command %s", d.Cmd)
	return ""
}

// rateNote is the rate of the sensor a record charged, measured at at.
func (s *script) rateNote(k Key, user, client string, at time.Duration) string {
	res := s.m.Resolve(k, user, client)
	sn := s.m.sensors[sensorID{key: k, sensor: res.Sensor}]
	if sn == nil {
		return ""
	}
	return fmt.Sprintf(" (rate %s/s over %v)", fmtRate(sn.rate.Measure(at)), sn.rate.WindowSize(at))
}

func fmtSensor(k SensorKey) string {
	var parts []string
	if k.ByUser {
		parts = append(parts, "user="+k.User)
	}
	if k.ByClientID {
		parts = append(parts, "client-id="+k.ClientID)
	}
	return "(" + strings.Join(parts, ",") + ")"
}
