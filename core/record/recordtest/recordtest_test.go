package recordtest_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/record"
	"github.com/strata-log/strata/core/record/recordtest"
)

// TestMarkedShapesStayMalformed: whatever the mark, every shape still
// fails validation at the same record, and the empty mark gives
// Malformed's bytes.
func TestMarkedShapesStayMalformed(t *testing.T) {
	v := record.NewValidator()
	for _, mark := range []string{"", "hostile-refused n1 ", "hostile-refused n12345 " + string(bytes.Repeat([]byte("x"), 100))} {
		for _, sh := range recordtest.MalformedMarked(1000, mark) {
			b, err := record.ReadBatch(sh.Payload, 1<<20)
			require.NoError(t, err, sh.Name)
			sum, err := v.ValidateProduce(b, record.LimitsFor(1<<20))
			require.ErrorIs(t, err, sh.Kind, "mark %q: %s", mark, sh.Name)
			require.Equal(t, sh.Record, sum.InvalidRecord, "mark %q: %s", mark, sh.Name)
		}
	}
	plain, marked := recordtest.Malformed(5), recordtest.MalformedMarked(5, "")
	for i := range plain {
		require.Equal(t, plain[i].Payload, marked[i].Payload, plain[i].Name)
	}
}
