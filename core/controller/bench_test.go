package controller

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
)

// The metadata scale benchmark of issue 4: 100,000 partitions (1,000 topics
// of 100 partitions at replication factor 3 over 5 brokers) created through
// the active controller, one CreateTopics request per topic, committed ten
// requests at a time. It measures the controller's whole path: validation,
// placement, record generation and encoding, the speculative image, and
// adopting it on commit. In the same run it measures two baselines on the
// same records: replaying them onto an image with core/meta alone (what a
// broker does), and a standby controller replaying them through Committed.
//
//	go test ./core/controller -run '^$' -bench CreatePartitions -benchmem
//
// Besides ns/op (all three paths) it reports controller-ms, meta-replay-ms,
// standby-ms, the ratio controller/meta-replay and the controller's cost per
// partition.

const (
	benchBrokers            = 5
	benchPartitionsPerTopic = 100
	benchReplicationFactor  = 3
	benchCommitEvery        = 10
)

var benchSizes = []struct {
	name   string
	topics int
}{{"partitions=1k", 10}, {"partitions=100k", 1000}}

// benchBase is an image with benchBrokers unfenced brokers.
func benchBase(tb testing.TB) *meta.Image {
	d := meta.Empty().NewDelta()
	for id := range int32(benchBrokers) {
		recs := []meta.Record{
			&meta.RegisterBrokerRecord{BrokerID: id, IncarnationID: meta.UUID{byte(id + 1)}, BrokerEpoch: int64(id),
				Endpoints: []meta.Endpoint{{Name: "PLAINTEXT", Host: fmt.Sprintf("broker-%d", id), Port: 9092}}, Fenced: true},
			&meta.UnfenceBrokerRecord{BrokerID: id, BrokerEpoch: int64(id)},
		}
		for _, r := range recs {
			if err := d.Replay(r); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return d.Apply(meta.Position{Offset: 2*benchBrokers - 1, Epoch: 1})
}

// createThroughController creates the topics through an active controller
// and returns the committed batches.
func createThroughController(tb testing.TB, base *meta.Image, topics int) (*meta.Image, []Proposal) {
	c := New(Config{MaxReplicationFactor: benchReplicationFactor}, rand.New(rand.NewPCG(1, 2)))
	c.BecomeLeader(0, 2, base, base.Position().Offset+2)
	var proposals []Proposal
	commit := func() {
		rd := c.Ready()
		proposals = append(proposals, rd.Proposals...)
		for _, p := range rd.Proposals {
			if err := c.Committed(meta.Position{Offset: p.LastOffset, Epoch: p.Epoch}, p.Records); err != nil {
				tb.Fatal(err)
			}
		}
		c.Ready() // the responses
	}
	for i := range topics {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 7
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = fmt.Sprintf("topic-%05d", i), benchPartitionsPerTopic, benchReplicationFactor
		req.Topics = append(req.Topics, t)
		if _, err := c.Handle(0, req); err != nil {
			tb.Fatal(err)
		}
		if (i+1)%benchCommitEvery == 0 {
			commit()
		}
	}
	commit()
	img := c.CommittedImage()
	if img.NumPartitions() != topics*benchPartitionsPerTopic {
		tb.Fatalf("created %d partitions", img.NumPartitions())
	}
	return img, proposals
}

// replayWithMeta applies the batches with core/meta alone, one delta per
// batch, as a broker applies committed batches.
func replayWithMeta(tb testing.TB, base *meta.Image, proposals []Proposal) *meta.Image {
	img := base
	for _, p := range proposals {
		d := img.NewDelta()
		for _, r := range p.Records {
			if err := d.Replay(r); err != nil {
				tb.Fatal(err)
			}
		}
		img = d.Apply(meta.Position{Offset: p.LastOffset, Epoch: p.Epoch})
	}
	return img
}

// replayStandby feeds the batches to an inactive controller.
func replayStandby(tb testing.TB, base *meta.Image, proposals []Proposal) *meta.Image {
	c := New(Config{MaxReplicationFactor: benchReplicationFactor}, rand.New(rand.NewPCG(1, 2)))
	c.LoadImage(base)
	for _, p := range proposals {
		if err := c.Committed(meta.Position{Offset: p.LastOffset, Epoch: p.Epoch}, p.Records); err != nil {
			tb.Fatal(err)
		}
	}
	return c.CommittedImage()
}

func BenchmarkCreatePartitions(b *testing.B) {
	base := benchBase(b)
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			var ctrl, replay, standby time.Duration
			records := 0
			for b.Loop() {
				start := time.Now()
				img, proposals := createThroughController(b, base, size.topics)
				ctrl += time.Since(start)

				start = time.Now()
				replayed := replayWithMeta(b, base, proposals)
				replay += time.Since(start)

				start = time.Now()
				standbyImg := replayStandby(b, base, proposals)
				standby += time.Since(start)

				if replayed.Digest() != img.Digest() || standbyImg.Digest() != img.Digest() {
					b.Fatal("the replayed images differ from the controller's")
				}
				records = 0
				for _, p := range proposals {
					records += len(p.Records)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(ctrl.Milliseconds())/n, "controller-ms")
			b.ReportMetric(float64(replay.Milliseconds())/n, "meta-replay-ms")
			b.ReportMetric(float64(standby.Milliseconds())/n, "standby-ms")
			b.ReportMetric(float64(ctrl)/float64(replay), "controller/meta-replay")
			b.ReportMetric(float64(ctrl.Nanoseconds())/n/float64(size.topics*benchPartitionsPerTopic), "controller-ns/partition")
			b.ReportMetric(float64(records), "records")
		})
	}
}
