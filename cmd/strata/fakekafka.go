package main

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
)

// newFakeKafka starts franz-go's in-memory fake Kafka (kfake) as one
// broker on a free port of 127.0.0.1 and returns it with its address. It
// keeps records in memory and never fsyncs: `strata bench` measures it as
// the baseline of what a Kafka client can push through loopback, and the
// client commands' tests run against it. Close it when done.
func newFakeKafka(opts ...kfake.Opt) (*kfake.Cluster, string, error) {
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		return nil, "", fmt.Errorf("kfake: %w", err)
	}
	addrs := c.ListenAddrs()
	if len(addrs) != 1 {
		c.Close()
		return nil, "", fmt.Errorf("kfake: listening on %d addresses, want 1", len(addrs))
	}
	return c, addrs[0], nil
}
