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
		u := c.randomUUID()
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
// filter is validated and answers every binding it matches, ordered by
// acl.Compare; a binding several filters match is reported by each and
// removed once.
func (c *Controller) deleteACLs(req *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	b := c.openBatch()
	removed := map[meta.UUID]bool{}
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
		var recs []meta.Record
		for id, binding := range c.spec.ACLIDs() {
			if f.Matches(binding) {
				matches = append(matches, match{id, binding})
				if !removed[id] {
					recs = append(recs, &meta.RemoveAccessControlEntryRecord{ID: id})
				}
			}
		}
		if !c.add(b, recs...) {
			e := errBatchFull()
			res.ErrorCode, res.ErrorMessage = e.code(), e.message()
			resp.Results = append(resp.Results, res)
			continue
		}
		slices.SortFunc(matches, func(x, y match) int { return acl.Compare(x.b, y.b) })
		for _, m := range matches {
			removed[m.id] = true
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
// (ScramControlManager.alterCredentials, KIP-554), in Kafka's order:
// deletions, then upsertions, each validated when first met (a deletion
// must name a credential that exists, RESOURCE_NOT_FOUND; an upsertion is
// validated by sasl); a user met again after a valid entry is
// DUPLICATE_RESOURCE, and after a refused one keeps that refusal. Stored
// and server keys are derived here from the client's salted password. One
// result per user, in the order users first appear.
func (c *Controller) alterUserScramCredentials(req *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var users []string
	errs := map[string]*apiError{}
	pending := map[string]meta.Record{}
	meet := func(user string, validate func() (meta.Record, *apiError)) {
		_, failed := errs[user]
		_, valid := pending[user]
		switch {
		case failed:
		case valid:
			delete(pending, user)
			errs[user] = errorf(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		default:
			users = append(users, user)
			if rec, e := validate(); e != nil {
				errs[user] = e
			} else {
				pending[user] = rec
			}
		}
	}
	for _, d := range req.Deletions {
		meet(d.Name, func() (meta.Record, *apiError) { return c.scramDeletion(d) })
	}
	for _, u := range req.Upsertions {
		meet(u.Name, func() (meta.Record, *apiError) { return scramUpsertion(u) })
	}
	b := c.openBatch()
	for _, user := range users {
		if rec, ok := pending[user]; ok && !c.add(b, rec) {
			errs[user] = errBatchFull()
		}
		e := errs[user]
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode, r.ErrorMessage = user, e.code(), e.message()
		resp.Results = append(resp.Results, r)
	}
	c.seal(b)
	return resp
}

// scramDeletion validates one deletion (validateDeletion) and returns
// its record.
func (c *Controller) scramDeletion(d kmsg.AlterUserSCRAMCredentialsRequestDeletion) (meta.Record, *apiError) {
	m := scramMechanism(d.Mechanism)
	switch {
	case d.Name == "":
		return nil, errorf(kerr.UnacceptableCredential, "Username must not be empty")
	case !m.IsScram():
		return nil, errorf(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	}
	if _, ok := c.spec.LookupScram(m, d.Name); !ok {
		return nil, errorf(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
	}
	return &meta.RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: meta.ScramMechanism(d.Mechanism)}, nil
}

// scramUpsertion validates one upsertion and returns its record, with the
// keys derived from the salted password.
func scramUpsertion(u kmsg.AlterUserSCRAMCredentialsRequestUpsertion) (meta.Record, *apiError) {
	m := scramMechanism(u.Mechanism)
	if err := sasl.ValidateScramUpsertion(u.Name, m, u.Salt, int(u.Iterations), u.SaltedPassword); err != nil {
		return nil, apiErrorOf(err)
	}
	cred, err := sasl.DeriveScramCredential(m, u.Salt, int(u.Iterations), u.SaltedPassword)
	if err != nil {
		return nil, apiErrorOf(err)
	}
	return &meta.UserScramCredentialRecord{
		Name: u.Name, Mechanism: meta.ScramMechanism(u.Mechanism), Salt: cred.Salt,
		StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: u.Iterations,
	}, nil
}

// alterClientQuotas handles AlterClientQuotas
// (ClientQuotaControlManager.alterClientQuotas, KIP-546): each entry is
// validated by core/quota (the entity, no key twice, values the key
// takes) and writes a ClientQuotaRecord for each value that changes and
// each removal of a key that is set; none with validate_only. An entity
// named again in the request is INVALID_REQUEST ("Ignoring duplicate
// entity"), as Kafka answers it.
func (c *Controller) alterClientQuotas(req *kmsg.AlterClientQuotasRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	var b *batch
	if !req.ValidateOnly {
		b = c.openBatch()
	}
	seen := map[quota.Entity]bool{}
	for _, entry := range req.Entries {
		e := c.alterQuotaEntry(b, entry, seen)
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

func (c *Controller) alterQuotaEntry(b *batch, entry kmsg.AlterClientQuotasRequestEntry, seen map[quota.Entity]bool) *apiError {
	components := make([]quota.Component, len(entry.Entity))
	for i, ec := range entry.Entity {
		components[i] = quota.Component{Type: ec.Type, Name: ec.Name}
	}
	ent, err := quota.EntityFromComponents(components)
	if err != nil {
		return apiErrorOf(err)
	}
	if seen[ent] {
		return errorf(kerr.InvalidRequest, "Ignoring duplicate entity %s", ent)
	}
	seen[ent] = true
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
	current := c.spec.ClientQuota(ent)
	data := meta.QuotaEntityData(ent)
	var recs []meta.Record
	for _, op := range ops {
		i := slices.IndexFunc(current, func(v quota.Value) bool { return v.Key == op.Key })
		switch {
		case op.Remove && i >= 0:
			recs = append(recs, &meta.ClientQuotaRecord{Entity: data, Key: string(op.Key), Remove: true})
		case !op.Remove && (i < 0 || current[i].Value != op.Value):
			recs = append(recs, &meta.ClientQuotaRecord{Entity: data, Key: string(op.Key), Value: op.Value})
		}
	}
	if !c.add(b, recs...) {
		return errBatchFull()
	}
	return nil
}
