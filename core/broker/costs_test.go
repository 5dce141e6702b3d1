package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/record/recordtest"
	"github.com/strata-log/strata/core/replica"
)

// A bomb is estimated as the small compressed batch it looks like, and
// charged (work.Job.Charge) as what it decompressed to: the bound it was
// refused at. That charge is what keeps a connection of bombs from
// passing for a light one and taking the spare worker.
func TestValidationChargeOfABombIsItsBound(t *testing.T) {
	const bound = 16 << 20
	limits := []replica.ProduceLimits{{MaxMessageBytes: 1 << 20, Records: record.ProduceLimits{MaxDecompressedBytes: bound}}}
	bomb := recordtest.Bomb(record.CodecZstd, 64<<20, 1_700_000_000_000)
	estimate := validationCost(bomb)
	appends := []produceAppend{{payload: bomb}}
	appends[0].vb = replica.ValidateProduce(record.NewValidator(), bomb, limits[0])
	require.ErrorIs(t, appends[0].vb.Err, record.ErrDecompressedTooLarge)
	charge := validationCharge(estimate, appends, limits)
	require.Less(t, estimate, time.Millisecond, "the estimate of a %d-byte bomb", len(bomb))
	require.Equal(t, bound*decompressedCostPerMiB>>20, charge)

	// An honest small batch is charged its estimate.
	b := record.NewBuilder(record.WithCompression(record.CodecZstd))
	b.Append(1_700_000_000_000, []byte("k"), []byte("v"))
	small, err := b.AppendTo(nil)
	require.NoError(t, err)
	appends = []produceAppend{{payload: small}}
	appends[0].vb = replica.ValidateProduce(record.NewValidator(), small, limits[0])
	require.NoError(t, appends[0].vb.Err)
	require.Equal(t, validationCost(small), validationCharge(validationCost(small), appends, limits))
}
