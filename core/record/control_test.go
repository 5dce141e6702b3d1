package record_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/record"
)

func TestEndTxnMarkerRoundTrip(t *testing.T) {
	for _, typ := range []record.ControlType{record.ControlCommit, record.ControlAbort} {
		raw, err := record.BuildEndTxnMarker(42, 3, typ, 9, 1234)
		require.NoError(t, err)
		b, err := record.ReadBatch(raw, len(raw))
		require.NoError(t, err)
		require.NoError(t, b.ValidateForAppend(record.OriginCoordinator))
		require.ErrorIs(t, b.ValidateForAppend(record.OriginClient), record.ErrInvalidRecord)
		require.True(t, b.Attributes().IsControl())
		require.True(t, b.Attributes().IsTransactional())
		require.Equal(t, int64(42), b.ProducerID())
		require.Equal(t, int16(3), b.ProducerEpoch())
		require.Equal(t, record.NoSequence, b.BaseSequence())
		m, ok, err := record.ReadEndTxnMarker(b)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, record.EndTxnMarker{Type: typ, CoordinatorEpoch: 9}, m)
	}
	_, err := record.BuildEndTxnMarker(1, 0, record.ControlLeaderChange, 0, 0)
	require.ErrorIs(t, err, record.ErrInvalidRecord)
}

func TestReadEndTxnMarkerRefusesOtherBatches(t *testing.T) {
	bld := record.NewBuilder()
	bld.Append(1, nil, []byte("v"))
	raw, err := bld.AppendTo(nil)
	require.NoError(t, err)
	b, err := record.ReadBatch(raw, len(raw))
	require.NoError(t, err)
	_, _, err = record.ReadEndTxnMarker(b)
	require.ErrorIs(t, err, record.ErrInvalidRecord)

	// A KRaft control record is a control batch but no marker.
	bld = record.NewBuilder(record.WithControl())
	bld.AppendControl(1, record.ControlLeaderChange, []byte{0, 0})
	raw, err = bld.AppendTo(nil)
	require.NoError(t, err)
	b, err = record.ReadBatch(raw, len(raw))
	require.NoError(t, err)
	m, ok, err := record.ReadEndTxnMarker(b)
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, record.ControlLeaderChange, m.Type)

	// A marker whose value is cut short does not parse.
	bld = record.NewBuilder(record.WithControl(), record.WithTransactional(), record.WithProducer(1, 0, -1))
	bld.AppendControl(1, record.ControlAbort, []byte{0})
	raw, err = bld.AppendTo(nil)
	require.NoError(t, err)
	b, err = record.ReadBatch(raw, len(raw))
	require.NoError(t, err)
	_, _, err = record.ReadEndTxnMarker(b)
	require.ErrorIs(t, err, record.ErrInvalidRecord)
}

// FuzzReadEndTxnMarker: whatever bytes a stored control batch holds,
// reading its marker returns a value or an error, never a panic.
func FuzzReadEndTxnMarker(f *testing.F) {
	for _, typ := range []record.ControlType{record.ControlCommit, record.ControlAbort} {
		raw, err := record.BuildEndTxnMarker(7, 1, typ, 3, 99)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := record.ReadBatch(raw, len(raw)+1)
		if err != nil {
			return
		}
		m, ok, err := record.ReadEndTxnMarker(b)
		if ok && (err != nil || m.Type != record.ControlCommit && m.Type != record.ControlAbort) {
			t.Fatalf("ok with %v, %v", m, err)
		}
	})
}
