package proccluster

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// NetGroup puts N nodes each in a network namespace of its own, the
// generalisation of Netns (one namespaced node) to cuts between any two
// nodes. The namespaces hang off a bridge in one more namespace (the
// switch), and the root namespace, where the clients run, joins the
// switch by one veth pair:
//
//	node i's namespace (eth0: .(i+1))  --veth--  switch port pi
//	root namespace (stc<pid>: .14)     --veth--  switch port uplink
//
// Every address is in a /28 of 198.18.0.0/15 (RFC 2544's benchmarking
// range; the block is the first one from the test process's pid that no
// address of this host uses): .1 to .N are the nodes, .14 the root end,
// the clients' source address. The switch is a namespace of its own so
// that no firewall of the host (br_netfilter's FORWARD chain) sees the
// bridged traffic.
//
// A cut of the link a -> b is one policy rule inside b's namespace,
// "from <a> blackhole" (the namespace's "lookup local" rule moves from
// priority 0 to 100 at setup, so the blackhole rules at 10 come first):
// what a sends b vanishes on arrival, in silence, while b's packets to a
// and every client's packets (from .14) come and go. Changing the rules
// flushes the route cache, established connections included.
//
// Clogs are tc on the veth ends: a node's egress is its eth0, its
// ingress the switch port's egress. Each end gets an htb root whose
// default class is unlimited, and a clogged class that u32 filters send
// the troubled traffic to (all of it, or what goes to one node): with
// netem, whose leaf delays, jitters (so reorders) and drops; where the
// kernel lacks netem (sch_netem), the clogged class is a slow link
// (NetGroup.Netem reports which).
//
// Only iproute2 is needed; nothing outside the namespaces but the root
// end of one veth pair is touched, and everything is removed in
// t.Cleanup (a crashed run's leftovers by the next run).
type NetGroup struct {
	t      testing.TB
	prefix string // of the namespaces' names
	rootIf string
	addrs  []netip.Addr // the nodes'
	Client netip.Addr   // the root end: the clients' source address
	// Netem reports whether the kernel has tc netem; without it a clog is
	// a slow link.
	Netem bool
	// clogged is, per veth end ({namespace, device}), the destinations
	// its clogged class takes now.
	clogged map[[2]string][]string
}

// netGroupPrefix starts the names of every namespace a NetGroup creates;
// the rest is the creating test process's pid.
const netGroupPrefix = "strata-chaos-"

// clogNetem is the trouble of a clogged class (ClogSpec) with netem.
const clogNetem = "netem delay 200ms 100ms loss 2%"

// clogRate is a clogged class's rate without netem: a congested path,
// which delays what queues behind it.
const clogRate = "64kbit"

// NewNetGroup creates the namespaces of n nodes, the switch and the
// pairs, and removes them in t.Cleanup. It skips (fails under CI=true)
// when not root or when namespaces cannot be created.
func NewNetGroup(t testing.TB, n int) *NetGroup {
	t.Helper()
	require.True(t, n >= 1 && n <= 13, "a NetGroup has 1 to 13 nodes")
	if os.Geteuid() != 0 {
		skipOrFailNetns(t, "not root (euid %d): ip netns needs CAP_SYS_ADMIN", os.Geteuid())
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFailNetns(t, "no %s command (iproute2): %v", tool, err)
		}
	}
	removeStaleNetGroups(t)
	pid := os.Getpid()
	g := &NetGroup{t: t, prefix: netGroupPrefix + strconv.Itoa(pid) + "-", rootIf: netGroupRootIf(pid)}
	a := freeBlock28(t, pid)
	for i := 1; i <= 14; i++ {
		a = a.Next()
		if i <= n {
			g.addrs = append(g.addrs, a)
		}
	}
	g.Client = a

	t.Cleanup(g.remove)
	sw := g.prefix + "sw"
	if _, err := ipCmd("netns", "add", sw); err != nil {
		skipOrFailNetns(t, "%v", err)
	}
	const prefix = "/28"
	cmds := [][]string{
		{"-n", sw, "link", "add", "br0", "type", "bridge"},
		{"-n", sw, "link", "set", "br0", "up"},
		{"link", "add", g.rootIf, "type", "veth", "peer", "name", "uplink", "netns", sw},
		{"-n", sw, "link", "set", "uplink", "master", "br0"},
		{"-n", sw, "link", "set", "uplink", "up"},
		{"addr", "add", g.Client.String() + prefix, "dev", g.rootIf},
		{"link", "set", g.rootIf, "up"},
	}
	for i, a := range g.addrs {
		ns, port := g.Namespace(i), fmt.Sprintf("p%d", i)
		cmds = append(cmds,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", sw},
			[]string{"-n", sw, "link", "set", port, "master", "br0"},
			[]string{"-n", sw, "link", "set", port, "up"},
			[]string{"-n", ns, "addr", "add", a.String() + prefix, "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"}, // the node's metrics listener
			[]string{"-n", ns, "rule", "add", "pref", "100", "lookup", "local"},
			[]string{"-n", ns, "rule", "del", "pref", "0", "lookup", "local"})
	}
	for _, args := range cmds {
		_, err := ipCmd(args...)
		require.NoError(t, err)
	}
	for i := range n {
		for _, dev := range g.clogDevs(i) {
			g.tc(dev[0], "qdisc", "add", "dev", dev[1], "root", "handle", "1:", "htb", "default", "1")
			g.tc(dev[0], "class", "add", "dev", dev[1], "parent", "1:", "classid", "1:1", "htb", "rate", "10gbit")
		}
	}
	_, err := exec.Command("tc", append([]string{"-n", g.Namespace(0), "qdisc", "add", "dev", "lo", "root"}, strings.Fields(clogNetem)...)...).CombinedOutput()
	g.Netem = err == nil
	if g.Netem {
		g.tc(g.Namespace(0), "qdisc", "del", "dev", "lo", "root")
	}
	t.Logf("network namespaces %s0..%d behind switch %s: nodes %v, clients from %s (%s); clogs with %s", g.prefix, n-1, sw, g.addrs, g.Client, g.rootIf, g.ClogMode())
	return g
}

// ClogMode says what a clog does on this kernel.
func (g *NetGroup) ClogMode() string {
	if g.Netem {
		return "tc netem (" + clogNetem + ")"
	}
	return "an htb class of " + clogRate + " (this kernel has no sch_netem)"
}

// freeBlock28 is the first /28 of 198.18.0.0/15 from pid's on that no
// address of this host is in; it returns the block's address .0.
func freeBlock28(t testing.TB, pid int) netip.Addr {
	out, err := ipCmd("-4", "-o", "addr", "show")
	require.NoError(t, err)
	var used []netip.Prefix
	for _, f := range strings.Fields(out) {
		if p, err := netip.ParsePrefix(f); err == nil {
			used = append(used, p)
		}
	}
	b := netnsSubnetBase.As4()
	start := uint32(b[0])<<24 | uint32(b[1])<<16
	const blocks = 1 << 13 // /28s in a /15
	for k := range blocks {
		v := start + uint32((pid+k)%blocks)*16
		blk := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), 28)
		if !slices.ContainsFunc(used, func(p netip.Prefix) bool { return p.Overlaps(blk) }) {
			return blk.Addr()
		}
	}
	require.FailNow(t, "no free /28 in 198.18.0.0/15")
	return netip.Addr{}
}

// removeStaleNetGroups deletes what a crashed earlier run left: the
// namespaces named with netGroupPrefix whose pid is no longer a process,
// and their root link.
// netGroupRootIf is the root end of the veth pair of the run with pid.
func netGroupRootIf(pid int) string { return fmt.Sprintf("stc%d", pid) }

func removeStaleNetGroups(t testing.TB) {
	removeStale(t, netGroupPrefix, netGroupRootIf)
}

func (g *NetGroup) remove() {
	out, _ := ipCmd("netns", "list")
	for _, line := range strings.Split(out, "\n") {
		if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); strings.HasPrefix(name, g.prefix) {
			_, _ = ipCmd("netns", "del", name)
		}
	}
	_, _ = ipCmd("link", "del", g.rootIf)
	awaitGone(g.t, g.prefix, g.rootIf)
}

// Nodes is how many namespaces there are.
func (g *NetGroup) Nodes() int { return len(g.addrs) }

// Namespace is node i's namespace.
func (g *NetGroup) Namespace(i int) string { return g.prefix + strconv.Itoa(i) }

// Addr is node i's address.
func (g *NetGroup) Addr(i int) netip.Addr { return g.addrs[i] }

// Netns is node i's namespace as a Placement takes it (for its Wrap).
func (g *NetGroup) Netns(i int) *Netns { return &Netns{t: g.t, Name: g.Namespace(i)} }

// Placement places node i in its namespace, listening on fixed ports of
// its address (a fresh namespace has nothing listening).
func (g *NetGroup) Placement(i int) Placement {
	a := g.addrs[i].String()
	return Placement{BrokerAddr: a + ":9092", CtrlAddr: a + ":9093", Netns: g.Netns(i)}
}

// Block cuts the link from -> to: to's namespace drops what from sends.
// Blocking a cut link again is an error: count cuts above.
func (g *NetGroup) Block(from, to int) error { return g.blockRule("add", from, to) }

// Unblock lifts Block.
func (g *NetGroup) Unblock(from, to int) error { return g.blockRule("del", from, to) }

func (g *NetGroup) blockRule(op string, from, to int) error {
	_, err := ipCmd("-n", g.Namespace(to), "rule", op, "pref", "10", "from", g.addrs[from].String()+"/32", "blackhole")
	return err
}

// ClogSpec is one clog in force: all of node Node's traffic (To < 0), or
// what Node sends to To.
type ClogSpec struct{ Node, To int }

// SetClogs makes the clogs in force exactly clogs, on every veth end.
func (g *NetGroup) SetClogs(clogs []ClogSpec) error {
	for i := range g.addrs {
		// Node i's egress: everything when i is clogged, else what goes
		// to the nodes its link clogs name.
		var egress, ingress []string
		for _, c := range clogs {
			switch {
			case c.Node == i && c.To < 0:
				egress = append(egress, "0.0.0.0/0")
			case c.Node == i:
				egress = append(egress, g.addrs[c.To].String()+"/32")
			}
			if c.Node == i && c.To < 0 {
				ingress = append(ingress, "0.0.0.0/0")
			}
		}
		devs := g.clogDevs(i)
		if err := g.setClass(devs[0], egress); err != nil {
			return err
		}
		if err := g.setClass(devs[1], ingress); err != nil {
			return err
		}
	}
	return nil
}

// clogDevs are node i's veth ends, as {namespace, device}: its eth0
// (egress from it) and its switch port (egress towards it).
func (g *NetGroup) clogDevs(i int) [2][2]string {
	return [2][2]string{{g.Namespace(i), "eth0"}, {g.prefix + "sw", fmt.Sprintf("p%d", i)}}
}

// setClass sends what goes to dsts on dev through the clogged class 1:2,
// or removes the class without dsts. A device whose dsts did not change
// is left alone, and each change is two runs of tc (-batch): a clog's
// start or end must not lag its schedule by a run of tc per command.
func (g *NetGroup) setClass(dev [2]string, dsts []string) error {
	slices.Sort(dsts)
	dsts = slices.Compact(dsts)
	if g.clogged == nil {
		g.clogged = map[[2]string][]string{}
	}
	if slices.Equal(g.clogged[dev], dsts) {
		return nil
	}
	ns, name := dev[0], dev[1]
	if len(g.clogged[dev]) > 0 {
		// The filters first: the class is in use while they point to it.
		_, _ = tcBatch(ns, true, []string{"filter del dev " + name + " parent 1:", "class del dev " + name + " classid 1:2"})
	}
	delete(g.clogged, dev)
	if len(dsts) == 0 {
		return nil
	}
	var cmds []string
	if g.Netem {
		cmds = append(cmds, "class add dev "+name+" parent 1: classid 1:2 htb rate 10gbit",
			"qdisc add dev "+name+" parent 1:2 handle 20: "+clogNetem)
	} else {
		cmds = append(cmds, "class add dev "+name+" parent 1: classid 1:2 htb rate "+clogRate+" ceil "+clogRate)
	}
	for _, d := range dsts {
		cmds = append(cmds, "filter add dev "+name+" parent 1: protocol ip prio 1 u32 match ip dst "+d+" flowid 1:2")
	}
	if _, err := tcBatch(ns, false, cmds); err != nil {
		return err
	}
	g.clogged[dev] = dsts
	return nil
}

// tcBatch runs the tc commands cmds in namespace ns as one tc -batch
// (with force, past errors).
func tcBatch(ns string, force bool, cmds []string) (string, error) {
	args := []string{"-n", ns, "-batch", "-"}
	if force {
		args = []string{"-n", ns, "-force", "-batch", "-"}
	}
	c := exec.Command("tc", args...)
	c.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	out, err := c.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tc -n %s -batch %q: %w: %s", ns, cmds, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// tc runs tc in ns and fails the test on an error.
func (g *NetGroup) tc(ns string, args ...string) {
	_, err := tcCmd(ns, args...)
	require.NoError(g.t, err)
}

// tcCmd runs tc with args in namespace ns.
func tcCmd(ns string, args ...string) (string, error) {
	out, err := exec.Command("tc", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tc -n %s %s: %w: %s", ns, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
