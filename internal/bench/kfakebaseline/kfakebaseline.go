// Package kfakebaseline starts franz-go's in-memory fake Kafka (kfake),
// the baseline `strata bench` measures a Strata node beside: what a Kafka
// client pushes through loopback to a broker that keeps records in memory
// and never fsyncs. Only a bench build (-tags kfake) and tests import it,
// so that the production strata binary does not link kfake.
package kfakebaseline

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Start runs kfake with the given number of brokers on 127.0.0.1 and
// returns their addresses and how to stop it (a bench.Kfake).
func Start(brokers int) (addrs []string, stop func(), err error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers))
	if err != nil {
		return nil, nil, fmt.Errorf("kfake: %w", err)
	}
	return c.ListenAddrs(), c.Close, nil
}
