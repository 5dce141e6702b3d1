package interop

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xscram "github.com/xdg-go/scram"

	"github.com/strata-log/strata/internal/proccluster"
)

// The security benchmarks of docs/benchmarks.md (issue 24), on one
// in-process secured node (startSecureNode; the clients share its
// process and cores) with kgo clients, each listener of a run beside the
// others and their order rotated from run to run:
//
//   - produce: 1 KiB records, acks=all, linger 5 ms, at most 1024
//     records buffered, for benchSecPhase: MiB/s and the p99 of a
//     record's produce latency (Produce to its promise);
//   - consume: the records just produced, read from the start: MiB/s;
//   - end to end: 1000 records a second for benchSecPhase, a consumer
//     reading them meanwhile: the p99 from produce to receipt;
//
// over PLAINTEXT (no authentication; User:ANONYMOUS, a super user) and
// SASL_SSL (alice, SCRAM-SHA-512, through her ACLs); and the SCRAM
// handshake rate: connections a second that open, send ApiVersions,
// SaslHandshake and the two SaslAuthenticate of SCRAM-SHA-512 and close,
// from benchSecDialers raw clients at once, over SASL_PLAINTEXT and
// SASL_SSL (and PLAINTEXT with ApiVersions alone, the floor). They run
// only with STRATA_SECURITY_BENCH_RUNS=N (`make bench-security RUNS=N`).

const (
	benchSecPartitions = 6
	benchSecPhase      = 3 * time.Second
	benchSecRate       = 1000
	benchSecDialers    = 8
)

// benchSecListener is one listener measured: its address and the kgo
// options that authenticate on it.
type benchSecListener struct {
	name string
	addr string
	opts []kgo.Opt
}

func TestSecurityBenchmark(t *testing.T) {
	runs := proccluster.BenchRuns(t, "STRATA_SECURITY_BENCH_RUNS", "bench-security")
	s := startSecureNode(t)
	listeners := []benchSecListener{
		{"PLAINTEXT", s.Addr(), nil},
		{"SASL_SSL", s.saslSSL, []kgo.Opt{kgo.DialTLSConfig(s.tlsConfig(t, "")),
			kgo.SASL(scram.Auth{User: secAlice, Pass: secAlicePassword}.AsSha512Mechanism())}},
	}
	values := benchValues(t)
	type figures struct{ produce, produceP99, consume, e2eP99 []float64 }
	got := map[string]*figures{}
	for _, l := range listeners {
		got[l.name] = &figures{}
	}
	for run := range runs {
		for i := range listeners {
			l := listeners[(i+run)%len(listeners)]
			topic := fmt.Sprintf("%sbench-%s-%d", secPrefix, strings.ToLower(l.name), run)
			createTopic(t, s.adm, topic, benchSecPartitions, nil)
			mibs, p99, bytes := benchSecProduce(t, l, topic, values)
			f := got[l.name]
			f.produce, f.produceP99 = append(f.produce, mibs), append(f.produceP99, p99)
			f.consume = append(f.consume, benchSecConsume(t, l, topic, bytes))
			e2e := topic + "-e2e"
			createTopic(t, s.adm, e2e, benchSecPartitions, nil)
			f.e2eP99 = append(f.e2eP99, benchSecEndToEnd(t, l, e2e, values))
			t.Logf("run %d %s: produce %.1f MiB/s p99 %.2f ms, consume %.1f MiB/s, end-to-end p99 %.2f ms",
				run, l.name, mibs, p99, f.consume[len(f.consume)-1], f.e2eP99[len(f.e2eP99)-1])
		}
	}
	// Ratios are the median of the per-run ratios: both listeners of a
	// run share its conditions (the machine's other load).
	base := got["PLAINTEXT"]
	ratio := func(xs, base []float64) float64 {
		rs := make([]float64, len(xs))
		for i := range xs {
			rs[i] = xs[i] / base[i]
		}
		return proccluster.Median(rs)
	}
	for _, l := range listeners {
		f := got[l.name]
		fmt.Printf("security %-9s: %d runs, medians: produce %.1f MiB/s (%.2fx PLAINTEXT), produce p99 %.1f ms (%.2fx), consume %.1f MiB/s (%.2fx), end-to-end p99 %.1f ms (%.2fx) at %d records/s\n",
			l.name, runs, proccluster.Median(f.produce), ratio(f.produce, base.produce),
			proccluster.Median(f.produceP99), ratio(f.produceP99, base.produceP99),
			proccluster.Median(f.consume), ratio(f.consume, base.consume),
			proccluster.Median(f.e2eP99), ratio(f.e2eP99, base.e2eP99), benchSecRate)
	}

	// The handshake rate.
	dialers := []struct {
		name string
		addr string
		tls  *tls.Config
		sasl bool
	}{
		{"PLAINTEXT (ApiVersions only)", s.Addr(), nil, false},
		{"SASL_PLAINTEXT SCRAM-SHA-512", s.saslPlaintext, nil, true},
		{"SASL_SSL SCRAM-SHA-512", s.saslSSL, s.tlsConfig(t, ""), true},
	}
	rates := make([][]float64, len(dialers))
	client, err := xscram.SHA512.NewClient(secAlice, secAlicePassword, "")
	require.NoError(t, err)
	for run := range runs {
		for i := range dialers {
			j := (i + run) % len(dialers)
			d := dialers[j]
			rate := benchSecHandshakes(t, d.addr, d.tls, d.sasl, client)
			rates[j] = append(rates[j], rate)
			t.Logf("run %d %s: %.0f connections/s", run, d.name, rate)
		}
	}
	for i, d := range dialers {
		fmt.Printf("security handshakes %-28s: %d runs, median %.0f connections/s (min %.0f, max %.0f), %d dialers\n",
			d.name, runs, proccluster.Median(rates[i]), slices.Min(rates[i]), slices.Max(rates[i]), benchSecDialers)
	}
}

// benchSecProduce produces values round robin for benchSecPhase and
// returns MiB/s, the p99 of a record's latency in ms, and the bytes
// written.
func benchSecProduce(t *testing.T, l benchSecListener, topic string, values [][]byte) (mibs, p99 float64, bytes int64) {
	t.Helper()
	// At most 1024 records (1 MiB) buffered: Produce blocks beyond, so
	// that a record's latency is the broker's answer, not a queue.
	cl := newBenchClient(t, l.addr, append(append(benchProducerOpts(5*time.Millisecond), kgo.MaxBufferedRecords(1024)), l.opts...)...)
	defer cl.Close()
	ctx := ctxFor(t, benchTxnWait)
	var (
		mu    sync.Mutex
		lat   []time.Duration
		fails atomic.Int64
		wg    sync.WaitGroup
	)
	start := time.Now()
	for i := 0; time.Since(start) < benchSecPhase; i++ {
		v := values[i%len(values)]
		at := time.Now()
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				fails.Add(1)
				return
			}
			d := time.Since(at)
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		})
		bytes += int64(len(v))
	}
	require.NoError(t, cl.Flush(ctx))
	wg.Wait()
	took := time.Since(start)
	require.Zero(t, fails.Load(), "records not acknowledged")
	return float64(bytes) / (1 << 20) / took.Seconds(), quantileMs(lat, 0.99), bytes
}

// benchSecConsume reads topic from the start until bytes of values have
// arrived and returns MiB/s.
func benchSecConsume(t *testing.T, l benchSecListener, topic string, bytes int64) float64 {
	t.Helper()
	cl := newBenchClient(t, l.addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(16 << 20)}, l.opts...)...)
	defer cl.Close()
	ctx := ctxFor(t, benchTxnWait)
	start := time.Now()
	var read int64
	for read < bytes {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err())
		fs.EachRecord(func(r *kgo.Record) { read += int64(len(r.Value)) })
	}
	return float64(read) / (1 << 20) / time.Since(start).Seconds()
}

// benchSecEndToEnd produces benchSecRate records a second for
// benchSecPhase while a consumer reads them, and returns the p99 in ms
// from a record's produce to its receipt (the record's timestamp is its
// produce time; one process, one clock).
func benchSecEndToEnd(t *testing.T, l benchSecListener, topic string, values [][]byte) float64 {
	t.Helper()
	prod := newBenchClient(t, l.addr, append(benchProducerOpts(0), l.opts...)...)
	defer prod.Close()
	cons := newBenchClient(t, l.addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond)}, l.opts...)...)
	defer cons.Close()
	ctx := ctxFor(t, benchTxnWait)
	// The consumer is in place before the first record.
	require.NoError(t, cons.Ping(ctx))
	total := int(benchSecPhase.Seconds() * benchSecRate)
	done := make(chan []time.Duration)
	go func() {
		var lat []time.Duration
		for len(lat) < total && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) { lat = append(lat, now.Sub(r.Timestamp)) })
		}
		done <- lat
	}()
	tick := time.NewTicker(time.Second / benchSecRate)
	defer tick.Stop()
	for i := range total {
		<-tick.C
		prod.Produce(ctx, &kgo.Record{Topic: topic, Value: values[i%len(values)], Timestamp: time.Now()}, nil)
	}
	require.NoError(t, prod.Flush(ctx))
	lat := <-done
	require.Len(t, lat, total)
	return quantileMs(lat, 0.99)
}

// benchSecHandshakes runs benchSecDialers raw clients for benchSecPhase,
// each opening connection after connection to addr (over TLS when tlsCfg
// is set) that sends ApiVersions and, when sasl, authenticates as alice
// with SCRAM-SHA-512 (SaslHandshake v1, SaslAuthenticate v2 twice,
// checking the server's signature), then closes; it returns the
// connections a second. client caches alice's salted password, so the
// client's side of SCRAM is two HMACs.
func benchSecHandshakes(t *testing.T, addr string, tlsCfg *tls.Config, sasl bool, client *xscram.Client) float64 {
	t.Helper()
	var (
		count atomic.Int64
		wg    sync.WaitGroup
		errs  = make(chan error, benchSecDialers)
	)
	deadline := time.Now().Add(benchSecPhase)
	for range benchSecDialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := benchSecHandshake(addr, tlsCfg, sasl, client); err != nil {
					errs <- err
					return
				}
				count.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return float64(count.Load()) / benchSecPhase.Seconds()
}

func benchSecHandshake(addr string, tlsCfg *tls.Config, sasl bool, client *xscram.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var conn net.Conn
	var err error
	if tlsCfg != nil {
		conn, err = (&tls.Dialer{Config: tlsCfg}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	rt := rawRoundTripper{conn: conn, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("strata-bench"))}
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "strata-bench", "1"
	avr := kmsg.NewPtrApiVersionsResponse()
	if err := rt.do(av, avr); err != nil {
		return err
	}
	if !sasl {
		return nil
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "SCRAM-SHA-512"
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	if err := rt.do(hs, hsr); err != nil {
		return err
	}
	if hsr.ErrorCode != 0 {
		return fmt.Errorf("SaslHandshake: error %d", hsr.ErrorCode)
	}
	conv := client.NewConversation()
	msg, err := conv.Step("")
	for err == nil && !conv.Done() {
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.Version, au.SASLAuthBytes = 2, []byte(msg)
		aur := kmsg.NewPtrSASLAuthenticateResponse()
		if err := rt.do(au, aur); err != nil {
			return err
		}
		if aur.ErrorCode != 0 {
			return fmt.Errorf("SaslAuthenticate: error %d: %v", aur.ErrorCode, aur.ErrorMessage)
		}
		msg, err = conv.Step(string(aur.SASLAuthBytes))
	}
	if err != nil {
		return err
	}
	if !conv.Valid() {
		return fmt.Errorf("the server's signature is not valid")
	}
	return nil
}

// rawRoundTripper sends one request at a time on a connection and reads
// its response.
type rawRoundTripper struct {
	conn net.Conn
	f    *kmsg.RequestFormatter
	corr int32
}

func (r *rawRoundTripper) do(req kmsg.Request, resp kmsg.Response) error {
	r.corr++
	if _, err := r.conn.Write(r.f.AppendRequest(nil, req, r.corr)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(r.conn, size[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r.conn, body); err != nil {
		return err
	}
	if len(body) < 4 || int32(binary.BigEndian.Uint32(body)) != r.corr {
		return fmt.Errorf("response to correlation id %d: bad header", r.corr)
	}
	body = body[4:]
	// Flexible responses carry a header tag buffer, except ApiVersions'.
	if req.IsFlexible() && req.Key() != 18 {
		if len(body) < 1 || body[0] != 0 {
			return fmt.Errorf("response header tags")
		}
		body = body[1:]
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body)
}
