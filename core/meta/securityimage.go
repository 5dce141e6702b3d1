package meta

import (
	"cmp"
	"iter"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/assert"
	"github.com/strata-log/strata/core/quota"
	"github.com/strata-log/strata/core/sasl"
)

// The image is the brokers' SCRAM credential store.
var _ sasl.Credentials = (*Image)(nil)

// scramKey names one SCRAM credential of the image: a user and a
// mechanism.
type scramKey struct {
	user      string
	mechanism ScramMechanism
}

func compareScramKeys(a, b scramKey) int {
	return cmp.Or(strings.Compare(a.user, b.user), cmp.Compare(a.mechanism, b.mechanism))
}

// ACLBinding returns the ACL binding with an id.
func (img *Image) ACLBinding(id UUID) (acl.Binding, bool) { return img.aclIDs.get(id) }

// ACLIDs yields every ACL id and its binding, by id.
func (img *Image) ACLIDs() iter.Seq2[UUID, acl.Binding] {
	return func(yield func(UUID, acl.Binding) bool) { img.aclIDs.all(yield) }
}

// LookupScram implements sasl.Credentials over the image's
// UserScramCredentialRecords. The credential shares the image's slices,
// which must not be modified.
func (img *Image) LookupScram(m sasl.Mechanism, user string) (sasl.ScramCredential, bool) {
	sm, ok := ScramMechanismOf(m)
	if !ok {
		return sasl.ScramCredential{}, false
	}
	return img.scram.get(scramKey{user: user, mechanism: sm})
}

// ScramCredentialInfo is what DescribeUserScramCredentials may show of a
// credential: never its salt or keys.
type ScramCredentialInfo struct {
	User       string
	Mechanism  ScramMechanism
	Iterations int32
}

// ScramCredentials yields every SCRAM credential's user, mechanism and
// iterations, by user then mechanism.
func (img *Image) ScramCredentials() iter.Seq[ScramCredentialInfo] {
	return func(yield func(ScramCredentialInfo) bool) {
		img.scram.all(func(k scramKey, c sasl.ScramCredential) bool {
			return yield(ScramCredentialInfo{User: k.user, Mechanism: k.mechanism, Iterations: int32(c.Iterations)})
		})
	}
}

// ClientQuotas yields every client quota entity with its values (sorted
// by key, never empty), in quota.CompareEntities order. The slices are
// shared with the image and must not be modified.
func (img *Image) ClientQuotas() iter.Seq2[quota.Entity, []quota.Value] {
	return func(yield func(quota.Entity, []quota.Value) bool) { img.quotas.all(yield) }
}

// ClientQuota returns the values set on one entity, sorted by key; nil
// for none. The slice is shared with the image and must not be modified.
func (img *Image) ClientQuota(e quota.Entity) []quota.Value {
	values, _ := img.quotas.get(e)
	return values
}

// SameClientQuotas reports, without comparing them, that img and other
// hold the same client quotas: images share their quota map until a
// ClientQuotaRecord changes it, so it is never true for different quotas
// (and may be false for equal ones). A broker brings its quota state up
// to an image only when it is false.
func (img *Image) SameClientQuotas(other *Image) bool {
	return other != nil && img.quotas.root == other.quotas.root
}

// QuotaManager returns a new quota.Manager with cfg and the image's client
// quotas: what a broker measures clients with and answers
// DescribeClientQuotas from.
func (img *Image) QuotaManager(cfg quota.Config) (*quota.Manager, error) {
	m, err := quota.NewManager(cfg)
	if err != nil {
		return nil, err
	}
	for e, values := range img.ClientQuotas() {
		ops := make([]quota.Op, len(values))
		for i, v := range values {
			ops[i] = quota.Op{Key: v.Key, Value: v.Value}
		}
		// Every value passed the same validation at replay.
		if err := m.Alter(e, ops, false); err != nil {
			assert.Never("meta: image quota %v refused: %v", e, err)
		}
	}
	return m, nil
}

// securityDelta is the security state a Delta changed.
type securityDelta struct {
	// acls maps a touched ACL id to its binding, nil once removed.
	acls map[UUID]*acl.Binding
	// bindings maps a touched binding to its id, the zero UUID once
	// removed, so a binding can be looked up by value within the delta.
	bindings map[acl.Binding]UUID
	// scram maps a touched credential to its new value, nil once removed.
	scram map[scramKey]*sasl.ScramCredential
	// quotas maps a touched entity to its changed keys, nil once removed.
	quotas map[quota.Entity]map[quota.Key]*float64
}

func newSecurityDelta() securityDelta {
	return securityDelta{
		acls:     map[UUID]*acl.Binding{},
		bindings: map[acl.Binding]UUID{},
		scram:    map[scramKey]*sasl.ScramCredential{},
		quotas:   map[quota.Entity]map[quota.Key]*float64{},
	}
}

// aclByID returns the live binding with an id.
func (d *Delta) aclByID(id UUID) (acl.Binding, bool) {
	if b, ok := d.sec.acls[id]; ok {
		if b == nil {
			return acl.Binding{}, false
		}
		return *b, true
	}
	return d.base.aclIDs.get(id)
}

// aclPresent reports whether a binding is live (under any id).
func (d *Delta) aclPresent(b acl.Binding) bool {
	if id, ok := d.sec.bindings[b]; ok {
		return !id.IsZero()
	}
	return containsBinding(d.base.acls, b)
}

// containsBinding reports whether ix holds b, by an exact filter (which
// reads only b's resource).
func containsBinding(ix acl.Index, b acl.Binding) bool {
	f := acl.Filter{
		ResourceType: b.ResourceType, ResourceName: &b.ResourceName, PatternType: b.PatternType,
		Principal: &b.Principal, Host: &b.Host, Operation: b.Operation, Permission: b.Permission,
	}
	found, err := ix.Matching(f)
	return err == nil && len(found) > 0
}

func (d *Delta) replayACL(r *AccessControlEntryRecord) error {
	b := r.Binding()
	if r.ID.IsZero() {
		return invalid(ErrInvalidRecord, "zero ACL id")
	}
	if err := b.Validate(); err != nil {
		return invalid(ErrInvalidRecord, "ACL %v: %v", b, err)
	}
	if old, ok := d.aclByID(r.ID); ok {
		return invalid(ErrInvalidRecord, "ACL id %v already holds %v", r.ID, old)
	}
	if d.aclPresent(b) {
		return invalid(ErrInvalidRecord, "ACL %v already exists", b)
	}
	d.sec.acls[r.ID] = &b
	d.sec.bindings[b] = r.ID
	return nil
}

func (d *Delta) replayRemoveACL(r *RemoveAccessControlEntryRecord) error {
	b, ok := d.aclByID(r.ID)
	if !ok {
		return invalid(ErrInvalidRecord, "no ACL with id %v", r.ID)
	}
	d.sec.acls[r.ID] = nil
	d.sec.bindings[b] = UUID{}
	return nil
}

// validateScram checks a credential record: a named user, a SCRAM
// mechanism, Kafka's iteration bounds, a salt and keys the mechanism can
// use (what sasl would otherwise treat as absent).
func validateScram(r *UserScramCredentialRecord) error {
	n := r.Mechanism.keyBytes()
	switch {
	case r.Name == "":
		return invalid(ErrInvalidRecord, "SCRAM credential without a user name")
	case n == 0:
		return invalid(ErrInvalidRecord, "SCRAM mechanism %d", r.Mechanism)
	case r.Iterations < sasl.MinIterations || r.Iterations > sasl.MaxIterations:
		return invalid(ErrInvalidRecord, "SCRAM credential with %d iterations (%d..%d)", r.Iterations, sasl.MinIterations, sasl.MaxIterations)
	case len(r.Salt) == 0 || len(r.Salt) > sasl.MaxSaltBytes:
		return invalid(ErrInvalidRecord, "SCRAM salt of %d bytes (1..%d)", len(r.Salt), sasl.MaxSaltBytes)
	case len(r.StoredKey) != n || len(r.ServerKey) != n:
		return invalid(ErrInvalidRecord, "SCRAM keys of %d and %d bytes (%v needs %d)", len(r.StoredKey), len(r.ServerKey), r.Mechanism, n)
	}
	return nil
}

func (d *Delta) replayScram(r *UserScramCredentialRecord) error {
	if err := validateScram(r); err != nil {
		return err
	}
	c := sasl.ScramCredential{
		Salt: slices.Clone(r.Salt), Iterations: int(r.Iterations),
		StoredKey: slices.Clone(r.StoredKey), ServerKey: slices.Clone(r.ServerKey),
	}
	d.sec.scram[scramKey{user: r.Name, mechanism: r.Mechanism}] = &c
	return nil
}

// scramExists reports whether a credential is live.
func (d *Delta) scramExists(k scramKey) bool {
	if c, ok := d.sec.scram[k]; ok {
		return c != nil
	}
	_, ok := d.base.scram.get(k)
	return ok
}

func (d *Delta) replayRemoveScram(r *RemoveUserScramCredentialRecord) error {
	k := scramKey{user: r.Name, mechanism: r.Mechanism}
	if !d.scramExists(k) {
		return invalid(ErrInvalidRecord, "no %v credential for user %q", r.Mechanism, r.Name)
	}
	d.sec.scram[k] = nil
	return nil
}

// quotaEntity converts a record's entity with AlterClientQuotas' rules.
func quotaEntity(data []ClientQuotaEntityData) (quota.Entity, error) {
	cs := make([]quota.Component, len(data))
	for i, c := range data {
		cs[i] = quota.Component{Type: c.EntityType, Name: c.EntityName}
	}
	return quota.EntityFromComponents(cs)
}

// QuotaEntityData is the record form of an entity, its components in
// user, client-id, ip order.
func QuotaEntityData(e quota.Entity) []ClientQuotaEntityData {
	var out []ClientQuotaEntityData
	for _, c := range []struct {
		typ string
		n   quota.Name
	}{{quota.EntityUser, e.User}, {quota.EntityClientID, e.ClientID}, {quota.EntityIP, e.IP}} {
		if !c.n.Set {
			continue
		}
		d := ClientQuotaEntityData{EntityType: c.typ}
		if !c.n.Default {
			d.EntityName = &c.n.Name
		}
		out = append(out, d)
	}
	return out
}

func (d *Delta) replayClientQuota(r *ClientQuotaRecord) error {
	e, err := quotaEntity(r.Entity)
	if err != nil {
		return invalid(ErrInvalidRecord, "client quota entity: %v", err)
	}
	if r.Key == "" {
		return invalid(ErrInvalidRecord, "empty client quota key")
	}
	k := quota.Key(r.Key)
	var value *float64
	if !r.Remove {
		// quota.Manager's own rules, on an empty manager.
		m, err := quota.NewManager(quota.Config{})
		assert.That(err == nil, "meta: default quota config: %v", err)
		if err := m.Alter(e, []quota.Op{{Key: k, Value: r.Value}}, true); err != nil {
			return invalid(ErrInvalidRecord, "client quota: %v", err)
		}
		v := r.Value
		value = &v
	} else if math.IsNaN(r.Value) {
		return invalid(ErrInvalidRecord, "client quota removal with a NaN value")
	}
	changes := d.sec.quotas[e]
	if changes == nil {
		changes = map[quota.Key]*float64{}
		d.sec.quotas[e] = changes
	}
	changes[k] = value
	return nil
}

// applySecurity carries the delta's security changes into img.
func (d *Delta) applySecurity(img *Image, h *hasher) {
	d.applyACLs(img, h)
	for _, k := range slices.SortedFunc(maps.Keys(d.sec.scram), compareScramKeys) {
		if old, ok := d.base.scram.get(k); ok {
			img.sum.sub(h.term(scramRecord(k, old)))
		}
		c := d.sec.scram[k]
		if c == nil {
			img.scram = img.scram.delete(k)
			continue
		}
		img.sum.add(h.term(scramRecord(k, *c)))
		img.scram = img.scram.set(k, *c)
	}
	for _, e := range slices.SortedFunc(maps.Keys(d.sec.quotas), quota.CompareEntities) {
		old, _ := d.base.quotas.get(e)
		for _, v := range old {
			img.sum.sub(h.term(quotaRecord(e, v)))
		}
		values := mergeSorted(old, func(v quota.Value) quota.Key { return v.Key }, d.sec.quotas[e],
			func(k quota.Key, v *float64) (quota.Value, bool) {
				if v == nil {
					return quota.Value{}, false
				}
				return quota.Value{Key: k, Value: *v}, true
			})
		if len(values) == 0 {
			img.quotas = img.quotas.delete(e)
			continue
		}
		for _, v := range values {
			img.sum.add(h.term(quotaRecord(e, v)))
		}
		img.quotas = img.quotas.set(e, values)
	}
}

// applyACLs removes the replaced and removed bindings from the index
// first, then adds the new ones, so a binding removed under one id and
// created under another within the delta stays.
func (d *Delta) applyACLs(img *Image, h *hasher) {
	if len(d.sec.acls) == 0 {
		return
	}
	ids := slices.SortedFunc(maps.Keys(d.sec.acls), compareUUID)
	var gone, added []acl.Binding
	for _, id := range ids {
		if old, ok := d.base.aclIDs.get(id); ok {
			img.sum.sub(h.term(AccessControlEntryFor(id, old)))
			gone = append(gone, old)
			img.aclIDs = img.aclIDs.delete(id)
		}
		if b := d.sec.acls[id]; b != nil {
			img.sum.add(h.term(AccessControlEntryFor(id, *b)))
			added = append(added, *b)
			img.aclIDs = img.aclIDs.set(id, *b)
		}
	}
	ix, err := img.acls.Remove(gone...).Add(added...)
	assert.That(err == nil, "meta: replayed ACL refused by the index: %v", err)
	img.acls = ix
}

// scramRecord is the UserScramCredentialRecord that recreates a
// credential.
func scramRecord(k scramKey, c sasl.ScramCredential) *UserScramCredentialRecord {
	return &UserScramCredentialRecord{
		Name: k.user, Mechanism: k.mechanism, Salt: c.Salt,
		StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int32(c.Iterations),
	}
}

// quotaRecord is the ClientQuotaRecord that recreates one quota value.
func quotaRecord(e quota.Entity, v quota.Value) *ClientQuotaRecord {
	return &ClientQuotaRecord{Entity: QuotaEntityData(e), Key: string(v.Key), Value: v.Value}
}

// eachSecurityRecord yields the snapshot records of the security state:
// ACLs by id, SCRAM credentials by user and mechanism, client quotas by
// entity and key.
func (img *Image) eachSecurityRecord(yield func(Record)) {
	img.aclIDs.all(func(id UUID, b acl.Binding) bool {
		yield(AccessControlEntryFor(id, b))
		return true
	})
	img.scram.all(func(k scramKey, c sasl.ScramCredential) bool {
		yield(scramRecord(k, c))
		return true
	})
	img.quotas.all(func(e quota.Entity, values []quota.Value) bool {
		for _, v := range values {
			yield(quotaRecord(e, v))
		}
		return true
	})
}

// diffSecurity reports the differences of two images' security state.
func diffSecurity(a, b *Image, add func(string, ...any) bool) bool {
	if !diffMaps(a.aclIDs, b.aclIDs, func(x, y acl.Binding) bool { return x == y }, describeValues, "acl", add) {
		return false
	}
	if !diffMaps(a.scram, b.scram, scramEqual, func(sasl.ScramCredential, sasl.ScramCredential) string {
		return "salt, keys or iterations differ" // never print keys
	}, "scram credential", add) {
		return false
	}
	return diffMaps(a.quotas, b.quotas, slices.Equal[[]quota.Value], describeValues, "client quota", add)
}

func scramEqual(a, b sasl.ScramCredential) bool {
	return a.Iterations == b.Iterations && slices.Equal(a.Salt, b.Salt) &&
		slices.Equal(a.StoredKey, b.StoredKey) && slices.Equal(a.ServerKey, b.ServerKey)
}
