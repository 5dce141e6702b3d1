package chaos

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/internal/proccluster"
)

// procs is the Backend of real processes: a proccluster.Cluster whose
// node i (id i+1) runs in namespace i of a NetGroup with its data on
// disks[i].
type procs struct {
	t     testing.TB
	c     *proccluster.Cluster
	net   *proccluster.NetGroup
	disks []*disk
}

func (p *procs) node(i int) *proccluster.Node { return p.c.Nodes[i] }

func (p *procs) Kill(i int) { p.node(i).Kill() }

// Start runs the process again and returns at once (the schedule goes
// on while it starts; the campaign checks every node is up after the
// heal).
func (p *procs) Start(i int) { p.node(i).Spawn(p.t, p.c.ClusterID) }

func (p *procs) Stop(i int) { _ = p.node(i).Signal(syscall.SIGSTOP) }
func (p *procs) Cont(i int) { _ = p.node(i).Signal(syscall.SIGCONT) }

func (p *procs) Block(from, to int)   { require.NoError(p.t, p.net.Block(from, to)) }
func (p *procs) Unblock(from, to int) { require.NoError(p.t, p.net.Unblock(from, to)) }

func (p *procs) SetClogs(clogs []proccluster.ClogSpec) { require.NoError(p.t, p.net.SetClogs(clogs)) }

func (p *procs) DiskUsed(i int) int64           { return p.disks[i].used() }
func (p *procs) FillDisk(i int, capacity int64) { p.disks[i].fill(capacity) }
func (p *procs) EmptyDisk(i int)                { p.disks[i].empty() }
