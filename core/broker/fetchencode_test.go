package broker

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/sim"
)

// TestFetchEncodingMatchesKmsg encodes fetch responses of every version
// with file regions for records, joins the parts (reading the regions),
// and requires the result to be exactly kmsg's encoding of the same
// response with those bytes inline, and to decode back to it.
func TestFetchEncodingMatchesKmsg(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1})
	var disk env.Disk
	s.AddProcess("n", func(e env.Env) { disk = e.Disk() }).Start()
	require.NoError(t, s.RunFor(0))
	f, err := disk.Open("seg.log", true)
	require.NoError(t, err)
	content := bytes.Repeat([]byte("0123456789abcdef"), 256)
	require.NoError(t, f.WriteAt(content, 0))

	rack := "r1"
	for v := int16(4); v <= 18; v++ {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = v
		resp.ThrottleMillis, resp.ErrorCode, resp.SessionID = 7, 0, 42
		var regions [][]fetchRegion
		for ti, name := range []string{"alpha", "b"} {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = name
			rt.TopicID = [16]byte{byte(ti + 1), 2, 3}
			var tr []fetchRegion
			for p := int32(0); p < 3; p++ {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = p, 100+int64(p), 99, 3
				rp.PreferredReadReplica = -1
				switch p {
				case 0:
					rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 5, FirstOffset: 6}}
				case 1:
					rp.ErrorCode = 6 // NOT_LEADER_OR_FOLLOWER with a current leader (tagged, v12+)
					rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = 3, 9
					rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = 2, 50
					rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = 40, 1
				}
				region := fetchRegion{}
				if p != 1 {
					region = fetchRegion{file: f, offset: int64(ti*100 + int(p)*7), length: int64(64 + ti*13 + int(p))}
				}
				rt.Partitions = append(rt.Partitions, rp)
				tr = append(tr, region)
			}
			resp.Topics = append(resp.Topics, rt)
			regions = append(regions, tr)
		}
		if v >= 16 {
			resp.Brokers = []kmsg.FetchResponseBroker{{NodeID: 3, Host: "h3", Port: 9092, Rack: &rack}}
		}

		parts := encodeFetchResponse(77, resp, regions)
		var got []byte
		for _, p := range parts {
			if p.File == nil {
				got = append(got, p.Bytes...)
				continue
			}
			b := make([]byte, p.Length)
			_, err := p.File.ReadAt(b, p.Offset)
			require.NoError(t, err)
			got = append(got, b...)
		}

		// kmsg's encoding of the same response with the records inline.
		want := kmsg.NewPtrFetchResponse()
		*want = *resp
		want.Topics = nil
		for i, rt := range resp.Topics {
			ct := rt
			ct.Partitions = nil
			for j, rp := range rt.Partitions {
				r := regions[i][j]
				rp.RecordBatches = content[r.offset : r.offset+r.length]
				ct.Partitions = append(ct.Partitions, rp)
			}
			want.Topics = append(want.Topics, ct)
		}
		wantFrame := appendKmsgResponse(77, want)
		require.Equal(t, wantFrame, got, "v%d: encoding differs from kmsg's", v)
	}
}

func appendKmsgResponse(corr int32, resp kmsg.Response) []byte {
	dst := []byte{byte(corr >> 24), byte(corr >> 16), byte(corr >> 8), byte(corr)}
	if resp.IsFlexible() {
		dst = append(dst, 0)
	}
	return resp.AppendTo(dst)
}
