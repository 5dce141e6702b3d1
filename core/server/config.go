package server

import (
	"errors"
	"fmt"

	"github.com/strata-log/strata/core/broker"
	"github.com/strata-log/strata/core/kraft"
	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/core/replica"
)

// Config is one Strata server: which roles it runs and how each is
// configured. The production runtime (package node) builds it from
// server.properties; a simulator scenario builds it directly.
type Config struct {
	// NodeID is node.id.
	NodeID int32
	// ClusterID is the cluster's id from meta.properties.
	ClusterID string
	// Broker and Controller are process.roles. At least one must be set.
	Broker, Controller bool

	// Quorum configures the metadata quorum member. NodeID and ClusterID
	// are filled in from above; ListenAddr is the controller listener on
	// a controller and must be empty on a broker-only server (an observer
	// has no listener).
	Quorum kraft.Config

	// BrokerListener configures the client listener (with the broker
	// role). NodeID, ClusterID and Metadata are filled in here.
	BrokerListener broker.Config

	// Partitions configures the partitions the broker hosts (with the
	// broker role). NodeID is filled in here.
	Partitions replica.Config

	// Auth configures authorization (authorizer.class.name, super.users,
	// allow.everyone.if.no.acl.found).
	Auth AuthConfig

	// Metrics is the registry every part of the server counts into; nil
	// counts nothing (metrics off). The registry belongs to the server's
	// loop: read it (Snapshot) only there.
	Metrics *metrics.Registry

	// times are the time keys of several units set (log.retention.hours,
	// log.roll.ms...), kept for Kafka's precedence (keys.go).
	times timeSettings
}

// ErrInvalidConfig is wrapped by every Config validation error.
var ErrInvalidConfig = errors.New("invalid server config")

func (c Config) withDefaults() (Config, error) {
	switch {
	case !c.Broker && !c.Controller:
		return c, fmt.Errorf("%w: a server needs the broker role, the controller role or both", ErrInvalidConfig)
	case c.NodeID < 0:
		return c, fmt.Errorf("%w: node id %d is negative", ErrInvalidConfig, c.NodeID)
	case c.ClusterID == "":
		return c, fmt.Errorf("%w: empty cluster id", ErrInvalidConfig)
	case !c.Controller && c.Quorum.ListenAddr != "":
		return c, fmt.Errorf("%w: a broker-only server has no controller listener", ErrInvalidConfig)
	}
	c.Quorum.NodeID = kraftID(c.NodeID)
	c.Quorum.ClusterID = c.ClusterID
	voter := false
	for _, v := range c.Quorum.Voters {
		voter = voter || v.ID == c.Quorum.NodeID
	}
	switch {
	case c.Controller && !voter:
		return c, fmt.Errorf("%w: node %d has the controller role but is not among the voters", ErrInvalidConfig, c.NodeID)
	case !c.Controller && voter:
		return c, fmt.Errorf("%w: node %d is a voter but lacks the controller role", ErrInvalidConfig, c.NodeID)
	}
	c.BrokerListener.NodeID = c.NodeID
	c.BrokerListener.ClusterID = c.ClusterID
	return c, nil
}
