package broker

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-log/strata/core/producer"
)

// TestErrorTableMapsProducerErrors: the idempotent producer's refusals
// reach the client with their own codes, not UNKNOWN_SERVER_ERROR, or a
// producer cannot tell a sequence gap (bump the epoch) from a broker
// failure (log seed 127 got OUT_OF_ORDER_SEQUENCE_NUMBER as
// UNKNOWN_SERVER_ERROR, and the producer retried it forever).
func TestErrorTableMapsProducerErrors(t *testing.T) {
	b, _ := newTestBroker(t)
	for _, tc := range []struct {
		err  error
		want *kerr.Error
	}{
		{producer.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
		{producer.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
		{producer.ErrInvalidTxnState, kerr.InvalidTxnState},
		{producer.ErrInvalidBatch, kerr.InvalidRecord},
	} {
		wrapped := fmt.Errorf("partition t-0: %w: producer 7 epoch 0 sent sequence 9", tc.err)
		require.Equal(t, tc.want, b.errorCode(wrapped), "%v", tc.err)
	}
}
