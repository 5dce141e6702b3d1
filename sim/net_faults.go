package sim

import (
	"strings"
	"time"
)

// Network faults. Each records itself with Sim.Fault, so it is counted in the
// summary and folded into the trace.
//
// Cut links (Partition, Block) behave like TCP over a dropped route: frames
// already on a conn are held, not lost, because TCP would retransmit them,
// and they are delivered in order once the cut is lifted. A frame held longer
// than NetConfig.TransportTimeout resets its conn on both sides, as TCP gives
// up and Kafka's request timeouts fire. A cut is decided when a frame is due,
// so a frame sent just before a partition may still be held by it. New dials
// across a cut fail after ConnectTimeout.

// Partition cuts every link between hosts of different groups, in both
// directions. Hosts named in no group are unaffected: they still reach
// everyone (clients reaching both sides of a split cluster). Cuts add to
// those already in place; Heal lifts them all.
func (n *Network) Partition(groups ...[]string) {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = strings.Join(g, ",")
	}
	n.sim.Fault("partition", strings.Join(parts, "|"))
	for i, gi := range groups {
		for _, gj := range groups[i+1:] {
			for _, a := range gi {
				for _, b := range gj {
					if a == b {
						continue
					}
					ha, hb := n.host(a), n.host(b)
					n.linkOf(ha, hb).blocked = true
					n.linkOf(hb, ha).blocked = true
				}
			}
		}
	}
}

// Block cuts the link from -> to only: frames from from to to are held, and
// frames from to to from still flow. Real TCP would stall both ways (its acks
// are lost too), but holding one direction is what makes an asymmetric fault
// worth injecting: a leader that can send but not hear. The held direction is
// still subject to the transport timeout, and dials between the two hosts
// fail either way (the handshake needs both).
func (n *Network) Block(from, to string) {
	n.sim.Fault("net-block", from+">"+to)
	n.linkOf(n.host(from), n.host(to)).blocked = true
}

// Unblock lifts a cut of the link from -> to, whether made by Block or by
// Partition; held frames then flow in order.
func (n *Network) Unblock(from, to string) {
	n.sim.Trace("net:unblock " + from + ">" + to) // lifting is not a fault

	n.linkOf(n.host(from), n.host(to)).blocked = false
	n.kickStalled()
}

// Heal lifts every partition, block and clog and returns every link to the
// configured latency model. Held frames are then delivered in order.
func (n *Network) Heal() {
	n.sim.Trace("net:heal") // lifting is not a fault; the trace still records it
	n.link = n.cfg.Link
	for _, h := range n.hosts {
		h.clogUntil = 0
		for _, l := range h.links {
			if l != nil {
				l.blocked = false
				l.clogUntil = 0
				l.override = nil
			}
		}
	}
	n.kickStalled()
}

// Clog holds all traffic to and from host until d from now (a congested or
// flapping NIC). Frames are delivered in order when it ends; a clog longer
// than the transport timeout resets the conns it holds. A clog never
// shortens an earlier one.
func (n *Network) Clog(host string, d time.Duration) {
	n.sim.Fault("net-clog", host+" "+d.String())
	h := n.host(host)
	h.clogUntil = max(h.clogUntil, n.sim.now+d)
}

// ClogLink holds traffic on the link from -> to until d from now, like Clog
// but for one direction between two hosts.
func (n *Network) ClogLink(from, to string, d time.Duration) {
	n.sim.Fault("net-clog", from+">"+to+" "+d.String())
	l := n.linkOf(n.host(from), n.host(to))
	l.clogUntil = max(l.clogUntil, n.sim.now+d)
}

// ResetConns resets every conn of host, as if its TCP stack sent a RST on
// each: host's ends get OnClose with an error wrapping ErrConnReset on the
// next step, their peers after a latency, and undelivered frames in both
// directions are dropped.
func (n *Network) ResetConns(host string) {
	n.sim.Fault("net-reset", host)
	h := n.host(host)
	ends := append([]*connEnd(nil), h.ends...)
	for _, e := range ends {
		e.abort(errFaultReset, true, errPeerReset)
	}
}

// SetLatency replaces the latency model of every link without an override
// (a slow network). Heal restores the configured model.
func (n *Network) SetLatency(l LinkConfig) {
	n.sim.Fault("net-latency", "* "+l.Latency.String()+"+"+l.Jitter.String())
	n.link = l
}

// SetLinkLatency overrides the latency model of the link from -> to (one
// slow or distant peer). Heal removes the override.
func (n *Network) SetLinkLatency(from, to string, l LinkConfig) {
	n.sim.Fault("net-latency", from+">"+to+" "+l.Latency.String()+"+"+l.Jitter.String())
	cfg := l
	n.linkOf(n.host(from), n.host(to)).override = &cfg
}
