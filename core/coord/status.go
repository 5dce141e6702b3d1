package coord

import "github.com/twmb/franz-go/pkg/kerr"

// Status is where a shard is in its life: loading (from its creation),
// serving (SetLoaded), unloaded (SetUnloaded, for good).
type Status struct {
	loaded, unloaded bool
}

// Loaded reports whether the replay ended.
func (s *Status) Loaded() bool { return s.loaded }

// Unloaded reports whether the shard stopped.
func (s *Status) Unloaded() bool { return s.unloaded }

// SetLoaded ends the replay.
func (s *Status) SetLoaded() { s.loaded = true }

// SetUnloaded stops the shard; it reports false when it was already.
func (s *Status) SetUnloaded() bool {
	if s.unloaded {
		return false
	}
	s.unloaded = true
	return true
}

// Err is the code a request gets before the shard looks at it:
// NOT_COORDINATOR once unloaded, COORDINATOR_LOAD_IN_PROGRESS while
// loading, nil while serving.
func (s *Status) Err() *kerr.Error {
	switch {
	case s.unloaded:
		return kerr.NotCoordinator
	case !s.loaded:
		return kerr.CoordinatorLoadInProgress
	}
	return nil
}

// Guard wraps a write's done: a write that succeeded after the shard
// unloaded gets ErrNotCoordinator (its change is not applied: the next
// coordinator replays it).
func (s *Status) Guard(done func(error)) func(error) {
	return func(err error) {
		if s.unloaded && err == nil {
			err = ErrNotCoordinator
		}
		done(err)
	}
}

// Serving reports whether the shard loaded and was not unloaded.
func (s *Status) Serving() bool { return s.loaded && !s.unloaded }
