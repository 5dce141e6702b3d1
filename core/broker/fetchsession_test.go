package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionFetch sends a Fetch v11 in a session (id, epoch) for topic's
// partition 0 at offset (omitted when offset < 0: an incremental fetch
// that leaves the partition as the session holds it).
func sessionFetch(h *simServer, id, epoch int32, topic string, offset int64) *kmsg.FetchResponse {
	h.T.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 11, 0, 1, 1<<20
	req.SessionID, req.SessionEpoch = id, epoch
	if offset >= 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	return h.Do(req).(*kmsg.FetchResponse)
}

// A session id a client kept from before the broker restarted must not
// continue a session another client created after it: ids are random, not
// a counter that starts over (log seed 4545: a consumer at offset 43
// continued another consumer's session and was served offset 226).
func TestFetchSessionIdsDoNotRepeatAcrossRestarts(t *testing.T) {
	h := newSimServer(t, nil)
	h.CreateTopic("t", 1, nil)
	h.produce("t", 0, 10, 10)

	first := sessionFetch(h, 0, 0, "t", 0)
	require.Zero(t, first.ErrorCode)
	require.Positive(t, first.SessionID)

	h.Crash()
	h.WaitServing("t", 1)
	other := sessionFetch(h, 0, 0, "t", 10) // another client, at the end
	require.Zero(t, other.ErrorCode)
	require.NotEqual(t, first.SessionID, other.SessionID)

	stale := sessionFetch(h, first.SessionID, 1, "t", -1)
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, stale.ErrorCode,
		"the old session id must be unknown, not another client's session")

	// Ids within one incarnation are distinct too.
	seen := map[int32]bool{other.SessionID: true}
	for range 20 {
		r := sessionFetch(h, 0, 0, "t", 0)
		require.Zero(t, r.ErrorCode)
		require.False(t, seen[r.SessionID], "session id %d handed out twice", r.SessionID)
		seen[r.SessionID] = true
	}
}
