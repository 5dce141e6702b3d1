package controller

import (
	"fmt"
	"iter"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/internal/coretest"
	"github.com/strata-log/strata/core/meta"
)

// TestScripts runs the scenario scripts in testdata: each command drives
// the controller and prints the proposals it made (offsets and records) and
// the responses it released. Regenerate with -rewrite and read the diff.
//
// Commands:
//
//	init [seed=N] [timeout=D] [unclean] [max-records=N] [cluster=ID]
//	register id=N [inc=TAG] [rack=R] [cluster=ID]
//	heartbeat id=N [epoch=N] [offset=N] [fence] [shutdown]
//	tick advance=D
//	create-topics [validate-only]   one topic per line: NAME [partitions=N] [rf=N] [assign=1,2/2,3] [cfg:KEY=VALUE]
//	delete-topics                   one per line: name=NAME | id-of=NAME
//	create-partitions               one per line: TOPIC count=N [assign=1,2/2,3]
//	alter-partition broker=N [broker-epoch=N] [version=N]
//	                                one per line: TOPIC part=N leader-epoch=N part-epoch=N isr=1,2@EPOCH,... [recovering]
//	elect-leaders [unclean]         one per line: TOPIC part=N
//	allocate-pids broker=N [epoch=N]
//	alter-configs [validate-only]   one per line: TOPIC set:K=V delete:K append:K=V subtract:K=V
//	commit [to=N]
//	resign [truncate]
//	become-leader
//	image [spec]
//
// and the security commands of security_script_test.go.
func TestScripts(t *testing.T) {
	// rapid's failure files live under testdata/rapid.
	coretest.RunScripts(t, "*.txt", func(*testing.T) coretest.Commands { return (&script{}).run })
}

type script struct {
	h              *harness
	shownProposals int
	shownResponses int
}

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "init" && s.h == nil {
		d.Fatalf(t, "init first")
	}
	var out strings.Builder
	switch d.Cmd {
	case "init":
		cfg := Config{}
		seed := uint64(1)
		coretest.ScanOptional(t, d, "seed", &seed)
		if d.HasArg("timeout") {
			cfg.SessionTimeout = scanDuration(t, d, "timeout")
		}
		cfg.UncleanLeaderElection = d.HasArg("unclean")
		coretest.ScanOptional(t, d, "cluster", &cfg.ClusterID)
		coretest.ScanOptional(t, d, "max-records", &cfg.MaxRecordsPerBatch)
		s.h = newHarness(t, cfg, seed)
		s.h.tb = t
		s.shownProposals, s.shownResponses = 0, 0
	case "register":
		var id int
		d.ScanArgs(t, "id", &id)
		inc := "a"
		coretest.ScanOptional(t, d, "inc", &inc)
		req := registration(int32(id), inc)
		if d.HasArg("rack") {
			var rack string
			d.ScanArgs(t, "rack", &rack)
			req.Rack = &rack
		}
		coretest.ScanOptional(t, d, "cluster", &req.ClusterID)
		s.handle(t, req)
	case "heartbeat":
		var id int
		d.ScanArgs(t, "id", &id)
		epoch := int64(-1)
		if b, ok := s.h.c.SpeculativeImage().Broker(int32(id)); ok {
			epoch = b.Epoch
		}
		coretest.ScanOptional(t, d, "epoch", &epoch)
		offset := s.h.committed
		coretest.ScanOptional(t, d, "offset", &offset)
		s.handle(t, heartbeatReq(int32(id), epoch, offset, d.HasArg("fence"), d.HasArg("shutdown")))
	case "tick":
		s.h.now += scanDuration(t, d, "advance")
		s.h.c.Tick(s.h.now)
		s.h.drain()
	case "create-topics":
		var topics []topicSpec
		for _, line := range lines(d.Input) {
			topics = append(topics, parseTopicSpec(t, line))
		}
		s.handle(t, createTopicsReq(d.HasArg("validate-only"), topics...))
	case "delete-topics":
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = 6
		for _, line := range lines(d.Input) {
			k, v, _ := strings.Cut(line, "=")
			dt := kmsg.NewDeleteTopicsRequestTopic()
			switch k {
			case "name":
				dt.Topic = &v
			case "id-of":
				dt.TopicID = s.topicID(v)
			default:
				t.Fatalf("delete-topics: %q", line)
			}
			req.Topics = append(req.Topics, dt)
		}
		s.handle(t, req)
	case "create-partitions":
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version = 3
		for _, line := range lines(d.Input) {
			f := strings.Fields(line)
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic = f[0]
			for k, v := range keyValues(f[1:]) {
				switch k {
				case "count":
					rt.Count = int32(atoi(t, v))
				case "assign":
					rt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{}
					for _, rs := range parseAssignment(t, v) {
						a := kmsg.NewCreatePartitionsRequestTopicAssignment()
						a.Replicas = rs
						rt.Assignment = append(rt.Assignment, a)
					}
				}
			}
			req.Topics = append(req.Topics, rt)
		}
		s.handle(t, req)
	case "alter-partition":
		s.handle(t, s.alterPartitionReq(t, d))
	case "elect-leaders":
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version = 2
		if d.HasArg("unclean") {
			req.ElectionType = electUnclean
		}
		for _, line := range lines(d.Input) {
			f := strings.Fields(line)
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = f[0]
			for k, v := range keyValues(f[1:]) {
				if k == "part" {
					rt.Partitions = append(rt.Partitions, int32(atoi(t, v)))
				}
			}
			req.Topics = append(req.Topics, rt)
		}
		s.handle(t, req)
	case "allocate-pids":
		var broker int
		d.ScanArgs(t, "broker", &broker)
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID = int32(broker)
		if b, ok := s.h.c.SpeculativeImage().Broker(int32(broker)); ok {
			req.BrokerEpoch = b.Epoch
		}
		coretest.ScanOptional(t, d, "epoch", &req.BrokerEpoch)
		s.handle(t, req)
	case "alter-configs":
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = 1
		req.ValidateOnly = d.HasArg("validate-only")
		for _, line := range lines(d.Input) {
			f := strings.Fields(line)
			res := kmsg.NewIncrementalAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, f[0]
			for _, op := range f[1:] {
				name, kv, _ := strings.Cut(op, ":")
				k, v, hasValue := strings.Cut(kv, "=")
				cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				cfg.Name = k
				if hasValue {
					cfg.Value = &v
				}
				switch name {
				case "set":
					cfg.Op = kmsg.IncrementalAlterConfigOpSet
				case "delete":
					cfg.Op = kmsg.IncrementalAlterConfigOpDelete
				case "append":
					cfg.Op = kmsg.IncrementalAlterConfigOpAppend
				case "subtract":
					cfg.Op = kmsg.IncrementalAlterConfigOpSubtract
				default:
					t.Fatalf("alter-configs: op %q", name)
				}
				res.Configs = append(res.Configs, cfg)
			}
			req.Resources = append(req.Resources, res)
		}
		s.handle(t, req)
	case "commit":
		to := int64(len(s.h.log) - 1)
		coretest.ScanOptional(t, d, "to", &to)
		s.h.commit(to)
		fmt.Fprintf(&out, "committed to %d\n", s.h.committed)
	case "resign":
		s.h.resign(d.HasArg("truncate"))
		fmt.Fprintf(&out, "log end %d\n", len(s.h.log))
	case "become-leader":
		next := s.h.becomeLeader()
		fmt.Fprintf(&out, "leader epoch %d, first offset %d\n", s.h.epoch, next)
	case "image":
		img := s.h.c.CommittedImage()
		if d.HasArg("spec") {
			img = s.h.c.SpeculativeImage()
		}
		out.WriteString(s.formatImage(img))
	default:
		if !s.runSecurity(t, d, &out) {
			d.Fatalf(t, "unknown command %s", d.Cmd)
		}
	}
	s.show(&out)
	return out.String()
}

// handle sends a request; its ticket shows in the response lines.
func (s *script) handle(t *testing.T, req kmsg.Request) {
	s.h.tb = t
	s.h.handle(req)
}

// show prints the proposals and responses produced since the last show.
func (s *script) show(out *strings.Builder) {
	for _, p := range s.h.proposals[s.shownProposals:] {
		fmt.Fprintf(out, "propose %d..%d:\n", p.FirstOffset, p.LastOffset)
		for _, r := range p.Records {
			fmt.Fprintf(out, "  %s\n", s.h.formatRecord(r))
		}
	}
	s.shownProposals = len(s.h.proposals)
	for _, r := range s.h.responses[s.shownResponses:] {
		fmt.Fprintf(out, "response #%d %s\n", r.Ticket, s.h.formatResponse(r.Msg))
	}
	s.shownResponses = len(s.h.responses)
	if out.Len() == 0 {
		out.WriteString("ok\n")
	}
}

func (s *script) topicID(name string) [16]byte {
	if t, ok := s.h.c.SpeculativeImage().TopicByName(name); ok {
		return t.ID()
	}
	return [16]byte{0xde, 0xad}
}

func (s *script) alterPartitionReq(t *testing.T, d *datadriven.TestData) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3
	if d.HasArg("version") {
		var v int
		d.ScanArgs(t, "version", &v)
		req.Version = int16(v)
	}
	var broker int
	d.ScanArgs(t, "broker", &broker)
	req.BrokerID = int32(broker)
	if b, ok := s.h.c.SpeculativeImage().Broker(int32(broker)); ok {
		req.BrokerEpoch = b.Epoch
	}
	coretest.ScanOptional(t, d, "broker-epoch", &req.BrokerEpoch)
	for _, line := range lines(d.Input) {
		f := strings.Fields(line)
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.Topic, rt.TopicID = f[0], s.topicID(f[0])
		p := kmsg.NewAlterPartitionRequestTopicPartition()
		for k, v := range keyValues(f[1:]) {
			switch k {
			case "part":
				p.Partition = int32(atoi(t, v))
			case "leader-epoch":
				p.LeaderEpoch = int32(atoi(t, v))
			case "part-epoch":
				p.PartitionEpoch = int32(atoi(t, v))
			case "recovering":
				p.LeaderRecoveryState = leaderRecoveryRecovering
			case "isr":
				p.NewISR, p.NewEpochISR = []int32{}, []kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{}
				for m := range strings.SplitSeq(v, ",") {
					if m == "" {
						continue
					}
					idText, epochText, hasEpoch := strings.Cut(m, "@")
					e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
					e.BrokerID, e.BrokerEpoch = int32(atoi(t, idText)), -1
					if hasEpoch {
						e.BrokerEpoch = int64(atoi(t, epochText))
					}
					p.NewEpochISR = append(p.NewEpochISR, e)
					p.NewISR = append(p.NewISR, e.BrokerID)
				}
			}
		}
		rt.Partitions = append(rt.Partitions, p)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// formatImage prints brokers and partitions.
func (s *script) formatImage(img *meta.Image) string {
	var b strings.Builder
	fmt.Fprintf(&b, "image at %v\n", img.Position())
	for br := range img.Brokers() {
		fmt.Fprintf(&b, "broker %d epoch=%d fenced=%v shutdown=%v\n", br.ID, br.Epoch, br.Fenced, br.InControlledShutdown)
	}
	for t := range img.Topics() {
		for p := range t.Partitions() {
			fmt.Fprintf(&b, "%s-%d replicas=%s isr=%s leader=%d leader-epoch=%d partition-epoch=%d",
				t.Name(), p.ID, ids(p.Replicas), ids(p.ISR), p.Leader, p.LeaderEpoch, p.PartitionEpoch)
			if len(p.ELR) > 0 {
				fmt.Fprintf(&b, " elr=%s", ids(p.ELR))
			}
			if len(p.LastKnownELR) > 0 {
				fmt.Fprintf(&b, " last-known-elr=%s", ids(p.LastKnownELR))
			}
			b.WriteString("\n")
		}
		for _, e := range img.Configs(topicResource(t.Name())) {
			fmt.Fprintf(&b, "%s config %s=%s\n", t.Name(), e.Key, e.Value)
		}
	}
	if p := img.ProducerIDs(); p.NextProducerID != 0 {
		fmt.Fprintf(&b, "next producer id %d\n", p.NextProducerID)
	}
	return b.String()
}

func parseTopicSpec(t *testing.T, line string) topicSpec {
	f := strings.Fields(line)
	ts := topicSpec{name: f[0], partitions: 1, rf: 1, configs: map[string]string{}}
	if ts.name == `""` {
		ts.name = ""
	}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "partitions":
			ts.partitions = int32(atoi(t, v))
		case k == "rf":
			ts.rf = int16(atoi(t, v))
		case k == "assign":
			ts.assignment = parseAssignment(t, v)
			ts.partitions, ts.rf = -1, -1
		case strings.HasPrefix(k, "cfg:"):
			ts.configs[strings.TrimPrefix(k, "cfg:")] = v
		default:
			t.Fatalf("topic spec: %q", kv)
		}
	}
	return ts
}

// keyValues yields the key and the value of each key=value field (a
// field without "=" has an empty value).
func keyValues(fields []string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, kv := range fields {
			k, v, _ := strings.Cut(kv, "=")
			if !yield(k, v) {
				return
			}
		}
	}
}

// parseAssignment parses "1,2/2,3" into [[1 2] [2 3]].
func parseAssignment(t *testing.T, v string) [][]int32 {
	var out [][]int32
	for part := range strings.SplitSeq(v, "/") {
		var replicas []int32
		for r := range strings.SplitSeq(part, ",") {
			if r != "" {
				replicas = append(replicas, int32(atoi(t, r)))
			}
		}
		out = append(out, replicas)
	}
	return out
}

func lines(input string) []string {
	var out []string
	for l := range strings.SplitSeq(input, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

func scanDuration(t *testing.T, d *datadriven.TestData, key string) time.Duration {
	var s string
	d.ScanArgs(t, key, &s)
	dur, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", key, s, err)
	}
	return dur
}
