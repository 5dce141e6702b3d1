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
// across a cut retransmit their SYN until ConnectTimeout.

// Cut is one injected cut of links (a partition, a block, a bridge or a
// ring): Heal lifts exactly the links it cut, so that healing one fault
// never lifts another that covers the same link. Network.Heal lifts every
// cut; a Cut healed that way is spent.
type Cut struct {
	n      *Network
	kind   string
	detail string
	links  []*link
	healed bool
}

// Heal lifts this cut; a link another cut still covers stays cut. Held
// frames on links no longer cut then flow in order. Healing twice, or after
// Network.Heal, does nothing.
func (c *Cut) Heal() {
	if c.healed {
		return
	}
	n := c.n
	n.sim.Trace("net:heal " + c.kind + " " + c.detail) // lifting is not a fault
	c.release()
	for i, other := range n.cuts {
		if other == c {
			n.cuts = append(n.cuts[:i], n.cuts[i+1:]...)
			break
		}
	}
	n.kickStalled()
}

func (c *Cut) release() {
	c.healed = true
	for _, l := range c.links {
		l.cuts--
	}
	c.links = nil
}

// CutLinks cuts the directed links from[0] -> to[1] of links as one fault
// of the given kind (a Jepsen-style grudge: each listed direction drops
// its traffic). A self-link is ignored.
func (n *Network) CutLinks(kind string, links [][2]string) *Cut {
	parts := make([]string, len(links))
	for i, l := range links {
		parts[i] = l[0] + ">" + l[1]
	}
	detail := strings.Join(parts, ",")
	n.sim.Fault(kind, detail)
	return n.cut(kind, detail, links)
}

func (n *Network) cut(kind, detail string, links [][2]string) *Cut {
	c := &Cut{n: n, kind: kind, detail: detail}
	for _, pair := range links {
		if pair[0] == pair[1] {
			continue
		}
		l := n.linkOf(n.host(pair[0]), n.host(pair[1]))
		l.cuts++
		c.links = append(c.links, l)
	}
	n.cuts = append(n.cuts, c)
	return c
}

// Partition cuts every link between hosts of different groups, in both
// directions. Hosts named in no group are unaffected: they still reach
// everyone (clients reaching both sides of a split cluster, or the bridge
// node of Jepsen's bridge partition). Cuts add to those already in place;
// the returned Cut's Heal lifts this one, Heal lifts them all.
func (n *Network) Partition(groups ...[]string) *Cut {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = strings.Join(g, ",")
	}
	detail := strings.Join(parts, "|")
	n.sim.Fault("partition", detail)
	var links [][2]string
	for i, gi := range groups {
		for _, gj := range groups[i+1:] {
			for _, a := range gi {
				for _, b := range gj {
					links = append(links, [2]string{a, b}, [2]string{b, a})
				}
			}
		}
	}
	return n.cut("partition", detail, links)
}

// Block cuts the link from -> to only: frames from from to to are held, and
// frames from to to from still flow. Real TCP would stall both ways (its acks
// are lost too), but holding one direction is what makes an asymmetric fault
// worth injecting: a leader that can send but not hear. The held direction is
// still subject to the transport timeout, and dials between the two hosts
// fail either way (the handshake needs both). The returned Cut's Heal lifts
// this block only.
func (n *Network) Block(from, to string) *Cut {
	n.sim.Fault("net-block", from+">"+to)
	return n.cut("net-block", from+">"+to, [][2]string{{from, to}})
}

// Unblock lifts every cut of the link from -> to, whether made by Block or
// by Partition (the Cuts that covered it no longer do); held frames then
// flow in order.
func (n *Network) Unblock(from, to string) {
	n.sim.Trace("net:unblock " + from + ">" + to) // lifting is not a fault
	l := n.linkOf(n.host(from), n.host(to))
	for _, c := range n.cuts {
		kept := c.links[:0]
		for _, cl := range c.links {
			if cl != l {
				kept = append(kept, cl)
			}
		}
		c.links = kept
	}
	l.cuts = 0
	n.kickStalled()
}

// Heal lifts every partition, block and clog and returns every link to the
// configured latency model. Held frames are then delivered in order.
func (n *Network) Heal() {
	n.sim.Trace("net:heal") // lifting is not a fault; the trace still records it
	n.link = n.cfg.Link
	for _, c := range n.cuts {
		c.release()
	}
	n.cuts = nil
	for _, h := range n.hosts {
		h.clogUntil = 0
		for _, l := range h.links {
			if l != nil {
				l.cuts = 0
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

// ResetConn resets one conn of host, the i-th of its live conns modulo
// their number (a single connection's RST: a conntrack entry that expired
// on a middlebox, a load balancer's idle reset), as ResetConns does for
// all of them. It reports whether host had a conn to reset.
func (n *Network) ResetConn(host string, i int) bool {
	h := n.host(host)
	if len(h.ends) == 0 {
		return false
	}
	e := h.ends[i%len(h.ends)]
	n.sim.Fault("net-reset-conn", e.local+"<"+e.remote)
	e.abort(errFaultReset, true, errPeerReset)
	return true
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
