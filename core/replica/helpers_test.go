package replica

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/sim"
	"github.com/strata-log/strata/sim/simtest"
)

const testNode = 1

// rig is one simulated broker process (simtest.Rig, host "b1") running a
// Manager, driven from the test between simulator runs.
type rig struct {
	*simtest.Rig
	t   *testing.T
	m   *Manager
	cfg Config
	img *meta.Image
	// pos is the next image position.
	pos int64
}

func newRig(t *testing.T, seed uint64) *rig {
	return startRig(t, sim.Config{Seed: seed}, Config{NodeID: testNode, ReopenBackoff: 100 * time.Millisecond})
}

// startRig starts the broker process with the manager's config cfg; every
// incarnation runs a new Manager.
func startRig(t *testing.T, simCfg sim.Config, cfg Config) *rig {
	r := &rig{t: t, cfg: cfg, img: meta.Empty()}
	r.Rig = simtest.NewProcess(t, simCfg, "b1", func(e env.Env) { r.m = NewManager(e, r.cfg) })
	return r
}

// apply replays records onto the rig's image and hands it to the manager.
func (r *rig) apply(recs ...meta.Record) {
	r.t.Helper()
	d := r.img.NewDelta()
	for _, rec := range recs {
		require.NoError(r.t, d.Replay(rec))
	}
	r.img = d.Apply(meta.Position{Offset: r.pos, Epoch: 1})
	r.pos++
	r.m.Apply(r.img, true)
}

// restart ends the process with stop (a kill or a power loss), starts a
// new incarnation, hands its manager the image again and waits until
// partition 0 of topic is online.
func (r *rig) restart(stop func(), topic string) *Partition {
	r.t.Helper()
	stop()
	r.Proc.Start()
	r.Run(0)
	r.img = r.img.NewDelta().Apply(meta.Position{Offset: r.pos, Epoch: 1})
	r.pos++
	r.m.Apply(r.img, true)
	return r.online(topic, 0)
}

func topicID(n byte) meta.UUID { return meta.UUID{0: n, 15: n} }

// createTopic adds a topic whose partitions this broker leads.
func (r *rig) createTopic(name string, id meta.UUID, partitions int, configs map[string]string) {
	r.t.Helper()
	recs := []meta.Record{&meta.TopicRecord{Name: name, TopicID: id}}
	for p := 0; p < partitions; p++ {
		recs = append(recs, &meta.PartitionRecord{TopicID: id, Partition: int32(p), Replicas: []int32{testNode}, ISR: []int32{testNode}, Leader: testNode})
	}
	for k, v := range configs {
		v := v
		recs = append(recs, &meta.ConfigRecord{ResourceType: meta.ConfigResourceTopic, ResourceName: name, Key: k, Value: &v})
	}
	r.apply(recs...)
}

// newTopic creates a topic of one partition that this broker leads and
// returns the partition once it is online.
func (r *rig) newTopic(name string, id meta.UUID) *Partition {
	r.t.Helper()
	r.createTopic(name, id, 1, nil)
	return r.online(name, 0)
}

// online waits until a partition is online.
func (r *rig) online(topic string, id int32) *Partition {
	r.t.Helper()
	for i := 0; i < 1000; i++ {
		if p, err := r.m.Lookup(topic, id); err == nil && p.Online() {
			return p
		}
		r.Run(10 * time.Millisecond)
	}
	r.t.Fatalf("%s-%d never came online", topic, id)
	return nil
}

// batch builds a RecordBatch v2 of n records.
func batch(t *testing.T, n int, opts ...record.BuilderOption) []byte {
	t.Helper()
	b := record.NewBuilder(opts...)
	for i := 0; i < n; i++ {
		b.Append(1_767_225_600_000+int64(i), []byte{byte('k' + i%3)}, []byte{byte('a' + i)})
	}
	out, err := b.AppendTo(nil)
	require.NoError(t, err)
	return out
}

// produce runs a Produce and the simulator until it answers.
func (r *rig) produce(p *Partition, payload []byte, acks int16) ProduceResult {
	r.t.Helper()
	var res *ProduceResult
	p.Produce(payload, acks, r.Env.Now(), func(pr ProduceResult) { res = &pr })
	for i := 0; i < 1000 && res == nil; i++ {
		r.Run(time.Millisecond)
	}
	require.NotNil(r.t, res, "produce never answered")
	return *res
}
