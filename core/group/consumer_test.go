package group

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicID is a test topic's id: its name's bytes.
func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	return id
}

// consumerRig drives one consumer group of a shard from a datadriven
// script.
type consumerRig struct {
	*rig
	group  string
	topics []TopicInfo
	// classic members by alias (migrate_test.go), aliases in order.
	classic map[string]*classicClient
	aliases []string
}

func newConsumerRig(t *testing.T) *consumerRig {
	cfg := testCfg
	cfg.ConsumerSessionTimeout = 45 * time.Second
	return &consumerRig{rig: newRig(t, cfg), group: "g"}
}

// runScripts runs each testdata script whose name contains part on a
// fresh rig, cmd(t) serving its commands.
func runScripts(t *testing.T, part string, cmd func(t *testing.T) func(*testing.T, *datadriven.TestData) string) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.Contains(path, part) {
			datadriven.RunTest(t, path, cmd(t))
		}
	})
}

// TestConsumerScripts runs testdata/consumer_*.txt: KIP-848 heartbeats
// against a shard whose writes commit after a millisecond.
//
//	topics            lines of "name partitions": the metadata image
//	heartbeat m=ID epoch=N [topics=a,b] [regex=R] [owned=t-0,t-1|none]
//	          [assignor=A] [instance=I] [rebalance-timeout=ms] [version=V]
//	state             the group's epochs and members
//	tick D            time passes (timers fire)
//	replay            a new shard replays every record: same state?
//	replayed          the state a new shard replays
//	topics-while-down partitions=N   the first topic grows, unseen by the shard
//	commit [m=ID] epoch=N [version=V]   an OffsetCommit of t-0 at 7
//	fetch m=ID epoch=N   an OffsetFetch v9 of every offset
//	txn-commit [m=ID] epoch=N   a TxnOffsetCommit v4 of t-0 (producer 1)
//	classic-join      a classic member joins (JoinGroup v9)
//	delete            DeleteGroups
//	fail-writes, heal-writes   the shard's writes fail, or succeed again
//	describe          ConsumerGroupDescribe, DescribeGroups, ListGroups
//	policy, classic-join m=, classic-sync, classic-beat, classic-leave
//	                  classic members by alias (migrate_test.go)
func TestConsumerScripts(t *testing.T) {
	runScripts(t, "consumer_", func(t *testing.T) func(*testing.T, *datadriven.TestData) string { return newConsumerRig(t).cmd })
}

func (c *consumerRig) cmd(t *testing.T, d *datadriven.TestData) string {
	if out, ok := c.classicCmd(t, d); ok {
		return out
	}
	switch d.Cmd {
	case "topics":
		c.topics = nil
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			n, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			c.topics = append(c.topics, TopicInfo{Name: f[0], ID: topicID(f[0]), Partitions: int32(n)})
		}
		c.shard.SetTopics(c.topics)
		c.run(10 * time.Millisecond)
		return c.state(c.shard)
	case "topics-while-down":
		// The image changes while no coordinator serves the group: only
		// the next one (replayed) sees it.
		var n int
		d.ScanArgs(t, "partitions", &n)
		c.topics[0].Partitions = int32(n)
		return "ok\n"
	case "heartbeat":
		return c.heartbeat(t, d)
	case "state":
		return c.state(c.shard)
	case "tick":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		require.NoError(t, err)
		c.run(dur)
		return c.state(c.shard)
	case "commit":
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group = 9, c.group
		if d.HasArg("m") {
			d.ScanArgs(t, "m", &req.MemberID)
		}
		d.ScanArgs(t, "epoch", &req.Generation)
		if d.HasArg("version") {
			d.ScanArgs(t, "version", &req.Version)
		}
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = c.topics[0].Name
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 7
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		got := await(c.rig, func(done func(*kmsg.OffsetCommitResponse)) { c.shard.Commit(req, nil, done) })
		return errName(got.Topics[0].Partitions[0].ErrorCode) + "\n"
	case "txn-commit":
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.Group, req.TransactionalID, req.ProducerID = 4, c.group, "tx", 1
		if d.HasArg("m") {
			d.ScanArgs(t, "m", &req.MemberID)
		}
		d.ScanArgs(t, "epoch", &req.Generation)
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = c.topics[0].Name
		rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		got := await(c.rig, func(done func(*kmsg.TxnOffsetCommitResponse)) { c.shard.TxnCommit(req, nil, done) })
		return errName(got.Topics[0].Partitions[0].ErrorCode) + "\n"
	case "fetch":
		var member string
		var epoch int32
		d.ScanArgs(t, "m", &member)
		d.ScanArgs(t, "epoch", &epoch)
		out := c.shard.FetchAs(c.group, &member, epoch, nil, true)
		if out.ErrorCode != 0 {
			return errName(out.ErrorCode) + "\n"
		}
		return fmt.Sprintf("ok, %d topics\n", len(out.Topics))
	case "classic-join":
		got := await(c.rig, func(done func(*kmsg.JoinGroupResponse)) {
			c.shard.Join(joinReq(c.group, "", nil, "m"), Client{ID: "classic"}, done)
		})
		if got.ErrorCode == kerr.MemberIDRequired.Code {
			member := got.MemberID
			got = await(c.rig, func(done func(*kmsg.JoinGroupResponse)) {
				c.shard.Join(joinReq(c.group, member, nil, "m"), Client{ID: "classic"}, done)
			})
		}
		if got.ErrorCode != 0 {
			return errName(got.ErrorCode) + "\n"
		}
		return fmt.Sprintf("joined generation %d\n", got.Generation)
	case "delete":
		var code int16 = -1
		c.shard.Delete(c.group, func(r int16) { code = r })
		c.run(10 * time.Millisecond)
		return errName(code) + "\n"
	case "fail-writes":
		c.failWrites = kerr.NotEnoughReplicas
		return "writes fail\n"
	case "heal-writes":
		c.failWrites = nil
		return "writes succeed\n"
	case "describe":
		g := c.shard.DescribeConsumer(c.group)
		if g.ErrorCode != 0 {
			return errName(g.ErrorCode) + "\n"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s epoch %d assignment epoch %d assignor %s\n", g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName)
		for _, m := range g.Members {
			var parts []string
			for _, tp := range m.Assignment.TopicPartitions {
				for _, p := range tp.Partitions {
					parts = append(parts, fmt.Sprintf("%s-%d", tp.Topic, p))
				}
			}
			fmt.Fprintf(&b, "  %s epoch %d client %s host %s assigned [%s]\n", m.MemberID, m.MemberEpoch, m.ClientID, m.ClientHost, strings.Join(parts, " "))
		}
		classic := c.shard.Describe(c.group)
		fmt.Fprintf(&b, "DescribeGroups: %s, %d members\n", classic.State, len(classic.Members))
		for _, lg := range c.shard.List(nil, []string{"consumer"}) {
			fmt.Fprintf(&b, "ListGroups type consumer: %s %s %s\n", lg.Group, lg.GroupState, lg.ProtocolType)
		}
		return b.String()
	case "replayed":
		sh := c.replayedWithTopics()
		defer sh.Unload()
		return c.state(sh)
	case "replay":
		sh := c.replayedWithTopics()
		before, after := c.state(c.shard), c.state(sh)
		sh.Unload() // its timers must not write into the script's log
		require.Equal(t, before, after, "the replayed shard differs")
		return "same state\n"
	}
	t.Fatalf("unknown command %s", d.Cmd)
	return ""
}

// replayedWithTopics is a new shard that knows the image's topics (as the
// broker's do from their creation) and replays everything written.
func (c *consumerRig) replayedWithTopics() *Shard {
	sh := c.newShard(c.shard.cfg)
	sh.SetTopics(c.topics)
	for _, rec := range c.written {
		require.NoError(c.t, sh.Replay(rec.Key, rec.Value))
	}
	sh.Loaded()
	return sh
}

func errName(code int16) string {
	if code == 0 {
		return "ok"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

func (c *consumerRig) heartbeat(t *testing.T, d *datadriven.TestData) string {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group = 1, c.group
	req.RebalanceTimeoutMillis = -1
	for _, a := range d.CmdArgs {
		v := ""
		if len(a.Vals) > 0 {
			v = a.Vals[0]
		}
		switch a.Key {
		case "m":
			req.MemberID = v
		case "epoch":
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			req.MemberEpoch = int32(n)
		case "topics":
			req.SubscribedTopicNames = a.Vals
		case "regex":
			req.SubscribedTopicRegex = kmsg.StringPtr(v)
		case "assignor":
			req.ServerAssignor = kmsg.StringPtr(v)
		case "instance":
			req.InstanceID = kmsg.StringPtr(v)
		case "version":
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			req.Version = int16(n)
		case "rebalance-timeout":
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			req.RebalanceTimeoutMillis = int32(n)
		case "owned":
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			for _, tp := range a.Vals {
				if tp == "none" {
					continue
				}
				i := strings.LastIndexByte(tp, '-')
				p, err := strconv.Atoi(tp[i+1:])
				require.NoError(t, err)
				id := topicID(tp[:i])
				j := len(req.Topics) - 1
				if j < 0 || req.Topics[j].TopicID != id {
					req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id})
					j++
				}
				req.Topics[j].Partitions = append(req.Topics[j].Partitions, int32(p))
			}
		default:
			t.Fatalf("unknown heartbeat argument %s", a.Key)
		}
	}
	if req.MemberEpoch == 0 && req.RebalanceTimeoutMillis == -1 {
		req.RebalanceTimeoutMillis = 30000
	}
	var got *kmsg.ConsumerGroupHeartbeatResponse
	c.shard.ConsumerHeartbeat(req, Client{ID: "client", Host: "/10.0.0.1"}, func(r *kmsg.ConsumerGroupHeartbeatResponse) {
		require.Nil(t, got, "answered twice")
		got = r
	})
	c.run(10 * time.Millisecond)
	require.NotNil(t, got, "not answered")
	var b strings.Builder
	if got.ErrorCode != 0 {
		fmt.Fprintf(&b, "error %s\n", errName(got.ErrorCode))
		return b.String()
	}
	fmt.Fprintf(&b, "epoch %d", got.MemberEpoch)
	if got.Assignment != nil {
		var ps parts
		for _, tp := range got.Assignment.Topics {
			for _, p := range tp.Partitions {
				ps = append(ps, tpid{tp.TopicID, p})
			}
		}
		fmt.Fprintf(&b, " assignment [%s]", strings.Join(c.shard.partNames(ps), " "))
	}
	b.WriteString("\n")
	return b.String()
}

// state prints a shard's group: epochs, state, members and the first
// topic's partition 0 offset.
func (c *consumerRig) state(sh *Shard) string {
	g := sh.Group(c.group)
	if g == nil {
		return "no group\n"
	}
	var b strings.Builder
	if !g.IsConsumer() {
		fmt.Fprintf(&b, "classic group %s\n", g.State())
		if len(g.members) > 0 && len(c.aliases) > 0 {
			fmt.Fprintf(&b, "  generation %d members", g.generation)
			for _, m := range g.members {
				fmt.Fprintf(&b, " %s", c.alias(m.id))
			}
			b.WriteString("\n")
		}
	} else {
		epoch, aepoch := g.ConsumerEpochs()
		fmt.Fprintf(&b, "group epoch %d, assignment epoch %d, %s\n", epoch, aepoch, g.ConsumerState())
		for _, m := range g.ConsumerMembers() {
			kind := ""
			if m.Classic {
				kind = " (classic)"
			}
			fmt.Fprintf(&b, "  %s%s epoch %d %s assigned [%s]", c.alias(m.ID), kind, m.Epoch, m.State, strings.Join(m.Assigned, " "))
			if len(m.Revoking) > 0 {
				fmt.Fprintf(&b, " revoking [%s]", strings.Join(m.Revoking, " "))
			}
			fmt.Fprintf(&b, " target [%s]\n", strings.Join(m.Target, " "))
		}
	}
	if len(c.topics) > 0 {
		if o := g.Offset(c.topics[0].Name, 0); o >= 0 {
			fmt.Fprintf(&b, "  offset %s-0 = %d\n", c.topics[0].Name, o)
		}
	}
	return b.String()
}
