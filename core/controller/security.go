package controller

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/quota"
	"github.com/strata-log/strata/core/sasl"
)

// The security APIs, as Kafka's AclControlManager, ScramControlManager and
// ClientQuotaControlManager decide them. Each request's records go into
// one batch; a request whose records do not fit in one batch fails the
// entries that did not fit, with POLICY_VIOLATION.

// errBatchFull is the answer for an entry whose records do not fit.
func errBatchFull() *apiError {
	return errorf(kerr.PolicyViolation, "The changes do not fit in one controller batch.")
}

// apiErrorOf converts a validation error of core/acl, core/sasl or
// core/quota (which wrap a kerr code) into an apiError with its message.
func apiErrorOf(err error) *apiError {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return errorf(kerr.UnknownServerError, "%v", err)
	}
	return errorf(ke, "%s", err.Error())
}

// newACLID draws a random (version 4) id that no ACL uses, as
// AclControlManager.newAclId does.
func (c *Controller) newACLID(taken map[meta.UUID]bool) meta.UUID {
	for {
		var u meta.UUID
		hi, lo := c.rng.Uint64(), c.rng.Uint64()
		for i := range 8 {
			u[i], u[8+i] = byte(hi>>(56-8*i)), byte(lo>>(56-8*i))
		}
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if _, exists := c.spec.ACLBinding(u); exists || taken[u] || u.IsZero() {
			continue
		}
		return u
	}
}

// createACLs handles CreateAcls (AclControlManager.createAcls): each
// creation is validated (INVALID_REQUEST naming the problem); a binding
// that already exists, or was named earlier in the request, succeeds
// without a record; every other gets an AccessControlEntryRecord under a
// new random id.
func (c *Controller) createACLs(req *kmsg.CreateACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	b := c.openBatch()
	taken := map[meta.UUID]bool{}
	created := map[acl.Binding]bool{}
	for _, creation := range req.Creations {
		binding := acl.BindingFromCreation(creation)
		var e *apiError
		switch err := binding.Validate(); {
		case err != nil:
			e = apiErrorOf(err)
		case created[binding] || aclExists(c.spec, binding):
		default:
			id := c.newACLID(taken)
			if c.add(b, meta.AccessControlEntryFor(id, binding)) {
				taken[id], created[binding] = true, true
			} else {
				e = errBatchFull()
			}
		}
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = e.code(), e.message()
		resp.Results = append(resp.Results, r)
	}
	c.seal(b)
	return resp
}

// aclExists reports whether img holds binding.
func aclExists(img *meta.Image, b acl.Binding) bool {
	found, err := img.ACLs().Matching(acl.Filter{
		ResourceType: b.ResourceType, ResourceName: &b.ResourceName, PatternType: b.PatternType,
		Principal: &b.Principal, Host: &b.Host, Operation: b.Operation, Permission: b.Permission,
	})
	return err == nil && len(found) > 0
}

// deleteACLs handles DeleteAcls (AclControlManager.deleteAcls): each
// filter is validated and answers the bindings it removes, ordered by
// acl.Compare; a binding two filters match is removed, and reported, by
// the first only.
func (c *Controller) deleteACLs(req *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	b := c.openBatch()
	deleted := map[meta.UUID]bool{}
	for _, rf := range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		f := acl.FilterFromDeletion(rf)
		if err := f.Validate(); err != nil {
			e := apiErrorOf(err)
			res.ErrorCode, res.ErrorMessage = e.code(), e.message()
			resp.Results = append(resp.Results, res)
			continue
		}
		type match struct {
			id meta.UUID
			b  acl.Binding
		}
		// Kafka scans every ACL here too (deleteAclsForFilter): ids are
		// what the records name, and the index holds none.
		var matches []match
		for id, binding := range c.spec.ACLIDs() {
			if !deleted[id] && f.Matches(binding) {
				matches = append(matches, match{id, binding})
			}
		}
		slices.SortFunc(matches, func(x, y match) int { return acl.Compare(x.b, y.b) })
		recs := make([]meta.Record, len(matches))
		for i, m := range matches {
			recs[i] = &meta.RemoveAccessControlEntryRecord{ID: m.id}
		}
		if !c.add(b, recs...) {
			e := errBatchFull()
			res.ErrorCode, res.ErrorMessage = e.code(), e.message()
			resp.Results = append(resp.Results, res)
			continue
		}
		for _, m := range matches {
			deleted[m.id] = true
			res.MatchingACLs = append(res.MatchingACLs, matchingACL(m.b))
		}
		resp.Results = append(resp.Results, res)
	}
	c.seal(b)
	return resp
}

// matchingACL is a DeleteAcls response entry for a removed binding.
func matchingACL(b acl.Binding) kmsg.DeleteACLsResponseResultMatchingACL {
	m := kmsg.NewDeleteACLsResponseResultMatchingACL()
	m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
	m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
	return m
}

// scramMechanism maps a request's mechanism number to its SASL name, ""
// for an unknown one (which sasl refuses as UNSUPPORTED_SASL_MECHANISM).
func scramMechanism(m int8) sasl.Mechanism { return meta.ScramMechanism(m).SASL() }

// alterUserScramCredentials handles AlterUserScramCredentials
// (ScramControlManager.alterCredentials, KIP-554). A user named more than
// once in the request, in deletions or upsertions, is refused with
// DUPLICATE_RESOURCE; a deletion must name a credential that exists
// (RESOURCE_NOT_FOUND); an upsertion is validated by sasl and its stored
// and server keys derived here from the client's salted password. One
// result per user, in the order users first appear.
func (c *Controller) alterUserScramCredentials(req *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var users []string
	count := map[string]int{}
	for _, d := range req.Deletions {
		users = append(users, d.Name)
		count[d.Name]++
	}
	for _, u := range req.Upsertions {
		users = append(users, u.Name)
		count[u.Name]++
	}
	results := map[string]*apiError{}
	b := c.openBatch()
	for _, d := range req.Deletions {
		if count[d.Name] > 1 {
			continue
		}
		results[d.Name] = c.deleteScram(b, d)
	}
	for _, u := range req.Upsertions {
		if count[u.Name] > 1 {
			continue
		}
		results[u.Name] = c.upsertScram(b, u)
	}
	c.seal(b)
	answered := map[string]bool{}
	for _, user := range users {
		if answered[user] {
			continue
		}
		answered[user] = true
		e := results[user]
		if count[user] > 1 {
			e = errorf(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		}
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode, r.ErrorMessage = user, e.code(), e.message()
		resp.Results = append(resp.Results, r)
	}
	return resp
}

func (c *Controller) deleteScram(b *batch, d kmsg.AlterUserSCRAMCredentialsRequestDeletion) *apiError {
	m := scramMechanism(d.Mechanism)
	switch {
	case d.Name == "":
		return errorf(kerr.UnacceptableCredential, "Username must not be empty")
	case !m.IsScram():
		return errorf(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	}
	if _, ok := c.spec.LookupScram(m, d.Name); !ok {
		return errorf(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
	}
	if !c.add(b, &meta.RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: meta.ScramMechanism(d.Mechanism)}) {
		return errBatchFull()
	}
	return nil
}

func (c *Controller) upsertScram(b *batch, u kmsg.AlterUserSCRAMCredentialsRequestUpsertion) *apiError {
	m := scramMechanism(u.Mechanism)
	if err := sasl.ValidateScramUpsertion(u.Name, m, u.Salt, int(u.Iterations), u.SaltedPassword); err != nil {
		return apiErrorOf(err)
	}
	cred, err := sasl.DeriveScramCredential(m, u.Salt, int(u.Iterations), u.SaltedPassword)
	if err != nil {
		return apiErrorOf(err)
	}
	rec := &meta.UserScramCredentialRecord{
		Name: u.Name, Mechanism: meta.ScramMechanism(u.Mechanism), Salt: cred.Salt,
		StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: u.Iterations,
	}
	if !c.add(b, rec) {
		return errBatchFull()
	}
	return nil
}

// alterClientQuotas handles AlterClientQuotas
// (ClientQuotaControlManager.alterClientQuotas, KIP-546): each entry is
// validated by core/quota (the entity, no key twice, values the key
// takes) and writes a ClientQuotaRecord for each value that changes and
// each removal of a key that is set; none with validate_only. An entity
// named twice sees the earlier entries' changes.
func (c *Controller) alterClientQuotas(req *kmsg.AlterClientQuotasRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	var b *batch
	if !req.ValidateOnly {
		b = c.openBatch()
	}
	// pending holds the values this request set (nil: removed).
	pending := map[quota.Entity]map[quota.Key]*float64{}
	for _, entry := range req.Entries {
		e := c.alterQuotaEntry(b, entry, pending)
		r := kmsg.NewAlterClientQuotasResponseEntry()
		r.ErrorCode, r.ErrorMessage = e.code(), e.message()
		for _, ec := range entry.Entity {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = ec.Type, ec.Name
			r.Entity = append(r.Entity, re)
		}
		resp.Entries = append(resp.Entries, r)
	}
	if b != nil {
		c.seal(b)
	}
	return resp
}

func (c *Controller) alterQuotaEntry(b *batch, entry kmsg.AlterClientQuotasRequestEntry, pending map[quota.Entity]map[quota.Key]*float64) *apiError {
	components := make([]quota.Component, len(entry.Entity))
	for i, ec := range entry.Entity {
		components[i] = quota.Component{Type: ec.Type, Name: ec.Name}
	}
	ent, err := quota.EntityFromComponents(components)
	if err != nil {
		return apiErrorOf(err)
	}
	ops := make([]quota.Op, len(entry.Ops))
	for i, op := range entry.Ops {
		ops[i] = quota.Op{Key: quota.Key(op.Key), Value: op.Value, Remove: op.Remove}
	}
	m, err := quota.NewManager(quota.Config{})
	if err != nil {
		return apiErrorOf(err)
	}
	if err := m.Alter(ent, ops, true); err != nil {
		return apiErrorOf(err)
	}
	if b == nil {
		return nil
	}
	current := func(k quota.Key) (float64, bool) {
		if v, ok := pending[ent][k]; ok {
			if v == nil {
				return 0, false
			}
			return *v, true
		}
		for _, v := range c.spec.ClientQuota(ent) {
			if v.Key == k {
				return v.Value, true
			}
		}
		return 0, false
	}
	data := meta.QuotaEntityData(ent)
	var recs []meta.Record
	for _, op := range ops {
		cur, set := current(op.Key)
		switch {
		case op.Remove && set:
			recs = append(recs, &meta.ClientQuotaRecord{Entity: data, Key: string(op.Key), Remove: true})
		case !op.Remove && (!set || cur != op.Value):
			recs = append(recs, &meta.ClientQuotaRecord{Entity: data, Key: string(op.Key), Value: op.Value})
		}
	}
	if !c.add(b, recs...) {
		return errBatchFull()
	}
	if pending[ent] == nil {
		pending[ent] = map[quota.Key]*float64{}
	}
	for _, op := range ops {
		if op.Remove {
			pending[ent][op.Key] = nil
		} else {
			v := op.Value
			pending[ent][op.Key] = &v
		}
	}
	return nil
}
