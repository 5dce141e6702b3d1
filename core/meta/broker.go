package meta

import "slices"

// BrokerRegistration is a registered broker as the image holds it: the
// content of its last RegisterBrokerRecord with the flag changes since.
type BrokerRegistration struct {
	ID                   int32
	IncarnationID        UUID
	Epoch                int64
	Endpoints            []Endpoint
	Features             []FeatureRange
	Rack                 string
	Fenced               bool
	InControlledShutdown bool
}

// Endpoint returns the broker's listener of the given name.
func (b *BrokerRegistration) Endpoint(listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Name == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// brokerFromRecord builds a registration that owns its slices.
func brokerFromRecord(r *RegisterBrokerRecord) *BrokerRegistration {
	return &BrokerRegistration{
		ID:                   r.BrokerID,
		IncarnationID:        r.IncarnationID,
		Epoch:                r.BrokerEpoch,
		Endpoints:            slices.Clone(r.Endpoints),
		Features:             slices.Clone(r.Features),
		Rack:                 r.Rack,
		Fenced:               r.Fenced,
		InControlledShutdown: r.InControlledShutdown,
	}
}

// record is the RegisterBrokerRecord that recreates b.
func (b *BrokerRegistration) record() *RegisterBrokerRecord {
	return &RegisterBrokerRecord{
		BrokerID:             b.ID,
		IncarnationID:        b.IncarnationID,
		BrokerEpoch:          b.Epoch,
		Endpoints:            b.Endpoints,
		Features:             b.Features,
		Rack:                 b.Rack,
		Fenced:               b.Fenced,
		InControlledShutdown: b.InControlledShutdown,
	}
}

// equal compares two registrations field by field (nil and empty lists are
// equal).
func (b *BrokerRegistration) equal(o *BrokerRegistration) bool {
	return b.ID == o.ID && b.IncarnationID == o.IncarnationID && b.Epoch == o.Epoch &&
		slices.Equal(b.Endpoints, o.Endpoints) && slices.Equal(b.Features, o.Features) &&
		b.Rack == o.Rack && b.Fenced == o.Fenced && b.InControlledShutdown == o.InControlledShutdown
}
