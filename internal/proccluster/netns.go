package proccluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A network namespace for one node of a test cluster, joined to the root
// namespace by a veth pair. Every address lives on that pair, in a /29
// of 198.18.0.0/15 (RFC 2544's benchmarking range, which no host or
// route here uses; the index is the test process's pid modulo the
// 16,384 /29s, so concurrent runs on one machine do not collide):
//
//	.1, .2  root end: the listeners of the two root-namespace nodes
//	.3      namespace end: the namespaced node's listeners
//	.4      root end: the test's clients bind it as their source address
//
// .1 is added first, so it is the root end's primary address: the
// kernel picks it as the source of every root-namespace connection to .3
// that does not bind another (the nodes' do not; the clients bind .4).
// Isolating the namespaced node from its peers, and not from its
// clients, is then four policy rules inside the namespace: blackhole
// whatever comes from .1 or .2 and whatever goes to them. Packets vanish
// in silence both ways, as in a partition, while the clients' packets
// come and go, so a client can still ask the isolated node to
// acknowledge a write. (The namespace's "lookup local" rule moves from
// priority 0 to 100 at setup, so the blackhole rules at 10 come first
// for packets to the node's own address too.) Only iproute2 is needed,
// and nothing outside the namespace and the pair is touched. 127.0.0.x
// cannot be used across namespaces: each has its own loopback.
type Netns struct {
	t                testing.TB
	Name             string     // the namespace
	rootIf, nsIf     string     // the veth pair's ends
	PeerA, PeerB, NS netip.Addr // the root ends, the namespace end
	Client           netip.Addr // the clients' source address
}

// netnsPrefix starts the names of every namespace and link these tests
// create; the rest is the creating test process's pid.
const netnsPrefix = "strata-test-"

// netnsSubnetBase is the first address of the benchmarking range.
var netnsSubnetBase = netip.MustParseAddr("198.18.0.0")

// skipOrFailNetns skips the test, or fails it under CI=true (CI installs
// iproute2 and runs as root, so a missing namespace there is a broken
// CI), with the reason logged.
func skipOrFailNetns(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("network namespaces are unavailable and CI=true: %s", reason)
	}
	t.Skipf("network namespaces are unavailable: %s", reason)
}

// ipCmd runs ip with args and returns its combined output.
func ipCmd(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// removeStaleNetns deletes the namespaces and links a crashed earlier run
// left: those named with netnsPrefix whose pid is no longer a process.
// Those of a live process (a concurrent run) are left alone.
func removeStaleNetns(t testing.TB) { removeStale(t, netnsPrefix, netnsRootIf) }

// removeStale deletes the namespaces named prefix<pid>[-...] whose pid is
// no longer a process, with the root link rootIf(pid) of their run.
func removeStale(t testing.TB, prefix string, rootIf func(pid int) string) {
	out, err := ipCmd("netns", "list")
	if err != nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, prefix)
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		_, _ = ipCmd("netns", "del", name)
		_, _ = ipCmd("link", "del", rootIf(pid))
		t.Logf("removed namespace %s and link %s left by a run that is gone", name, rootIf(pid))
	}
}

// awaitGone waits until no namespace named with prefix and no link link
// is left (the kernel dismantles a namespace asynchronously: its veth
// pair goes a moment after the delete returns), and fails t after 5 s.
func awaitGone(t testing.TB, prefix, link string) {
	gone := func() bool {
		out, _ := ipCmd("netns", "list")
		_, err := ipCmd("link", "show", link)
		return !strings.Contains(out, prefix) && err != nil
	}
	for deadline := time.Now().Add(5 * time.Second); !gone(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("namespaces %s* or link %s still present 5 s after cleanup", prefix, link)
			return
		}
	}
}

// netnsRootIf is the root end of the veth pair of the run with pid
// (interface names are at most 15 bytes: "stt" and 7 digits and one).
func netnsRootIf(pid int) string { return fmt.Sprintf("stt%dr", pid) }

// NewNetns creates the namespace and the veth pair with their
// addresses, and removes them in t.Cleanup (registered before anything
// is created, so a failure half way still cleans up). It skips (fails
// under CI=true) when not root or when a namespace cannot be created.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFailNetns(t, "not root (euid %d): ip netns needs CAP_SYS_ADMIN", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		skipOrFailNetns(t, "no ip command (iproute2): %v", err)
	}
	removeStaleNetns(t)
	pid := os.Getpid()
	n := &Netns{t: t, Name: netnsPrefix + strconv.Itoa(pid), rootIf: netnsRootIf(pid), nsIf: fmt.Sprintf("stt%dn", pid)}
	base := netnsSubnetBase.As4()
	off := uint32(pid%16384) * 8
	v := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3]) + off
	host := func(i uint32) netip.Addr {
		x := v + i
		return netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})
	}
	n.PeerA, n.PeerB, n.NS, n.Client = host(1), host(2), host(3), host(4)
	if out, _ := ipCmd("-4", "-o", "addr", "show"); strings.Contains(out, " "+n.PeerA.String()+"/") {
		require.FailNow(t, "the test subnet is in use", "%s is already an address of this host:\n%s", n.PeerA, out)
	}

	t.Cleanup(func() {
		// Deleting the namespace destroys its end of the pair, and a
		// veth pair goes as a whole; the link delete is for a namespace
		// whose creation failed after the pair was made.
		// The kernel dismantles a namespace asynchronously: the pair
		// goes a moment after the delete returns.
		_, _ = ipCmd("netns", "del", n.Name)
		_, _ = ipCmd("link", "del", n.rootIf)
		awaitGone(t, n.Name, n.rootIf)
	})
	if _, err := ipCmd("netns", "add", n.Name); err != nil {
		skipOrFailNetns(t, "%v", err)
	}
	const prefix = "/29"
	for _, args := range [][]string{
		{"link", "add", n.rootIf, "type", "veth", "peer", "name", n.nsIf, "netns", n.Name},
		{"addr", "add", n.PeerA.String() + prefix, "dev", n.rootIf}, // first: the primary
		{"addr", "add", n.PeerB.String() + prefix, "dev", n.rootIf},
		{"addr", "add", n.Client.String() + prefix, "dev", n.rootIf},
		{"link", "set", n.rootIf, "up"},
		{"-n", n.Name, "addr", "add", n.NS.String() + prefix, "dev", n.nsIf},
		{"-n", n.Name, "link", "set", n.nsIf, "up"},
		{"-n", n.Name, "link", "set", "lo", "up"}, // the node's metrics listener
		{"-n", n.Name, "rule", "add", "pref", "100", "lookup", "local"},
		{"-n", n.Name, "rule", "del", "pref", "0", "lookup", "local"},
	} {
		_, err := ipCmd(args...)
		require.NoError(t, err)
	}
	t.Logf("namespace %s: %s (veth %s) and root end %s with %s, %s and clients' %s", n.Name, n.NS, n.nsIf, n.rootIf, n.PeerA, n.PeerB, n.Client)
	return n
}

// Wrap is the command prefix that runs a process inside the namespace.
func (n *Netns) Wrap() []string { return []string{"ip", "netns", "exec", n.Name} }

// isolationRules are the policy rules (after "ip rule add|del") that cut
// the namespaced node off from the two root nodes, not from the clients.
func (n *Netns) isolationRules() [][]string {
	var rules [][]string
	for _, peer := range []netip.Addr{n.PeerA, n.PeerB} {
		rules = append(rules,
			[]string{"pref", "10", "from", peer.String() + "/32", "blackhole"},
			[]string{"pref", "10", "to", peer.String() + "/32", "blackhole"})
	}
	return rules
}

// Isolate cuts the namespaced node off from its peers, not from its
// clients; Heal joins it again.
func (n *Netns) Isolate() { n.rules("add") }
func (n *Netns) Heal()    { n.rules("del") }

func (n *Netns) rules(op string) {
	for _, r := range n.isolationRules() {
		_, err := ipCmd(append([]string{"-n", n.Name, "rule", op}, r...)...)
		require.NoError(n.t, err)
	}
}

// ClientDialer dials from the clients' address.
func (n *Netns) ClientDialer() func(ctx context.Context, network, host string) (net.Conn, error) {
	d := &net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: n.Client.AsSlice()}}
	return d.DialContext
}

// FreePortOn is a free port on addr (an address of this namespace).
func FreePortOn(t testing.TB, addr netip.Addr) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}
