package controller

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// controllerKeys are the request kinds the controller serves, in the order
// a fuzz input's first byte picks among them.
var controllerKeys = []kmsg.Key{
	kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.CreateTopics, kmsg.DeleteTopics,
	kmsg.CreatePartitions, kmsg.AlterPartition, kmsg.AllocateProducerIDs,
	kmsg.IncrementalAlterConfigs, kmsg.AlterConfigs, kmsg.ElectLeaders,
	kmsg.AlterPartitionAssignments, kmsg.ListPartitionReassignments,
	kmsg.CreateACLs, kmsg.DeleteACLs, kmsg.AlterUserSCRAMCredentials, kmsg.AlterClientQuotas,
}

// fuzzRequest turns a fuzz input into a controller request: kind picks
// the key, version is taken modulo the key's versions, body is parsed as
// that request. ok is false when kmsg cannot parse it (the listener closes
// such a connection before the controller sees anything).
func fuzzRequest(kind uint8, version uint8, body []byte) (kmsg.Request, bool) {
	req := kmsg.RequestForKey(controllerKeys[int(kind)%len(controllerKeys)].Int16())
	req.SetVersion(int16(int(version) % (int(req.MaxVersion()) + 1)))
	if err := req.ReadFrom(body); err != nil {
		return nil, false
	}
	return req, true
}

// addControllerSeed adds req to the corpus.
func addControllerSeed(f *testing.F, req kmsg.Request) {
	for i, k := range controllerKeys {
		if k.Int16() == req.Key() {
			f.Add(uint8(i), uint8(req.GetVersion()), req.AppendTo(nil))
			return
		}
	}
	f.Fatalf("%T is not a controller request", req)
}

// FuzzControllerRequests hands the active controller of a three-broker
// cluster with a replicated topic any request the controller listener
// could receive (issue 22: no network value may reach an assertion), then
// commits, ticks past the session timeout and heartbeats: no input may
// panic, and the controller must keep proposing only records the image
// accepts (the harness replays them). Its seeds are the hostile shapes:
// negative and huge ids, epochs and counts, replica lists with
// duplicates or unknown brokers, int32 overflows.
func FuzzControllerRequests(f *testing.F) {
	for _, req := range hostileControllerRequests() {
		addControllerSeed(f, req)
	}
	f.Fuzz(func(t *testing.T, kind, version uint8, body []byte) {
		req, ok := fuzzRequest(kind, version, body)
		if !ok {
			return
		}
		h := newCluster(t, Config{}, 3)
		h.autoCommit = true
		h.mustCreate(topicSpec{name: "t", partitions: 3, rf: 3})
		handleAndSettle(t, h, req)
	})
}

// handleAndSettle hands the controller a request, which it must take
// without error, then lets the cluster run a minute with heartbeats; the
// committed records must replay.
func handleAndSettle(t *testing.T, h *harness, req kmsg.Request) {
	t.Helper()
	if _, err := h.c.Handle(h.now, req); err != nil {
		t.Fatalf("Handle(%T): %v", req, err)
	}
	h.drain()
	h.commitAll()
	h.tick(time.Second)
	h.heartbeatAll()
	h.tick(time.Minute)
	h.commitAll()
	h.replayCommitted(h.committed)
}

// hostileControllerRequests are the controller-RPC shapes of issue 22's
// attack suite, with the values an attacker or a broken client sends.
func hostileControllerRequests() []kmsg.Request {
	var out []kmsg.Request
	for _, id := range []int32{-1, math.MinInt32, math.MaxInt32, 1} {
		r := registration(id, "evil")
		out = append(out, r)
		dup := registration(id, "dup")
		l := dup.Listeners[0]
		l.Port = 0
		dup.Listeners = append(dup.Listeners, l, l)
		out = append(out, dup)
		for _, epoch := range []int64{-1, math.MaxInt64, math.MinInt64} {
			out = append(out, heartbeatReq(id, epoch, math.MaxInt64, true, true))
			out = append(out, heartbeatReq(id, epoch, -5, false, false))
		}
	}
	for _, ts := range []topicSpec{
		{name: "neg", partitions: -3, rf: -1},
		{name: "huge", partitions: math.MaxInt32, rf: math.MaxInt16},
		{name: "dups", partitions: 1, rf: -1, assignment: [][]int32{{1, 1, 1}}},
		{name: "unknown", partitions: 1, rf: -1, assignment: [][]int32{{9, -1, math.MaxInt32}}},
		{name: "empty", partitions: 1, rf: -1, assignment: [][]int32{{}}},
		{name: "gap", partitions: -1, rf: -1, assignment: [][]int32{{1}, {2}, {3}}},
		{name: "", partitions: 1, rf: 1},
		{name: "../../etc", partitions: 1, rf: 1},
		{name: "cfg", partitions: 1, rf: 1, configs: map[string]string{"segment.bytes": "-1", "min.insync.replicas": "99999999999"}},
	} {
		out = append(out, createTopicsReq(false, ts))
	}
	for _, isr := range [][]int32{{1, 1}, {9}, {}, {-1, 2}, {1, 2, 3, 4, 5}} {
		req := kmsg.NewPtrAlterPartitionRequest()
		req.Version = 3
		req.BrokerID, req.BrokerEpoch = 1, math.MaxInt64
		tp := kmsg.NewAlterPartitionRequestTopic()
		tp.Topic = "t"
		p := kmsg.NewAlterPartitionRequestTopicPartition()
		p.Partition, p.LeaderEpoch, p.PartitionEpoch = 0, math.MaxInt32, math.MinInt32
		for _, id := range isr {
			b := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			b.BrokerID, b.BrokerEpoch = id, -1
			p.NewEpochISR = append(p.NewEpochISR, b)
		}
		p.NewISR = isr
		tp.Partitions = append(tp.Partitions, p, p)
		req.Topics = append(req.Topics, tp)
		old := kmsg.NewPtrAlterPartitionRequest()
		*old = *req
		old.Version = 1
		out = append(out, req, old)
	}
	for _, id := range []int32{-1, 1, 99} {
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = id, math.MaxInt64
		out = append(out, req)
	}
	{
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version = 3
		for _, count := range []int32{math.MaxInt32, -1, 0, 4} {
			t := kmsg.NewCreatePartitionsRequestTopic()
			t.Topic, t.Count = "t", count
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = []int32{1, 1, 9}
			t.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{a}
			req.Topics = append(req.Topics, t)
		}
		out = append(out, req)
	}
	{
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.Version = 0
		t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		t.Topic = "t"
		for _, replicas := range [][]int32{{1, 1}, {9, 8}, {}, {-1}, {3, 2, 1}} {
			p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			p.Partition, p.Replicas = 0, replicas
			t.Partitions = append(t.Partitions, p)
		}
		bad := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		bad.Partition, bad.Replicas = math.MaxInt32, []int32{1}
		t.Partitions = append(t.Partitions, bad)
		req.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{t, t}
		out = append(out, req)
	}
	{
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version = 2
		req.ElectionType = 7
		t := kmsg.NewElectLeadersRequestTopic()
		t.Topic, t.Partitions = "t", []int32{-1, 0, 0, math.MaxInt32}
		req.Topics = []kmsg.ElectLeadersRequestTopic{t, t}
		out = append(out, req)
	}
	{
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		for _, op := range []kmsg.IncrementalAlterConfigOp{kmsg.IncrementalAlterConfigOp(-1), kmsg.IncrementalAlterConfigOpSet, 9} {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			v := "-99999999999999999999"
			c.Name, c.Op, c.Value = "retention.ms", op, &v
			r.Configs = append(r.Configs, c)
		}
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{r, r}
		out = append(out, req)
	}
	{
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = 6
		d := kmsg.NewDeleteTopicsRequestTopic()
		d.TopicID = [16]byte{1}
		empty := kmsg.NewDeleteTopicsRequestTopic()
		req.Topics = []kmsg.DeleteTopicsRequestTopic{d, empty}
		out = append(out, req)
	}
	return append(out, hostileSecurityRequests()...)
}

// hostileSecurityRequests are the security APIs' hostile shapes: enums
// out of range, empty and repeated names, credentials of the wrong size,
// quota values that are not numbers.
func hostileSecurityRequests() []kmsg.Request {
	create := kmsg.NewPtrCreateACLsRequest()
	create.Version = 3
	for _, v := range []int8{-1, 0, 1, 99} {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourcePatternType = kmsg.ACLResourceType(v), kmsg.ACLResourcePatternType(v)
		c.Operation, c.PermissionType = kmsg.ACLOperation(v), kmsg.ACLPermissionType(v)
		c.Principal, c.Host, c.ResourceName = ":", "", ""
		create.Creations = append(create.Creations, c)
	}
	valid := kmsg.NewCreateACLsRequestCreation()
	valid.ResourceType, valid.ResourceName, valid.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypePrefixed
	valid.Principal, valid.Host = "User:a", "*"
	valid.Operation, valid.PermissionType = kmsg.ACLOperationAll, kmsg.ACLPermissionTypeDeny
	create.Creations = append(create.Creations, valid, valid)

	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	for _, v := range []int8{-1, 0, 1, 3, 99} {
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceType(v), kmsg.ACLResourcePatternType(v)
		f.Operation, f.PermissionType = kmsg.ACLOperation(v), kmsg.ACLPermissionType(v)
		del.Filters = append(del.Filters, f)
	}

	scram := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, m := range []int8{-1, 0, 1, 2, 3} {
		scram.Upsertions = append(scram.Upsertions, kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
			Name: string(rune('a' + m + 1)), Mechanism: m, Iterations: math.MaxInt32, SaltedPassword: make([]byte, 64)})
		scram.Deletions = append(scram.Deletions, kmsg.AlterUserSCRAMCredentialsRequestDeletion{Name: "", Mechanism: m})
	}
	scram.Upsertions = append(scram.Upsertions, kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		Name: "ok", Mechanism: 2, Iterations: 4096, Salt: make([]byte, 2048), SaltedPassword: make([]byte, 64)})

	quotas := kmsg.NewPtrAlterClientQuotasRequest()
	quotas.Version = 1
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 0, math.MaxFloat64, 1e-300} {
		quotas.Entries = append(quotas.Entries, kmsg.AlterClientQuotasRequestEntry{
			Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user"}, {Type: "user", Name: kmsg.StringPtr("")}},
			Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "request_percentage", Value: v}},
		}, kmsg.AlterClientQuotasRequestEntry{
			Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id"}},
			Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "request_percentage", Value: v}, {Key: "", Remove: true}},
		})
	}
	quotas.Entries = append(quotas.Entries, kmsg.AlterClientQuotasRequestEntry{})
	return []kmsg.Request{create, del, scram, quotas}
}

// TestHostileControllerRequests runs every hostile shape through the
// fuzz target's body: each answered, none panicking (also run as the fuzz
// corpus).
func TestHostileControllerRequests(t *testing.T) {
	for _, req := range hostileControllerRequests() {
		h := newCluster(t, Config{}, 3)
		h.autoCommit = true
		h.mustCreate(topicSpec{name: "t", partitions: 3, rf: 3})
		resp := h.do(req)
		if resp == nil {
			t.Fatalf("%T: no response", req)
		}
		h.tick(time.Minute)
		h.replayCommitted(h.committed)
	}
}

// FuzzControllerValues builds well-formed controller requests around
// fuzzed numbers (ids, epochs, counts, replica lists), so that, unlike
// FuzzControllerRequests' raw bytes, most inputs get past the stale-epoch
// and unknown-topic gates into the decisions behind them. With real set,
// the broker epoch and partition epochs are the current ones.
func FuzzControllerValues(f *testing.F) {
	f.Add(uint8(0), int32(1), int32(0), int32(1), int64(0), true, []byte{1, 1, 2})
	f.Add(uint8(1), int32(2), int32(7), int32(-1), int64(-1), true, []byte{9, 8, 1})
	f.Add(uint8(2), int32(math.MaxInt32), int32(math.MaxInt32), int32(math.MinInt32), int64(math.MaxInt64), false, []byte{})
	f.Add(uint8(3), int32(1), int32(2), int32(3), int64(5), true, []byte{3, 2, 1, 1})
	f.Add(uint8(4), int32(-1), int32(-1), int32(4), int64(0), true, []byte{255, 0})
	f.Fuzz(func(t *testing.T, kind uint8, a, b, c int32, big int64, real bool, list []byte) {
		h := newCluster(t, Config{}, 3)
		h.autoCommit = true
		h.mustCreate(topicSpec{name: "t", partitions: 3, rf: 3})
		ids := make([]int32, 0, min(len(list), 16))
		for _, x := range list[:min(len(list), 16)] {
			ids = append(ids, int32(int8(x)))
		}
		brokerEpoch := big
		if real {
			brokerEpoch = h.epochs[a]
		}
		var req kmsg.Request
		switch kind % 6 {
		case 0:
			r := kmsg.NewPtrAlterPartitionRequest()
			r.Version = int16(b%4+4) % 4
			r.BrokerID, r.BrokerEpoch = a, brokerEpoch
			tp := kmsg.NewAlterPartitionRequestTopic()
			tp.Topic = "t"
			if ti, ok := h.c.SpeculativeImage().TopicByName("t"); ok {
				tp.TopicID = ti.ID()
			}
			p := kmsg.NewAlterPartitionRequestTopicPartition()
			p.Partition = c
			p.LeaderEpoch, p.PartitionEpoch = b, int32(big)
			if real {
				if part, ok := h.c.SpeculativeImage().Partition(tp.TopicID, c%3); ok {
					p.Partition, p.LeaderEpoch, p.PartitionEpoch = part.ID, part.LeaderEpoch, part.PartitionEpoch
					r.BrokerID, r.BrokerEpoch = part.Leader, h.epochs[part.Leader]
				}
			}
			p.NewISR = ids
			for _, id := range ids {
				e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
				e.BrokerID, e.BrokerEpoch = id, h.epochs[id]
				p.NewEpochISR = append(p.NewEpochISR, e)
			}
			p.LeaderRecoveryState = int8(b)
			tp.Partitions = []kmsg.AlterPartitionRequestTopicPartition{p}
			r.Topics = []kmsg.AlterPartitionRequestTopic{tp}
			req = r
		case 1:
			req = createTopicsReq(false, topicSpec{name: "n", partitions: b, rf: int16(c), assignment: [][]int32{ids}})
		case 2:
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.Version = 3
			tp := kmsg.NewCreatePartitionsRequestTopic()
			tp.Topic, tp.Count = "t", b
			if len(ids) > 0 {
				as := kmsg.NewCreatePartitionsRequestTopicAssignment()
				as.Replicas = ids
				tp.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{as}
			}
			r.Topics = []kmsg.CreatePartitionsRequestTopic{tp}
			req = r
		case 3:
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			tp := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			tp.Topic = "t"
			p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			p.Partition = c
			if real {
				p.Partition = c % 3
			}
			if !(len(ids) == 1 && ids[0] == 0) {
				p.Replicas = ids
			}
			tp.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{p}
			r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{tp}
			req = r
		case 4:
			hb := heartbeatReq(a, brokerEpoch, int64(c), b&1 != 0, b&2 != 0)
			req = hb
		case 5:
			r := registration(a, string(list))
			r.PreviousBrokerEpoch = big
			req = r
		}
		handleAndSettle(t, h, req)
	})
}
