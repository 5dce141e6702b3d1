package proccluster

import (
	"cmp"
	crand "crypto/rand"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/node"
)

// Spec is one node of a cluster.
type Spec struct {
	ID    int32
	Roles string // "broker,controller", "controller" or "broker"
}

// Combined is n combined broker+controller nodes, ids 1 to n: the
// README's recipe.
func Combined(n int) []Spec {
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = Spec{ID: int32(i + 1), Roles: "broker,controller"}
	}
	return specs
}

// Placement says where a node runs: the addresses its listeners bind
// (with fixed ports where the test cannot ask the OS for free ones, as
// inside a fresh network namespace), the namespace it runs in, and
// the directory of its data.
type Placement struct {
	BrokerAddr, CtrlAddr string // host:port; empty: a free port on 127.0.0.1
	Netns                *Netns // nil: this namespace
	LogDir               string // log.dirs; empty: node-ID under the test's temp dir
}

// Options shape a cluster beyond its specs.
type Options struct {
	// Props are more server.properties lines for every node.
	Props []string
	// Places places some nodes; the others run here on 127.0.0.1.
	Places map[int32]Placement
	// NodeProps are more server.properties lines for one node (its own
	// certificate, say), after Props.
	NodeProps map[int32][]string
}

// Cluster is a set of `strata serve` processes with one cluster id and
// one controller.quorum.voters, each with its own data directory under
// the test's temp dir. Its fault methods take a node id.
type Cluster struct {
	t         testing.TB
	Nodes     []*Node
	Voters    string // controller.quorum.voters
	ClusterID string
}

// Start starts the nodes of specs as processes of the strata binary and
// waits until each logged its start. Every process is SIGKILLed at the
// end of the test.
func Start(t testing.TB, specs []Spec, o Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	brokers, ctrls := map[int32]string{}, map[int32]string{}
	var voters []string
	for _, s := range specs {
		place := o.Places[s.ID]
		if strings.Contains(s.Roles, "broker") {
			brokers[s.ID] = cmp.Or(place.BrokerAddr, FreePort(t))
		}
		if strings.Contains(s.Roles, "controller") {
			ctrls[s.ID] = cmp.Or(place.CtrlAddr, FreePort(t))
			voters = append(voters, fmt.Sprintf("%d@%s", s.ID, ctrls[s.ID]))
		}
	}
	c.Voters = strings.Join(voters, ",")
	var err error
	c.ClusterID, err = node.NewClusterID(crand.Reader)
	require.NoError(t, err)
	dir := t.TempDir()
	for _, s := range specs {
		place := o.Places[s.ID]
		var listeners []string
		if a := brokers[s.ID]; a != "" {
			listeners = append(listeners, "PLAINTEXT://"+a)
		}
		if a := ctrls[s.ID]; a != "" {
			listeners = append(listeners, "CONTROLLER://"+a)
		}
		props := append([]string{
			"node.id=" + strconv.Itoa(int(s.ID)),
			"process.roles=" + s.Roles,
			"listeners=" + strings.Join(listeners, ","),
			"controller.quorum.voters=" + c.Voters,
			"log.dirs=" + cmp.Or(place.LogDir, filepath.Join(dir, fmt.Sprintf("node-%d", s.ID))),
			"metrics.listener=127.0.0.1:0",
		}, o.Props...)
		props = append(props, o.NodeProps[s.ID]...)
		p := NewNode(t, dir, s.ID, props)
		p.Roles, p.BrokerAddr, p.CtrlAddr = s.Roles, brokers[s.ID], ctrls[s.ID]
		if ns := o.Places[s.ID].Netns; ns != nil {
			p.netns, p.Wrap = ns, ns.Wrap()
		}
		p.Spawn(t, c.ClusterID)
		c.Nodes = append(c.Nodes, p)
	}
	for _, p := range c.Nodes {
		p.WaitStarted(t)
	}
	return c
}

// StartCombined starts n combined nodes with props added to each
// server.properties.
func StartCombined(t testing.TB, n int, props ...string) *Cluster {
	t.Helper()
	return Start(t, Combined(n), Options{Props: props})
}

// Node is the node with id, or nil.
func (c *Cluster) Node(id int32) *Node {
	for _, p := range c.Nodes {
		if p.ID == id {
			return p
		}
	}
	return nil
}

func (c *Cluster) node(id int32) *Node {
	c.t.Helper()
	p := c.Node(id)
	require.NotNil(c.t, p, "no node %d", id)
	return p
}

// Kill SIGKILLs node id (kill -9: a crash) and waits until it is gone.
func (c *Cluster) Kill(id int32) { c.node(id).Kill() }

// Restart starts a killed or stopped node id again on its data and
// configuration, and waits until it logged its start.
func (c *Cluster) Restart(id int32) {
	c.t.Helper()
	c.node(id).Start(c.t, c.ClusterID)
}

// Pause SIGSTOPs node id: a silent host, its connections open.
func (c *Cluster) Pause(id int32) { require.NoError(c.t, c.node(id).Pause()) }

// Resume SIGCONTs a paused node id.
func (c *Cluster) Resume(id int32) { require.NoError(c.t, c.node(id).Resume()) }

// Partition cuts node id off from its peers (not from the clients); the
// node must run in a network namespace (Placement.Netns).
func (c *Cluster) Partition(id int32) { c.netnsOf(id).Isolate() }

// Heal joins a partitioned node id to its peers again.
func (c *Cluster) Heal(id int32) { c.netnsOf(id).Heal() }

func (c *Cluster) netnsOf(id int32) *Netns {
	c.t.Helper()
	p := c.node(id)
	require.NotNil(c.t, p.netns, "node %d runs in no network namespace of its own: place it with Placement.Netns", id)
	return p.netns
}

// BrokerAddrs are the client listeners of the nodes not in skip.
func (c *Cluster) BrokerAddrs(skip ...int32) []string {
	return c.addrs(func(p *Node) string { return p.BrokerAddr }, skip)
}

// ControllerAddrs are the controller listeners of the nodes not in skip.
func (c *Cluster) ControllerAddrs(skip ...int32) []string {
	return c.addrs(func(p *Node) string { return p.CtrlAddr }, skip)
}

// addrs are the listeners (of) of the nodes that have one, not in skip.
func (c *Cluster) addrs(of func(*Node) string, skip []int32) []string {
	var out []string
	for _, p := range c.Nodes {
		if a := of(p); a != "" && !slices.Contains(skip, p.ID) {
			out = append(out, a)
		}
	}
	return out
}

// RequireRunning fails the test if a node's process exited by itself.
func (c *Cluster) RequireRunning() {
	c.t.Helper()
	for _, p := range c.Nodes {
		if !p.Alive() {
			require.FailNow(c.t, "a node exited by itself", "node %d (%v):\n%s", p.ID, p.ProcessState(), p.LogText())
		}
	}
}

// WaitFor polls cond until it holds, failing the test with what after d.
func (c *Cluster) WaitFor(d time.Duration, what string, cond func() bool) {
	WaitFor(c.t, d, what, cond)
}

// WaitFor polls cond until it holds, failing t with what after d.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNow(t, what, "after %v", d)
		}
		time.Sleep(pollInterval)
	}
}

// WaitForNoError polls try until it returns nil, failing t with what and
// try's last error after d.
func WaitForNoError(t testing.TB, d time.Duration, what string, try func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := try()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			require.FailNow(t, what, "after %v: %v", d, err)
		}
		time.Sleep(pollInterval)
	}
}

// FreePort is a port on 127.0.0.1 that was free a moment ago (a voter's
// controller port must be known before it starts).
func FreePort(t testing.TB) string {
	t.Helper()
	return FreePortOn(t, netip.AddrFrom4([4]byte{127, 0, 0, 1}))
}
