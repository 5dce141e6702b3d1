package controller

import (
	"math/rand/v2"

	"github.com/strata-log/strata/core/assert"
)

// placement is where a run of new partitions starts in Kafka's rack-unaware
// round robin: the broker index of partition 0's first replica and the
// shift between first and second replicas. Both are drawn from the
// controller's seeded randomness, so placement spreads over brokers across
// topics yet one seed gives one placement.
type placement struct {
	startIndex int
	shift      int
}

// drawPlacement draws a placement over n brokers.
func drawPlacement(rng *rand.Rand, n int) placement {
	assert.That(n > 0, "controller: placement over no brokers")
	return placement{startIndex: rng.IntN(n), shift: rng.IntN(n)}
}

// place assigns replicas to partitions first..first+count-1 over brokers
// (ascending ids of active brokers), replication factor rf <= len(brokers),
// as Kafka's AdminUtils.assignReplicasToBrokersRackUnaware: partition p's
// first replica is brokers[(p+start) mod n], and its followers follow at a
// shift that grows by one every n partitions, so that followers of one
// leader spread over the other brokers. The replica lists share one
// allocation and are the caller's.
func (pl placement) place(brokers []int32, first, count int32, rf int) [][]int32 {
	n := len(brokers)
	assert.That(rf >= 1 && rf <= n && count >= 0 && first >= 0, "controller: placing %d partitions at rf %d over %d brokers", count, rf, n)
	backing := make([]int32, int(count)*rf)
	out := make([][]int32, count)
	shift := pl.shift
	for i := range count {
		p := int(first + i)
		if p > 0 && p%n == 0 {
			shift++
		}
		head := (p + pl.startIndex) % n
		replicas := backing[int(i)*rf : int(i+1)*rf : int(i+1)*rf]
		replicas[0] = brokers[head]
		for j := 1; j < rf; j++ {
			replicas[j] = brokers[(head+1+(shift+j-1)%(n-1))%n]
		}
		out[i] = replicas
	}
	return out
}
