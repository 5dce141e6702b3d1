package server_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/wire"
	"github.com/strata-log/strata/sim/servertest"
)

// FuzzServerRequests sends arbitrary request frames to a whole server in
// the simulator, one hosting a topic with data, on a fresh connection
// each: whatever the bytes, the server must not panic (a panic fails the
// simulator's event and the fuzz input) and must go on serving a
// well-formed Fetch afterwards, with the topic's records intact. The seeds are valid requests of
// every key and version the broker serves, aimed at the topic, which the
// fuzzer mutates (odd partitions, offsets, sizes, versions, garbage).
func FuzzServerRequests(f *testing.F) {
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	for _, a := range broker.APIs().Rows() {
		for v := a.MinVersion; v <= a.MaxVersion; v++ {
			req := seedRequest(a.Key, v)
			if req != nil {
				f.Add(wire.EncodeRequest(formatter, req, int32(v)))
			}
		}
	}
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1})

	x := servertest.Start(f, 2, nil)
	x.CreateTopic("fz", 2, nil)
	x.Produce("fz", 0, "a", "b", "c")

	f.Fuzz(func(t *testing.T, frame []byte) {
		x.T = t
		var conn env.Conn
		x.ClientEnv().Net().Dial("n1:9092", func(c env.Conn, err error) {
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			conn = c
		})
		x.RunUntil("a connection", func() bool { return conn != nil })
		conn.OnFrame(func([]byte) {})
		conn.OnClose(func(error) {})
		if err := conn.Send(append([]byte(nil), frame...)); err != nil {
			t.Fatal(err)
		}
		// Long enough for a parked fetch's longest wait to end (the
		// fuzzer cannot wait 5 minutes: past maxWait it is no answer).
		if err := x.Sim.RunFor(2 * time.Second); err != nil {
			t.Fatalf("the server failed on %x: %v", frame, err)
		}
		conn.Close()
		// The server still serves.
		p, values := x.Fetch("fz", 0, 0)
		if p.ErrorCode != 0 || len(values) < 3 {
			t.Fatalf("after %x the topic reads %v (error %d)", frame, values, p.ErrorCode)
		}
	})
}

// seedRequest is a valid request of key at version v aimed at the fuzz
// topic, or nil for keys without an interesting body.
func seedRequest(key, v int16) kmsg.Request {
	req := kmsg.RequestForKey(key)
	req.SetVersion(v)
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		r.ClientSoftwareName, r.ClientSoftwareVersion = "fuzz", "1.0"
	case *kmsg.MetadataRequest:
		r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("fz")}}
	case *kmsg.ProduceRequest:
		b := record.NewBuilder(record.WithProducer(5, 0, 0))
		b.Append(1_767_225_600_000, []byte("k"), []byte("v"))
		payload, _ := b.AppendTo(nil)
		r.Acks, r.TimeoutMillis = 1, 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "fz"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 1, payload
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
	case *kmsg.FetchRequest:
		r.MaxWaitMillis, r.MinBytes, r.MaxBytes = 100, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "fz"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, 1, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
	case *kmsg.ListOffsetsRequest:
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "fz"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
	case *kmsg.FindCoordinatorRequest:
		r.CoordinatorType, r.CoordinatorKey, r.CoordinatorKeys = 1, "tx", []string{"tx"}
	case *kmsg.InitProducerIDRequest:
		r.TransactionalID, r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch = kmsg.StringPtr("tx"), 60_000, -1, -1
	case *kmsg.AddPartitionsToTxnRequest:
		r.TransactionalID, r.Topics = "tx", []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "fz", Partitions: []int32{0}}}
		r.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: "tx", VerifyOnly: true,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "fz", Partitions: []int32{0}}}}}
	case *kmsg.AddOffsetsToTxnRequest:
		r.TransactionalID, r.Group = "tx", "g"
	case *kmsg.EndTxnRequest:
		r.TransactionalID, r.Commit = "tx", true
	case *kmsg.DescribeTransactionsRequest:
		r.TransactionalIDs = []string{"tx", ""}
	case *kmsg.ListTransactionsRequest:
		r.StateFilters, r.ProducerIDFilters, r.TransactionalIDPattern = []string{"Ongoing", "x"}, []int64{0}, kmsg.StringPtr("t.*")
	}
	return req
}
