package coord

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestStatusLife(t *testing.T) {
	var s Status
	require.Equal(t, kerr.CoordinatorLoadInProgress, s.Err(), "loading")
	require.False(t, s.Serving())
	s.SetLoaded()
	require.Nil(t, s.Err())
	require.True(t, s.Serving())
	require.True(t, s.SetUnloaded())
	require.False(t, s.SetUnloaded(), "unloaded once")
	require.Equal(t, kerr.NotCoordinator, s.Err())
	require.False(t, s.Serving())
}

func TestGuardAnswersNotCoordinatorAfterUnload(t *testing.T) {
	var s Status
	s.SetLoaded()
	var got []error
	done := s.Guard(func(err error) { got = append(got, err) })
	done(nil)
	s.SetUnloaded()
	done(nil)
	fail := errors.New("disk")
	done(fail)
	require.Equal(t, []error{nil, ErrNotCoordinator, fail}, got, "a success after the unload is not a success; a failure stays itself")
}

func TestWriteErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want *kerr.Error
	}{
		{ErrNotCoordinator, kerr.NotCoordinator},
		{kerr.NotEnoughReplicas, kerr.CoordinatorNotAvailable},
		{fmt.Errorf("append: %w", kerr.NotEnoughReplicasAfterAppend), kerr.CoordinatorNotAvailable},
		{kerr.UnknownTopicOrPartition, kerr.CoordinatorNotAvailable},
		{kerr.RequestTimedOut, kerr.CoordinatorNotAvailable},
		{kerr.MessageTooLarge, kerr.UnknownServerError},
		{kerr.RecordListTooLarge, kerr.UnknownServerError},
		{kerr.NotLeaderForPartition, kerr.NotCoordinator},
		{kerr.KafkaStorageError, kerr.NotCoordinator},
		{errors.New("anything else"), kerr.NotCoordinator},
	} {
		require.Equal(t, tc.want, WriteErrorCode(tc.err), "%v", tc.err)
	}
}
