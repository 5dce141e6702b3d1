package sim

import "github.com/strata-log/strata/core/env"

// PLACEHOLDER: replaced by the simulated bucket implementation.

// Bucket is the simulated object store.
type Bucket struct{ sim *Sim }

func newBucket(s *Sim) *Bucket                 { return &Bucket{sim: s} }
func (b *Bucket) handle(p *Process) env.Bucket { return nil }
