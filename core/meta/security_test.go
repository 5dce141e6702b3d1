package meta

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/quota"
	"github.com/strata-log/strata/core/sasl"
)

var (
	aclA = UUID{0: 0xac, 15: 1}
	aclB = UUID{0: 0xac, 15: 2}
)

func readOrders(principal string) acl.Binding {
	return acl.Binding{Principal: principal, Host: "*", ResourceType: kmsg.ACLResourceTypeTopic,
		ResourceName: "orders", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
}

// scramFor is a valid credential record with keys derived from a salted
// password of fill bytes.
func scramFor(t *testing.T, user string, m ScramMechanism, fill byte) *UserScramCredentialRecord {
	t.Helper()
	n := m.keyBytes()
	c, err := sasl.DeriveScramCredential(m.SASL(), []byte("salt-"+user), 4096, slices.Repeat([]byte{fill}, n))
	require.NoError(t, err)
	return &UserScramCredentialRecord{Name: user, Mechanism: m, Salt: c.Salt, StoredKey: c.StoredKey,
		ServerKey: c.ServerKey, Iterations: int32(c.Iterations)}
}

func userQuota(user *string, key quota.Key, v float64) *ClientQuotaRecord {
	return &ClientQuotaRecord{Entity: []ClientQuotaEntityData{{EntityType: quota.EntityUser, EntityName: user}}, Key: string(key), Value: v}
}

// securityRecords builds ACLs, credentials and quotas, with a removal of
// each kind.
func securityRecords(t *testing.T) []Record {
	return []Record{
		AccessControlEntryFor(aclA, readOrders("User:alice")),
		AccessControlEntryFor(aclB, readOrders("User:bob")),
		&RemoveAccessControlEntryRecord{ID: aclA},
		scramFor(t, "alice", ScramSHA256, 1),
		scramFor(t, "alice", ScramSHA512, 2),
		scramFor(t, "bob", ScramSHA512, 3),
		&RemoveUserScramCredentialRecord{Name: "bob", Mechanism: ScramSHA512},
		scramFor(t, "alice", ScramSHA256, 4), // replaces
		userQuota(new("alice"), quota.ProducerByteRate, 1024),
		userQuota(new("alice"), quota.ConsumerByteRate, 2048),
		userQuota(nil, quota.RequestPercentage, 50),
		&ClientQuotaRecord{Entity: []ClientQuotaEntityData{{EntityType: quota.EntityUser, EntityName: new("alice")}},
			Key: string(quota.ConsumerByteRate), Remove: true},
	}
}

// TestSecurityRecordsReplay: the records build the ACL index, the
// credentials and the quotas; every record round-trips its encoding;
// replay one by one, in one delta, and from the snapshot agree.
func TestSecurityRecordsReplay(t *testing.T) {
	recs := securityRecords(t)
	for _, r := range recs {
		got, err := DecodeRecord(EncodeRecord(nil, r))
		require.NoError(t, err)
		require.Equal(t, r, got)
	}
	base := baseImage(t)
	oneByOne := base
	for i, r := range recs {
		d := oneByOne.NewDelta()
		require.NoError(t, d.Replay(r), "record %d", i)
		oneByOne = d.Apply(Position{Offset: base.Position().Offset + int64(i) + 1, Epoch: 2})
	}
	bulk := base.NewDelta()
	for _, r := range recs {
		require.NoError(t, bulk.Replay(r))
	}
	img := bulk.Apply(oneByOne.Position())
	require.Empty(t, Diff(oneByOne, img))
	require.Equal(t, oneByOne.Digest(), img.Digest())
	checkInvariants(t, img)

	loaded, err := DecodeSnapshot(img.Position(), EncodeSnapshot(img))
	require.NoError(t, err)
	require.Empty(t, Diff(img, loaded))
	require.Equal(t, img.Digest(), loaded.Digest())
	require.Equal(t, img.ACLs().Len(), loaded.ACLs().Len())

	// ACLs: only bob's is left, in the index and by id.
	all, err := img.ACLs().Matching(acl.MatchAll)
	require.NoError(t, err)
	require.Equal(t, []acl.Binding{readOrders("User:bob")}, all)
	b, ok := img.ACLBinding(aclB)
	require.True(t, ok)
	require.Equal(t, readOrders("User:bob"), b)
	_, ok = img.ACLBinding(aclA)
	require.False(t, ok)

	// SCRAM: alice has both mechanisms, the 256 one replaced; bob none.
	c, ok := img.LookupScram(sasl.ScramSHA256, "alice")
	require.True(t, ok)
	require.Equal(t, recs[7].(*UserScramCredentialRecord).Credential(), c)
	_, ok = img.LookupScram(sasl.ScramSHA512, "bob")
	require.False(t, ok)
	_, ok = img.LookupScram(sasl.Plain, "alice")
	require.False(t, ok)
	var infos []ScramCredentialInfo
	for info := range img.ScramCredentials() {
		infos = append(infos, info)
	}
	require.Equal(t, []ScramCredentialInfo{{"alice", ScramSHA256, 4096}, {"alice", ScramSHA512, 4096}}, infos)

	// Quotas: alice's consumer rate was removed; the default user's is set.
	m, err := img.QuotaManager(quota.Config{})
	require.NoError(t, err)
	described, err := m.Describe(quota.Filter{})
	require.NoError(t, err)
	require.Equal(t, []quota.Described{
		{Entity: quota.Entity{User: quota.Default()}, Values: []quota.Value{{Key: quota.RequestPercentage, Value: 50}}},
		{Entity: quota.Entity{User: quota.Named("alice")}, Values: []quota.Value{{Key: quota.ProducerByteRate, Value: 1024}}},
	}, described)
	require.Equal(t, 1024.0, m.Resolve(quota.ProducerByteRate, "alice", "app").Limit)
}

// TestSecurityReplayRefusesInvalidRecords: malformed security records are
// refused with ErrInvalidRecord and leave the delta unchanged.
func TestSecurityReplayRefusesInvalidRecords(t *testing.T) {
	base := baseImage(t)
	d := base.NewDelta()
	require.NoError(t, d.Replay(AccessControlEntryFor(aclA, readOrders("User:alice"))))
	require.NoError(t, d.Replay(scramFor(t, "alice", ScramSHA256, 1)))
	img := d.Apply(Position{Offset: 101, Epoch: 2})

	bad := readOrders("User:carol")
	bad.Operation = kmsg.ACLOperationAny
	short := scramFor(t, "bob", ScramSHA512, 1)
	short.StoredKey = short.StoredKey[:32]
	cases := []struct {
		name string
		rec  Record
	}{
		{"zero ACL id", AccessControlEntryFor(UUID{}, readOrders("User:carol"))},
		{"duplicate ACL id", AccessControlEntryFor(aclA, readOrders("User:carol"))},
		{"binding already present", AccessControlEntryFor(aclB, readOrders("User:alice"))},
		{"unknown ACL operation", AccessControlEntryFor(aclB, bad)},
		{"remove unknown ACL id", &RemoveAccessControlEntryRecord{ID: aclB}},
		{"unknown SCRAM mechanism", &UserScramCredentialRecord{Name: "bob", Mechanism: 3, Salt: []byte{1}, StoredKey: make([]byte, 32), ServerKey: make([]byte, 32), Iterations: 4096}},
		{"SCRAM without a user", &UserScramCredentialRecord{Mechanism: ScramSHA256, Salt: []byte{1}, StoredKey: make([]byte, 32), ServerKey: make([]byte, 32), Iterations: 4096}},
		{"too few iterations", &UserScramCredentialRecord{Name: "bob", Mechanism: ScramSHA256, Salt: []byte{1}, StoredKey: make([]byte, 32), ServerKey: make([]byte, 32), Iterations: 4095}},
		{"empty salt", &UserScramCredentialRecord{Name: "bob", Mechanism: ScramSHA256, StoredKey: make([]byte, 32), ServerKey: make([]byte, 32), Iterations: 4096}},
		{"keys of the wrong hash", short},
		{"remove absent credential", &RemoveUserScramCredentialRecord{Name: "alice", Mechanism: ScramSHA512}},
		{"empty quota entity", &ClientQuotaRecord{Key: string(quota.ProducerByteRate), Value: 1}},
		{"unknown entity type", &ClientQuotaRecord{Entity: []ClientQuotaEntityData{{EntityType: "group"}}, Key: string(quota.ProducerByteRate), Value: 1}},
		{"ip with user", &ClientQuotaRecord{Entity: []ClientQuotaEntityData{{EntityType: "ip"}, {EntityType: "user"}}, Key: string(quota.ConnectionCreationRate), Value: 1}},
		{"unknown quota key", userQuota(nil, "bytes_per_fortnight", 1)},
		{"zero quota", userQuota(nil, quota.ProducerByteRate, 0)},
		{"infinite quota", userQuota(nil, quota.RequestPercentage, math.Inf(1))},
		{"empty quota key", userQuota(nil, "", 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := img.NewDelta()
			err := d.Replay(tc.rec)
			require.ErrorIs(t, err, ErrInvalidRecord)
			require.Contains(t, err.Error(), tc.rec.Type().String())
			require.Empty(t, Diff(img, d.Apply(img.Position())))
		})
	}
}

// TestACLReaddedUnderNewID: a binding removed under one id and created
// under another in the same delta stays in the index.
func TestACLReaddedUnderNewID(t *testing.T) {
	d := baseImage(t).NewDelta()
	require.NoError(t, d.Replay(AccessControlEntryFor(aclA, readOrders("User:alice"))))
	img := d.Apply(Position{Offset: 101, Epoch: 2})
	d = img.NewDelta()
	require.NoError(t, d.Replay(&RemoveAccessControlEntryRecord{ID: aclA}))
	require.NoError(t, d.Replay(AccessControlEntryFor(aclB, readOrders("User:alice"))))
	next := d.Apply(Position{Offset: 103, Epoch: 2})
	require.Equal(t, 1, next.ACLs().Len())
	_, ok := next.ACLBinding(aclB)
	require.True(t, ok)
	checkInvariants(t, next)
	require.Equal(t, 1, img.ACLs().Len(), "the earlier image is unchanged")
}

// TestScramRecordStringHidesKeys: a credential record's text, which goes to
// logs, has neither salt nor keys.
func TestScramRecordStringHidesKeys(t *testing.T) {
	r := scramFor(t, "alice", ScramSHA256, 1)
	require.Equal(t, `UserScramCredentialRecord{name="alice" mechanism=SCRAM-SHA-256 iterations=4096}`, r.String())
}

// TestSameClientQuotas: images share their quotas until a
// ClientQuotaRecord changes them (what a broker's quota state resyncs on),
// and other records leave them shared.
func TestSameClientQuotas(t *testing.T) {
	base := baseImage(t)
	require.True(t, base.SameClientQuotas(base))
	require.False(t, base.SameClientQuotas(nil))
	step := func(img *Image, r Record) *Image {
		d := img.NewDelta()
		require.NoError(t, d.Replay(r))
		return d.Apply(Position{Offset: img.Position().Offset + 1, Epoch: 2})
	}
	withACL := step(base, AccessControlEntryFor(aclA, readOrders("User:alice")))
	require.True(t, withACL.SameClientQuotas(base), "an ACL leaves the quotas shared")
	set := step(withACL, userQuota(new("alice"), quota.ProducerByteRate, 1024))
	require.False(t, set.SameClientQuotas(withACL), "a quota set")
	removed := step(set, &ClientQuotaRecord{Entity: []ClientQuotaEntityData{{EntityType: quota.EntityUser, EntityName: new("alice")}},
		Key: string(quota.ProducerByteRate), Remove: true})
	require.False(t, removed.SameClientQuotas(set), "a quota removed")
	for e := range removed.ClientQuotas() {
		t.Fatalf("quota of %v left after its removal", e)
	}
}
