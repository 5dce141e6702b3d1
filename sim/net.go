package sim

import "github.com/strata-log/strata/core/env"

// PLACEHOLDER: replaced by the simulated network implementation.

// Network is the simulated network.
type Network struct{ sim *Sim }

func newNetwork(s *Sim) *Network               { return &Network{sim: s} }
func (n *Network) endpoint(p *Process) env.Net { return nil }
func (n *Network) processUp(p *Process)        {}
func (n *Network) processDown(p *Process)      {}
