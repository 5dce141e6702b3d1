package quorum_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/strata-log/strata/core/quorum"
)

// The driver loop, reduced to one voter with instant storage: tick, feed
// inputs, drain Ready (persist, sync, send, apply), report completions.
func Example() {
	log := quorum.NewMemoryLog()
	r, err := quorum.New(quorum.Config{ID: 1, Voters: []quorum.NodeID{1}}, log, quorum.InitialState(), rand.New(rand.NewPCG(1, 1)), 0)
	if err != nil {
		panic(err)
	}
	drain := func() {
		for r.HasReady() {
			rd := r.Ready()
			if rd.SoftState != nil {
				fmt.Printf("%s epoch=%d leader=%s\n", rd.SoftState.Role, rd.SoftState.Epoch, rd.SoftState.LeaderID)
			}
			if rd.PersistState != nil { // write and fsync quorum-state, then:
				r.StatePersisted(rd.PersistState.Seq)
			}
			if rd.SyncLog != nil { // fsync the log, then:
				r.LogSynced(rd.SyncLog.Seq)
			}
			for _, m := range rd.Messages { // a single voter sends none
				fmt.Println("send", m)
			}
			for _, e := range rd.Committed {
				fmt.Println("apply", e)
			}
		}
	}
	now := time.Duration(0)
	drain()
	now += 2 * time.Second // the election timeout passes
	r.Tick(now)
	drain()
	r.Tick(now)
	if _, _, err := r.Propose([][]byte{[]byte("topic-a")}); err != nil {
		panic(err)
	}
	drain()
	// Output:
	// unattached epoch=0 leader=none
	// candidate epoch=1 leader=none
	// leader epoch=1 leader=1
	// apply 0@1:leader-change
	// apply 1@1:topic-a
}
