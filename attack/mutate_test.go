package attack

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The mutation phase: valid requests of many kinds, encoded with kmsg,
// then bytes flipped, set, inserted, deleted, duplicated or cut, from a
// seeded generator per worker (STRATA_ATTACK_SEED replays a run's
// mutations; the interleaving of workers is the scheduler's). Nothing is
// expected of the answers; the node must not crash, must keep serving the
// victim, and may append only batches that are valid as they arrive
// (checked after: every record of attackMut is one the phase built).
const (
	mutationWorkers = 6
	mutationBurst   = 16 // frames written at once on one connection
	// mutationSilence is how long a worker waits for more answers after
	// the last one before it closes the connection.
	mutationSilence = 300 * time.Millisecond
)

// recentFrames keeps the last frames the mutation phase sent, to report
// if the node dies.
type recentFrames struct {
	mu     sync.Mutex
	frames [][]byte
}

func (rf *recentFrames) add(f []byte) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.frames = append(rf.frames, f)
	if len(rf.frames) > 4*mutationWorkers*mutationBurst {
		rf.frames = rf.frames[len(rf.frames)-2*mutationWorkers*mutationBurst:]
	}
}

func (rf *recentFrames) dump() string {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	out := ""
	for _, f := range rf.frames {
		out += hex.EncodeToString(f) + "\n"
	}
	return out
}

// mutValid is every record (key → value) a valid Produce of the mutation
// phase carried: whatever of attackMut a consumer reads must be among them.
type mutValid struct {
	mu sync.Mutex
	m  map[string]string
}

func (mv *mutValid) add(recs []goodRecord) {
	mv.mu.Lock()
	defer mv.mu.Unlock()
	if mv.m == nil {
		mv.m = map[string]string{}
	}
	for _, g := range recs {
		mv.m[g.key] = g.value
	}
}

func (mv *mutValid) get(key string) (string, bool) {
	mv.mu.Lock()
	defer mv.mu.Unlock()
	v, ok := mv.m[key]
	return v, ok
}

// nodeVersions asks the node's ApiVersions what it serves: key → [min, max].
func nodeVersions(addr string) (map[int16][2]int16, error) {
	c, err := dialFrom(victimAddr, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "attack", "1"
	resp, err := roundTrip(c, req, 5*time.Second)
	if err != nil {
		return nil, err
	}
	out := map[int16][2]int16{}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return out, nil
}

// baseRequest builds one valid request of a kind (names only of the
// mutation phase's topic and groups: a mutated request can reach no other
// topic by a flipped byte, since every other name differs in length or in
// many bytes).
type baseRequest func(rng *rand.Rand, r *run, seq int) kmsg.Request

func baseRequests(valid *mutValid) []baseRequest {
	return []baseRequest{
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // Produce
			codec := codecs[rng.IntN(len(codecs))]
			b, recs := goodBatch(rng, fmt.Sprintf("mut-%d-%x", seq, rng.Uint32()), 1+rng.IntN(5), codec)
			valid.add(recs)
			req := produceRequest(part{mutTopic, int32(rng.IntN(2)), b})
			req.Acks = []int16{-1, 1, 0}[rng.IntN(3)]
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // Fetch
			req := kmsg.NewPtrFetchRequest()
			req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = int32(rng.IntN(50)), 1, 1<<20, -1
			req.ReplicaID = -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = mutTopic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = int32(rng.IntN(2)), int64(rng.IntN(10)), 1<<20, -1, -1
			rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
			req.Topics = []kmsg.FetchRequestTopic{rt}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // Metadata
			req := kmsg.NewPtrMetadataRequest()
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr(mutTopic)
			req.Topics = []kmsg.MetadataRequestTopic{t}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // ListOffsets
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = mutTopic
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch = int32(rng.IntN(2)), -1
			rp.Timestamp = []int64{-1, -2, -3, time.Now().UnixMilli() - 1000}[rng.IntN(4)]
			rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
			req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // OffsetCommit
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation, req.MemberID = "mut-group", -1, ""
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = mutTopic
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = int32(rng.IntN(2)), int64(rng.IntN(100)), -1
			rp.Metadata = kmsg.StringPtr("m")
			rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
			req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // OffsetFetch
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Group = "mut-group"
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic = mutTopic
			rt.Partitions = []int32{0, 1}
			req.Topics = []kmsg.OffsetFetchRequestTopic{rt}
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "mut-group"
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = mutTopic, []int32{0, 1}
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{gt}
			req.Groups = []kmsg.OffsetFetchRequestGroup{g}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // FindCoordinator
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType = int8(rng.IntN(2))
			req.CoordinatorKey = []string{"mut-group", "mut-txn"}[req.CoordinatorType]
			req.CoordinatorKeys = []string{req.CoordinatorKey}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // JoinGroup
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = fmt.Sprintf("mut-join-%d", rng.IntN(4)), 6000, 1000
			req.ProtocolType = "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			meta := kmsg.NewConsumerMemberMetadata()
			meta.Topics = []string{mutTopic}
			p.Metadata = meta.AppendTo(nil)
			req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // SyncGroup
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.Generation, req.MemberID = "mut-join-0", 1, "member-1"
			req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // Heartbeat
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.Generation, req.MemberID = "mut-join-1", 1, "member-1"
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // LeaveGroup
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Group, req.MemberID = "mut-join-2", "member-1"
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "member-1"
			req.Members = []kmsg.LeaveGroupRequestMember{m}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // InitProducerId
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = 60000, -1, -1
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // CreateTopics
			// A manual assignment of one partition with -1 counts: a
			// flipped count is refused, a flipped array length does not
			// parse, so no mutation creates thousands of partitions.
			req := kmsg.NewPtrCreateTopicsRequest()
			req.TimeoutMillis, req.ValidateOnly = 5000, rng.IntN(2) == 0
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = fmt.Sprintf("mut-created-%d", rng.IntN(1000)), -1, -1
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Replicas = []int32{selfID}
			t.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{a}
			req.Topics = []kmsg.CreateTopicsRequestTopic{t}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // DescribeConfigs
			req := kmsg.NewPtrDescribeConfigsRequest()
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, mutTopic
			req.Resources = []kmsg.DescribeConfigsRequestResource{rr}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // DescribeGroups
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Groups = []string{"mut-group", "mut-join-0"}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { return kmsg.NewPtrListGroupsRequest() },
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { return kmsg.NewPtrDescribeClusterRequest() },
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // ApiVersions
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "attack", "1.0"
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // OffsetForLeaderEpoch
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = mutTopic
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = int32(rng.IntN(2)), -1, 0
			rt.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{rp}
			req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{rt}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // AddPartitionsToTxn
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = "mut-txn", 1, 0
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = mutTopic, []int32{0}
			req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{rt}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // DescribeProducers
			req := kmsg.NewPtrDescribeProducersRequest()
			rt := kmsg.NewDescribeProducersRequestTopic()
			rt.Topic, rt.Partitions = mutTopic, []int32{0, 1}
			req.Topics = []kmsg.DescribeProducersRequestTopic{rt}
			return req
		},
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { return kmsg.NewPtrListTransactionsRequest() },
		func(rng *rand.Rand, r *run, seq int) kmsg.Request { // SaslHandshake
			req := kmsg.NewPtrSASLHandshakeRequest()
			req.Mechanism = "PLAIN"
			return req
		},
	}
}

// interesting are values that break lengths and counts.
var interesting = []int64{0, -1, 1, math.MaxInt8, math.MinInt8, math.MaxInt16, math.MinInt16, math.MaxInt32, math.MinInt32,
	math.MaxInt64, math.MinInt64, 1 << 30, 100 << 20, 0x7ffe, 255, 256}

// mutate changes frame (header and body, without the size prefix) in one
// to three ways.
func mutate(rng *rand.Rand, frame []byte, other []byte) []byte {
	f := append([]byte(nil), frame...)
	for range 1 + rng.IntN(3) {
		if len(f) == 0 {
			f = append(f, byte(rng.Uint32()))
		}
		pos := rng.IntN(len(f))
		switch rng.IntN(9) {
		case 0: // flip a bit
			f[pos] ^= 1 << rng.IntN(8)
		case 1: // an edge byte
			f[pos] = []byte{0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe}[rng.IntN(6)]
		case 2: // an edge integer, big-endian, over 2, 4 or 8 bytes
			w := []int{2, 4, 8}[rng.IntN(3)]
			if pos+w <= len(f) {
				v := uint64(interesting[rng.IntN(len(interesting))])
				switch w {
				case 2:
					binary.BigEndian.PutUint16(f[pos:], uint16(v))
				case 4:
					binary.BigEndian.PutUint32(f[pos:], uint32(v))
				case 8:
					binary.BigEndian.PutUint64(f[pos:], v)
				}
			}
		case 3: // insert random bytes
			ins := make([]byte, 1+rng.IntN(16))
			for i := range ins {
				ins[i] = byte(rng.Uint32())
			}
			f = append(f[:pos], append(ins, f[pos:]...)...)
		case 4: // delete bytes
			n := min(1+rng.IntN(16), len(f)-pos)
			f = append(f[:pos], f[pos+n:]...)
		case 5: // cut
			f = f[:pos]
		case 6: // duplicate a chunk
			n := min(1+rng.IntN(64), len(f)-pos)
			at := rng.IntN(len(f))
			chunk := append([]byte(nil), f[pos:pos+n]...)
			f = append(f[:at], append(chunk, f[at:]...)...)
		case 7: // a bit of the header (key, version, correlation id, client id)
			f[rng.IntN(min(len(f), 14))] ^= 1 << rng.IntN(8)
		case 8: // splice with another request
			if len(other) > 0 {
				f = append(f[:pos], other[rng.IntN(len(other)):]...)
			}
		}
	}
	return f
}

// attackMutations sends thousands of mutated valid requests from several
// connections, mutationBurst at a time, reading what comes back until the
// node closes the connection or goes silent.
func attackMutations(ctx context.Context, r *run) string {
	versions, err := nodeVersions(r.node.BrokerAddr)
	if err != nil {
		r.finding("ApiVersions: %v", err)
		return ""
	}
	bases := baseRequests(&r.mutValid)
	var sent, answers, closes, lies atomic.Int64
	workers(ctx, mutationWorkers, func(ctx context.Context, w int) {
		rng := rand.New(rand.NewPCG(r.seed, 1000+uint64(w)))
		for seq := 0; ctx.Err() == nil; seq++ {
			conn, err := dialFrom(fmt.Sprintf(fromMutations, 20+w), r.node.BrokerAddr)
			if err != nil {
				r.finding("dial: %v", err)
				sleepCtx(ctx, 100*time.Millisecond)
				continue
			}
			var out []byte
			var prev []byte
			for i := range mutationBurst {
				req := bases[rng.IntN(len(bases))](rng, r, seq*mutationBurst+i)
				v := versions[req.Key()]
				hi := min(v[1], req.MaxVersion())
				if hi < v[0] {
					continue
				}
				req.SetVersion(v[0] + int16(rng.IntN(int(hi-v[0])+1)))
				frame := encode(req, int32(rng.Uint32()>>1), "mutant")[4:]
				m := mutate(rng, frame, prev)
				prev = frame
				size := len(m)
				if rng.IntN(20) == 0 && size > 1 { // a size prefix that ends the frame early
					size = rng.IntN(size)
					lies.Add(1)
				}
				f := append(binary.BigEndian.AppendUint32(nil, uint32(size)), m...)
				r.recent.add(f)
				out = append(out, f...)
				sent.Add(1)
			}
			n, closed := burst(conn, out)
			answers.Add(int64(n))
			if closed {
				closes.Add(1)
			}
			_ = conn.Close()
		}
	})
	return fmt.Sprintf("%d mutated requests (%d with a short size prefix), %d answers, %d connections closed by the node",
		sent.Load(), lies.Load(), answers.Load(), closes.Load())
}

// burst writes out and reads answers until the node closes the
// connection (closed) or is silent for mutationSilence.
func burst(conn net.Conn, out []byte) (answers int, closed bool) {
	go func() {
		_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = conn.Write(out)
	}()
	for {
		_ = conn.SetReadDeadline(time.Now().Add(mutationSilence))
		if _, err := readFrame(conn); err != nil {
			var ne net.Error
			return answers, !(errors.As(err, &ne) && ne.Timeout())
		}
		answers++
	}
}
