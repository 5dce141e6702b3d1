package group

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicClient is a classic member the script drives by its alias.
type classicClient struct {
	id         string
	generation int32
	// waiting is its JoinGroup or SyncGroup in flight, answered into
	// answer (printed by the command that sees it answered).
	waiting string
	answer  string
}

// classicCmd runs the classic-protocol commands of the scripts:
//
//	policy P                   group.consumer.migration.policy
//	classic-join m=A topics=t [owned=t-0,t-1|none] [eager]
//	                           a JoinGroup (KIP-394's two steps for a new
//	                           member): cooperative-sticky (v1 metadata
//	                           with owned partitions) or, eager, range
//	classic-sync m=A [assign=A:t-0:t-1,B:t-2]   a SyncGroup (the leader's
//	                           assignment, if given)
//	classic-beat m=A           a Heartbeat
//	classic-leave m=A          a LeaveGroup
//
// Each prints the answers that came in (its own and earlier waiting
// ones), or "waiting".
func (c *consumerRig) classicCmd(t *testing.T, d *datadriven.TestData) (string, bool) {
	if c.classic == nil {
		c.classic = map[string]*classicClient{}
	}
	if strings.HasPrefix(d.Cmd, "classic-") && !d.HasArg("m") {
		return "", false // consumer_test.go's classic-join
	}
	alias := ""
	if d.HasArg("m") && d.Cmd != "heartbeat" && d.Cmd != "commit" && d.Cmd != "fetch" {
		d.ScanArgs(t, "m", &alias)
	}
	cl := c.classic[alias]
	if cl == nil && alias != "" {
		cl = &classicClient{}
		c.classic[alias] = cl
		c.aliases = append(c.aliases, alias)
	}
	switch d.Cmd {
	case "policy":
		p, err := ParseMigrationPolicy(d.CmdArgs[0].Key)
		require.NoError(t, err)
		c.shard.cfg.MigrationPolicy = p
		return "policy " + string(p) + "\n", true
	case "classic-join":
		req := c.classicJoinReq(t, d, cl)
		if cl.id == "" {
			var first *kmsg.JoinGroupResponse
			c.shard.Join(req, Client{ID: alias, Host: "/10.0.0.2"}, func(r *kmsg.JoinGroupResponse) { first = r })
			c.run(10 * time.Millisecond)
			require.NotNil(t, first)
			if first.ErrorCode != kerr.MemberIDRequired.Code {
				return "error " + errName(first.ErrorCode) + "\n", true
			}
			cl.id = first.MemberID
			req = c.classicJoinReq(t, d, cl)
		}
		cl.waiting, cl.answer = "join", ""
		c.shard.Join(req, Client{ID: alias, Host: "/10.0.0.2"}, func(r *kmsg.JoinGroupResponse) {
			cl.waiting = ""
			if r.ErrorCode != 0 {
				cl.answer = "join error " + errName(r.ErrorCode)
				return
			}
			cl.generation = r.Generation
			cl.answer = fmt.Sprintf("joined generation %d", r.Generation)
			if r.LeaderID == cl.id {
				cl.answer += " leader"
			}
		})
	case "classic-sync":
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 5, c.group, cl.id, cl.generation
		req.ProtocolType = kmsg.StringPtr("consumer")
		if d.HasArg("assign") {
			for _, arg := range d.CmdArgs {
				if arg.Key != "assign" {
					continue
				}
				for _, v := range splitVals(arg.Vals) {
					f := strings.Split(v, ":")
					a := kmsg.NewConsumerMemberAssignment()
					for _, p := range f[1:] {
						i := strings.LastIndexByte(p, '-')
						n, err := strconv.Atoi(p[i+1:])
						require.NoError(t, err)
						if len(a.Topics) == 0 || a.Topics[len(a.Topics)-1].Topic != p[:i] {
							a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: p[:i]})
						}
						a.Topics[len(a.Topics)-1].Partitions = append(a.Topics[len(a.Topics)-1].Partitions, int32(n))
					}
					req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{
						MemberID: c.classic[f[0]].id, MemberAssignment: a.AppendTo(nil)})
				}
			}
		}
		cl.waiting, cl.answer = "sync", ""
		c.shard.Sync(req, func(r *kmsg.SyncGroupResponse) {
			cl.waiting = ""
			if r.ErrorCode != 0 {
				cl.answer = "sync error " + errName(r.ErrorCode)
				return
			}
			var a kmsg.ConsumerMemberAssignment
			var ps []string
			if len(r.MemberAssignment) > 0 {
				require.NoError(t, a.ReadFrom(r.MemberAssignment))
			}
			for _, tp := range a.Topics {
				for _, p := range tp.Partitions {
					ps = append(ps, fmt.Sprintf("%s-%d", tp.Topic, p))
				}
			}
			cl.answer = fmt.Sprintf("synced [%s]", strings.Join(ps, " "))
		})
	case "classic-beat":
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 4, c.group, cl.id, cl.generation
		cl.answer = "heartbeat " + errName(c.shard.Heartbeat(req).ErrorCode)
	case "classic-leave":
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group = 3, c.group
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: cl.id}}
		resp := c.shard.Leave(req)
		cl.answer = "left " + errName(resp.Members[0].ErrorCode)
	default:
		return "", false
	}
	c.run(10 * time.Millisecond)
	return c.classicAnswers(), true
}

// classicAnswers prints the answers that came in since the last command,
// and who is still waiting.
func (c *consumerRig) classicAnswers() string {
	var b strings.Builder
	for _, a := range c.aliases {
		cl := c.classic[a]
		switch {
		case cl.answer != "":
			fmt.Fprintf(&b, "%s: %s\n", a, cl.answer)
			cl.answer = ""
		case cl.waiting != "":
			fmt.Fprintf(&b, "%s: %s waiting\n", a, cl.waiting)
		}
	}
	if b.Len() == 0 {
		return "ok\n"
	}
	return b.String()
}

func (c *consumerRig) classicJoinReq(t *testing.T, d *datadriven.TestData, cl *classicClient) *kmsg.JoinGroupRequest {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 1
	var topics []string
	d.ScanArgs(t, "topics", &topics)
	meta.Topics = topics
	name := "cooperative-sticky"
	if d.HasArg("eager") {
		name, meta.Version = "range", 0
	}
	for _, arg := range d.CmdArgs {
		if arg.Key != "owned" {
			continue
		}
		for _, v := range splitVals(arg.Vals) {
			if v == "none" {
				continue
			}
			i := strings.LastIndexByte(v, '-')
			n, err := strconv.Atoi(v[i+1:])
			require.NoError(t, err)
			j := slices.IndexFunc(meta.OwnedPartitions, func(o kmsg.ConsumerMemberMetadataOwnedPartition) bool { return o.Topic == v[:i] })
			if j < 0 {
				meta.OwnedPartitions = append(meta.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: v[:i]})
				j = len(meta.OwnedPartitions) - 1
			}
			meta.OwnedPartitions[j].Partitions = append(meta.OwnedPartitions[j].Partitions, int32(n))
		}
	}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID = 9, c.group, cl.id
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 5000
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: name, Metadata: meta.AppendTo(nil)}}
	return req
}

// alias is the script's name for a classic member id.
func (c *consumerRig) alias(id string) string {
	for _, a := range c.aliases {
		if c.classic[a].id == id {
			return a
		}
	}
	return id
}

// splitVals splits a script argument's values at commas too.
func splitVals(vals []string) []string {
	var out []string
	for _, v := range vals {
		out = append(out, strings.Split(v, ",")...)
	}
	return out
}

// A classic member's metadata (ClassicMemberMetadata, tagged field 0 of
// the member's metadata record) comes back from the log as it was.
func TestClassicMemberMetadataRecord(t *testing.T) {
	r := newRig(t, testCfg)
	m := &consumerMember{id: "m1", clientID: "c", clientHost: "/h", topicNames: []string{"t"}, rebalanceTimeoutMs: 5000,
		classic: &classicMeta{sessionTimeoutMs: 10000, protocols: []kmsg.JoinGroupRequestProtocol{
			{Name: "cooperative-sticky", Metadata: []byte{0, 1, 2}}, {Name: "range", Metadata: []byte{3}}}}}
	rec := memberMetadataRecord("g", m)
	sh := r.newShard(testCfg)
	require.NoError(t, sh.Replay(rec.Key, rec.Value))
	got := sh.Group("g").consumer.byID["m1"]
	require.NotNil(t, got)
	require.Equal(t, m.classic, got.classic)
	require.Equal(t, m.topicNames, got.topicNames)
	require.Equal(t, int32(5000), got.rebalanceTimeoutMs)

	// A consumer-protocol member's record has no tagged field; a damaged
	// one is refused, not a panic.
	m.classic = nil
	rec = memberMetadataRecord("g", m)
	require.NoError(t, sh.Replay(rec.Key, rec.Value))
	require.Nil(t, sh.Group("g").consumer.byID["m1"].classic)
	m.classic = &classicMeta{sessionTimeoutMs: 1, protocols: []kmsg.JoinGroupRequestProtocol{{Name: "x"}}}
	rec = memberMetadataRecord("g", m)
	for cut := 1; cut < 8; cut++ {
		require.Error(t, sh.Replay(rec.Key, rec.Value[:len(rec.Value)-cut]), "cut %d", cut)
	}
}
