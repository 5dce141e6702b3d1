package check

import "fmt"

// ElectionSafety: at most one leader per epoch (Raft's Election Safety),
// checked on every member's view: whenever a member starts following (or
// is) the leader of an epoch, that leader must be the one every other
// member saw for the epoch.
type ElectionSafety struct {
	leaders map[int32]leaderSeen // epoch -> first leader seen; only looked up
}

type leaderSeen struct {
	leader int32
	by     string
}

// NewElectionSafety returns the checker.
func NewElectionSafety() *ElectionSafety { return &ElectionSafety{leaders: map[int32]leaderSeen{}} }

// Name is the check's name.
func (*ElectionSafety) Name() string { return "election safety" }

// Observe checks a role change.
func (c *ElectionSafety) Observe(e Event) string {
	if e.Kind != RoleChange || e.Leader < 0 {
		return ""
	}
	prev, ok := c.leaders[e.Epoch]
	if !ok {
		c.leaders[e.Epoch] = leaderSeen{e.Leader, e.Node}
		return ""
	}
	if prev.leader != e.Leader {
		return fmt.Sprintf("two leaders in epoch %d: %s follows %d, %s followed %d", e.Epoch, e.Node, e.Leader, prev.by, prev.leader)
	}
	return ""
}

// AppliedMonotonic: within one incarnation a member's applied position
// never goes back (a restart may go back to what is durable).
type AppliedMonotonic struct {
	last map[string]Event // node -> its latest apply; only looked up
}

// NewAppliedMonotonic returns the checker.
func NewAppliedMonotonic() *AppliedMonotonic { return &AppliedMonotonic{last: map[string]Event{}} }

// Name is the check's name.
func (*AppliedMonotonic) Name() string { return "applied position never goes back" }

// Observe checks an apply.
func (c *AppliedMonotonic) Observe(e Event) string {
	if e.Kind != Apply {
		return ""
	}
	prev, ok := c.last[e.Node]
	c.last[e.Node] = e
	if ok && prev.Inc == e.Inc && e.Offset < prev.Offset {
		return fmt.Sprintf("%s#%d applied %d@%d after %d@%d", e.Node, e.Inc, e.Offset, e.PosEpoch, prev.Offset, prev.PosEpoch)
	}
	return ""
}

// ImageAgreement: two members' images at the same position are the same
// image (State Machine Safety, on digests of the whole image).
type ImageAgreement struct {
	digests map[[2]int64]Event // (offset, epoch) -> first image seen there; only looked up
}

// NewImageAgreement returns the checker.
func NewImageAgreement() *ImageAgreement { return &ImageAgreement{digests: map[[2]int64]Event{}} }

// Name is the check's name.
func (*ImageAgreement) Name() string { return "images agree" }

// Observe checks an apply.
func (c *ImageAgreement) Observe(e Event) string {
	if e.Kind != Apply {
		return ""
	}
	key := [2]int64{e.Offset, int64(e.PosEpoch)}
	prev, ok := c.digests[key]
	if !ok {
		c.digests[key] = e
		return ""
	}
	if prev.Digest != e.Digest {
		return fmt.Sprintf("%s#%d's image at %d@%d has digest %.12s, %s#%d's had %.12s", e.Node, e.Inc, e.Offset, e.PosEpoch, e.Digest, prev.Node, prev.Inc, prev.Digest)
	}
	return ""
}
