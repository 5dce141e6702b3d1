package broker

import (
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/wire"
)

// peerClients are the broker's kept connections to other brokers' client
// listeners (this broker's own included), one per broker id, dialled on
// first use through the Env's network: the transaction coordinator's
// WriteTxnMarkers to partition leaders (txnmarkers.go) and partition
// leaders' AddPartitionsToTxn verifications to the coordinator
// (txnverify.go) share them, as Kafka's inter-broker send threads share
// the inter-broker listener.
type peerClients struct {
	b     *Broker
	peers map[int32]*wire.Peer // by broker id; looked up only
}

// peers returns the broker's peer connections, made on first use.
func (b *Broker) peers() *peerClients {
	if b.peerConns == nil {
		b.peerConns = &peerClients{b: b, peers: map[int32]*wire.Peer{}}
	}
	return b.peerConns
}

// send delivers req to the broker id over its kept connection; done gets
// the response, or nil when the broker cannot be reached or the
// connection fails. done runs later on the loop, never inside send.
func (pc *peerClients) send(lookup brokerLookup, id int32, req kmsg.Request, done func(kmsg.Response)) {
	b := pc.b
	addr, ok := brokerClientAddr(lookup, b.interBrokerListener(), id)
	if !ok || b.closed {
		b.e.Post(func() { done(nil) })
		return
	}
	p := pc.peers[id]
	if p == nil || p.Addr() != addr {
		if p != nil {
			p.Close()
		}
		p = wire.NewPeer(b.e, wire.PeerConfig{
			Addr:         addr,
			ClientID:     "strata-broker-" + strconv.Itoa(int(b.cfg.NodeID)),
			TLSListener:  b.interBrokerTLS(),
			Authenticate: b.interBrokerAuthenticate(),
			OnDialFailed: func(err error) {
				b.log.Debug("cannot reach a broker", "broker", id, "addr", addr, "err", err)
			},
		})
		pc.peers[id] = p
	}
	if _, err := p.Do(req, 0, func(r kmsg.Response, err error) {
		if err != nil {
			r = nil
		}
		done(r)
	}); err != nil {
		b.e.Post(func() { done(nil) })
	}
}

// ask is send with a deadline: answer runs once, with the response (nil
// as for send) or, when none came within timeout, with timedOut (a later
// response is then dropped).
func (pc *peerClients) ask(lookup brokerLookup, id int32, req kmsg.Request, timeout time.Duration, answer func(resp kmsg.Response, timedOut bool)) {
	answered := false
	once := func(resp kmsg.Response, timedOut bool) {
		if !answered {
			answered = true
			answer(resp, timedOut)
		}
	}
	timer := pc.b.e.AfterFunc(timeout, func() { once(nil, true) })
	pc.send(lookup, id, req, func(r kmsg.Response) {
		timer.Stop()
		once(r, false)
	})
}

// closeAll closes every peer connection.
func (pc *peerClients) closeAll() {
	ids := make([]int32, 0, len(pc.peers))
	for id := range pc.peers { //determinism:unordered sorted below
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		pc.peers[id].Close()
	}
	clear(pc.peers)
}
