package controller

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/sasl"
)

// bootstrapScram is a KIP-900 credential as `strata storage format
// --add-scram` writes it.
func bootstrapScram(user string) *meta.UserScramCredentialRecord {
	return &meta.UserScramCredentialRecord{Name: user, Mechanism: meta.ScramSHA512, Iterations: 4096,
		Salt: []byte("salt-" + user), StoredKey: bytes.Repeat([]byte{1}, 64), ServerKey: bytes.Repeat([]byte{2}, 64)}
}

// TestBootstrapRecords: the first leader of an empty metadata log writes
// the bootstrap records first; a leader that finds them lost with the
// uncommitted tail writes them again; once anything is committed no
// leader writes them again; without bootstrap records nothing is written.
func TestBootstrapRecords(t *testing.T) {
	records := []meta.Record{bootstrapScram("alice"), bootstrapScram("bob")}
	h := newHarness(t, Config{BootstrapRecords: records}, 1)
	require.Len(t, h.proposals, 1, "the first leader proposes the bootstrap batch")
	require.Equal(t, records, h.proposals[0].Records)

	h.resign(true) // the bootstrap batch never committed
	h.proposals = nil
	h.becomeLeader()
	require.Len(t, h.proposals, 1, "the log is empty again: the next leader writes them")
	h.commitAll()
	_, ok := h.c.CommittedImage().LookupScram(sasl.ScramSHA512, "bob")
	require.True(t, ok, "bob's credential is committed")

	h.resign(false)
	h.proposals = nil
	h.becomeLeader()
	require.Empty(t, h.proposals, "a log with state is never bootstrapped again")

	plain := newHarness(t, Config{}, 1)
	require.Empty(t, plain.proposals, "no bootstrap records, no proposal")
}

// TestBootstrapRecordsSplit: more bootstrap records than one batch holds
// go in consecutive batches.
func TestBootstrapRecordsSplit(t *testing.T) {
	var records []meta.Record
	for _, u := range []string{"a", "b", "c", "d", "e"} {
		records = append(records, bootstrapScram(u))
	}
	h := newHarness(t, Config{BootstrapRecords: records, MaxRecordsPerBatch: 2}, 1)
	require.Len(t, h.proposals, 3)
	h.commitAll()
	n := 0
	for range h.c.CommittedImage().ScramCredentials() {
		n++
	}
	require.Equal(t, 5, n, "every bootstrap credential is committed")
}
