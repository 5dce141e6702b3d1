package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-log/strata/internal/proccluster"
	"github.com/strata-log/strata/nemesis"
)

var (
	seedFlag     = flag.Uint64("chaos.seed", 0, "the campaign's seed (0: one from the clock, printed)")
	durationFlag = flag.Duration("chaos.duration", 30*time.Second, "the fault phase's length")
)

// Bounds of a campaign beyond its fault phase.
const (
	nodes      = 3
	partitions = 3
	// setupTimeout bounds the brokers' registration and the topic's
	// creation with full ISRs.
	setupTimeout = 60 * time.Second
	// warmup is how long the workload runs before the first fault.
	warmup = 2 * time.Second
	// livenessTimeout bounds, after the heal, the wait until every
	// partition acknowledges a probe (restarts, elections and ISR
	// expansion included).
	livenessTimeout = 60 * time.Second
	// probeTimeout bounds one round of probes.
	probeTimeout = 10 * time.Second
	// drainTimeout bounds the consumer's and the final reader's catch-up.
	drainTimeout = 60 * time.Second
)

// props are every node's server.properties lines beyond the cluster's:
// short session and lag timeouts, so a dead or cut node leaves the ISRs
// in seconds.
var props = []string{"broker.session.timeout.ms=4000", "replica.lag.time.max.ms=5000"}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(proccluster.RunTests(m))
}

// drawMix is a seed's mix for the real-process world: the nemesis's own
// draw (DrawMixWithin), from the world's "mix" stream.
func drawMix(w *World) nemesis.Mix {
	return nemesis.DrawMixWithin(w.Rand("mix"), w.Nodes(), nemesis.Promises{Voters: w.Nodes()}, w.Capabilities())
}

func drawSchedule(seed uint64, phase time.Duration) (nemesis.Mix, []string) {
	w := NewWorld(&calls{}, nodes, seed, nil)
	mix := drawMix(w)
	nemesis.Start(w, mix, phase)
	w.Run(phase)
	return mix, w.Schedule
}

// TestSameSeedSameSchedule: a seed draws the same mix and the same
// schedule of faults every time, without processes (the World's answers
// are its own bookkeeping); another seed draws another.
func TestSameSeedSameSchedule(t *testing.T) {
	for _, seed := range []uint64{1, 7, 42} {
		mix1, s1 := drawSchedule(seed, time.Minute)
		mix2, s2 := drawSchedule(seed, time.Minute)
		require.Equal(t, mix1.String(), mix2.String())
		require.Equal(t, s1, s2)
		require.NotEmpty(t, s1, "seed %d drew no fault in a minute", seed)
		_, other := drawSchedule(seed+1000, time.Minute)
		require.NotEqual(t, s1, other)
		for _, k := range mix1.Kinds {
			require.True(t, Capabilities().Can(k), "seed %d drew %s", seed, k)
		}
	}
	mix, s := drawSchedule(7, time.Minute)
	t.Logf("seed 7: %v, %d events; the first: %s", mix, len(s), strings.Join(s[:min(5, len(s))], "; "))
}

// TestChaos is the real-process campaign (make chaos SEED= DURATION=):
// three combined nodes as processes, each in its own network namespace
// with its data on a tmpfs of its own (a disk the nemesis can fill);
// a topic of three partitions at replication factor 3 and
// min.insync.replicas 2; the workload (workload.go) while the nemesis
// injects the seed's mix for -chaos.duration; then the heal, a liveness
// probe of every partition, the drain, a final read from each
// partition's start, and the replicated scenario's checks (a)-(e) on the
// history. It skips where namespaces are unavailable (not root, no
// iproute2), and fails instead under CI=true.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano()) % 1_000_000
	}
	phase := *durationFlag
	replay := fmt.Sprintf("make chaos SEED=%d DURATION=%v", seed, phase)
	t.Logf("seed %d; replay: %s", seed, replay)

	net := proccluster.NewNetGroup(t, nodes)
	places := map[int32]proccluster.Placement{}
	disks := make([]*disk, nodes)
	for i := range nodes {
		disks[i] = newDisk(t)
		place := net.Placement(i)
		place.LogDir = disks[i].Data()
		places[int32(i+1)] = place
	}
	c := proccluster.Start(t, proccluster.Combined(nodes), proccluster.Options{Props: props, Places: places})
	var seeds []string
	for _, p := range c.Nodes {
		seeds = append(seeds, p.BrokerAddr)
	}

	adminCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTimeout(time.Second), kgo.RetryTimeout(5*time.Second))
	require.NoError(t, err)
	defer adminCl.Close()
	adm := kadm.NewClient(adminCl)
	const topic = "chaos"
	c.WaitFor(setupTimeout, "the topic created (RF 3, min.insync.replicas 2)", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		two := "2"
		resp, err := adm.CreateTopic(ctx, partitions, nodes, map[string]*string{"min.insync.replicas": &two}, topic)
		return err == nil && (resp.Err == nil || strings.Contains(resp.Err.Error(), "TOPIC_ALREADY_EXISTS"))
	})
	c.WaitFor(setupTimeout, "every partition led with a full ISR", func() bool { return fullISRs(adm, topic) })

	w := newWorkload(topic, partitions, seeds)
	require.NoError(t, w.startConsumer())
	defer w.stopConsumer()
	require.NoError(t, w.startProducer())
	defer w.stopProducer()
	time.Sleep(warmup)

	world := NewWorld(&procs{t: t, c: c, net: net, disks: disks}, nodes, seed, time.Sleep)
	mix := drawMix(world)
	t.Logf("mix: %v; clogs with %s", mix, net.ClogMode())
	nem := nemesis.Start(world, mix, phase)
	world.Run(phase)
	world.HealEverything()
	t.Logf("schedule of seed %d (%d faults injected, %d nemesis draws; callbacks ended at most %v after their time):\n  %s",
		seed, world.Faults, nem.Injected(), world.MaxLag.Round(time.Millisecond), strings.Join(world.Schedule, "\n  "))

	// Every node runs again; every partition acknowledges a probe.
	for _, p := range c.Nodes {
		p.WaitStarted(t)
		p.RequireHealthy(t, "after the heal")
	}
	healed := time.Now()
	var failed []int32
	for round := 0; ; round++ {
		failed, err = w.probe(round, probeTimeout)
		if err == nil && len(failed) == 0 {
			break
		}
		require.Less(t, time.Since(healed), livenessTimeout, "liveness: partitions %v accept no acks=all produce %v after the heal (%v)", failed, livenessTimeout, err)
	}
	live := time.Since(healed)

	// Drain: outcomes of every record, the consumer to the end, the
	// final read.
	w.stopProducer()
	var ends []int64
	proccluster.WaitForNoError(t, setupTimeout, "the end offsets listed", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		ends, err = w.endOffsets(ctx, adm)
		return err
	})
	c.WaitFor(drainTimeout, fmt.Sprintf("the consumer read up to the high watermarks %v", ends), func() bool { return w.readUpTo("c", ends) })
	w.stopConsumer()
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	require.NoError(t, w.finalRead(ctx, ends))

	failures, figures := w.verdict()
	noSpace := 0
	for _, p := range c.Nodes {
		p.RequireHealthy(t, "at the end")
		for _, l := range strings.Split(p.LogText(), "\n") {
			if strings.Contains(l, "no space left on device") {
				noSpace++
			}
		}
	}
	figures += fmt.Sprintf("; %d node log lines name ENOSPC", noSpace)
	summary := fmt.Sprintf("chaos seed %d, fault phase %v: %s\n  mix: %v\n  faults injected: %d; every partition live %v after the heal; %s",
		seed, phase, map[bool]string{true: "FAIL", false: "ok"}[len(failures) > 0], mix, world.Faults, live.Round(time.Millisecond), figures)
	t.Log(summary)
	fmt.Println(summary)
	if len(failures) > 0 {
		t.Fatalf("the history is not clean (replay: %s):\n%s", replay, strings.Join(failures, "\n"))
	}
}

// fullISRs reports whether every partition of topic has a leader and
// every node in its ISR.
func fullISRs(adm *kadm.Client, topic string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return false
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil || len(td.Partitions) != partitions {
		return false
	}
	for _, pd := range td.Partitions {
		if pd.Err != nil || pd.Leader < 0 || len(pd.ISR) != nodes {
			return false
		}
	}
	return true
}
