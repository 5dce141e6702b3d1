package broker

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/protocol"
)

// peerClients are the broker's kept connections to other brokers' client
// listeners (this broker's own included), one per broker id, dialled on
// first use through the Env's network: the transaction coordinator's
// WriteTxnMarkers to partition leaders (txnmarkers.go) and partition
// leaders' AddPartitionsToTxn verifications to the coordinator
// (txnverify.go) share them, as Kafka's inter-broker send threads share
// the inter-broker listener.
type peerClients struct {
	b       *Broker
	clients map[int32]*peerClient // by broker id; looked up only
}

type peerClient struct {
	addr    string
	client  *protocol.Client
	dialing bool
	// queued requests wait for the connection.
	queued []func(*protocol.Client)
}

// peers returns the broker's peer connections, made on first use.
func (b *Broker) peers() *peerClients {
	if b.peerConns == nil {
		b.peerConns = &peerClients{b: b, clients: map[int32]*peerClient{}}
	}
	return b.peerConns
}

// send delivers req to the broker id over its kept connection; done gets
// the response, or nil when the broker cannot be reached or the
// connection fails. done runs later on the loop, never inside send.
func (pc *peerClients) send(lookup brokerLookup, id int32, req kmsg.Request, done func(kmsg.Response)) {
	b := pc.b
	addr, ok := brokerClientAddr(lookup, id)
	if !ok {
		b.e.Post(func() { done(nil) })
		return
	}
	mc := pc.clients[id]
	if mc == nil || mc.addr != addr {
		if mc != nil && mc.client != nil {
			mc.client.Close()
		}
		mc = &peerClient{addr: addr}
		pc.clients[id] = mc
	}
	do := func(c *protocol.Client) {
		if c == nil {
			done(nil)
			return
		}
		err := c.Do(req, func(r kmsg.Response, err error) {
			if err != nil {
				r = nil
			}
			done(r)
		})
		if err != nil {
			b.e.Post(func() { done(nil) })
		}
	}
	if mc.client != nil && !mc.client.Closed() {
		do(mc.client)
		return
	}
	mc.client = nil
	mc.queued = append(mc.queued, do)
	if mc.dialing {
		return
	}
	mc.dialing = true
	b.e.Net().Dial(addr, func(c env.Conn, err error) {
		mc.dialing = false
		queued := mc.queued
		mc.queued = nil
		if err != nil || b.closed {
			if c != nil {
				c.Close()
			}
			b.log.Debug("cannot reach a broker", "broker", id, "addr", addr, "err", err)
			for _, q := range queued {
				q(nil)
			}
			return
		}
		mc.client = protocol.NewClient(c, protocol.ClientConfig{ClientID: "strata-broker-" + strconv.Itoa(int(b.cfg.NodeID))})
		for _, q := range queued {
			q(mc.client)
		}
	})
}

// closeAll closes every peer connection.
func (pc *peerClients) closeAll() {
	ids := make([]int32, 0, len(pc.clients))
	for id := range pc.clients { //determinism:unordered sorted below
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if c := pc.clients[id].client; c != nil {
			c.Close()
		}
	}
	clear(pc.clients)
}
