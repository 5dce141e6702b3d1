package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/quota"
)

// The security APIs (KIP-140's ACLs, KIP-554's SCRAM credentials, KIP-546's
// client quotas). The Alter ones are decided by the active controller
// (core/controller/security.go) and authorized here first, since only the
// broker knows the client's principal; the Describe ones are answered from
// the broker's image. They are served with or without an authorizer
// (Kafka answers the ACL APIs SECURITY_DISABLED without one), so ACLs can be
// written before authorization is switched on.

// authorizeCluster answers r with CLUSTER_AUTHORIZATION_FAILED, in every
// place its response has an error code, unless the principal may perform
// op on the cluster; it reports whether r may go on.
func (b *Broker) authorizeCluster(r *request, op kmsg.ACLOperation) bool {
	if b.authorized(r, op, kmsg.ACLResourceTypeCluster, clusterName) {
		return true
	}
	msg := fmt.Sprintf("Cluster authorization failed: %s needs %s on the cluster.", r.hdr.APIName(), op)
	r.respond(protocol.ErrorResponse(r.body, kerr.ClusterAuthorizationFailed, msg))
	return false
}

// controllerWithClusterOp passes a request to the controller once the
// principal is authorized for op on the cluster.
func controllerWithClusterOp(op kmsg.ACLOperation) func(*Broker, *request) {
	return func(b *Broker, r *request) {
		if b.authorizeCluster(r, op) {
			handleController(b, r)
		}
	}
}

// handleDescribeACLs answers DescribeAcls from the image's ACL index:
// the bindings the filter matches (acl.Filter), grouped by resource
// pattern, in acl.Compare order. A malformed filter is INVALID_REQUEST.
func handleDescribeACLs(b *Broker, r *request) {
	if !b.authorizeCluster(r, kmsg.ACLOperationDescribe) {
		return
	}
	req := r.body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	bindings, err := b.acls().Matching(acl.FilterFromDescribe(req))
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		r.respond(resp)
		return
	}
	for _, bd := range bindings {
		n := len(resp.Resources)
		if n == 0 || !sameResource(resp.Resources[n-1], bd) {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = bd.ResourceType, bd.ResourceName, bd.PatternType
			resp.Resources = append(resp.Resources, res)
			n++
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, a)
	}
	r.respond(resp)
}

func sameResource(res kmsg.DescribeACLsResponseResource, b acl.Binding) bool {
	return res.ResourceType == b.ResourceType && res.ResourceName == b.ResourceName && res.ResourcePatternType == b.PatternType
}

// handleDescribeUserSCRAMCredentials answers DescribeUserScramCredentials
// from the image as Kafka's ScramImage.describe: every user with a
// credential when none is named (by name), else each named user once, in
// request order; a user named twice is DUPLICATE_RESOURCE, one without a
// credential RESOURCE_NOT_FOUND. Only mechanisms and iterations are
// answered, never salts or keys.
func handleDescribeUserSCRAMCredentials(b *Broker, r *request) {
	if !b.authorizeCluster(r, kmsg.ACLOperationDescribe) {
		return
	}
	req := r.body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	img := b.image()
	infos := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	var all []string
	if img != nil {
		for c := range img.ScramCredentials() {
			if _, ok := infos[c.User]; !ok {
				all = append(all, c.User)
			}
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = int8(c.Mechanism), c.Iterations
			infos[c.User] = append(infos[c.User], ci)
		}
	}
	users, count := all, map[string]int{}
	if len(req.Users) > 0 {
		users = nil
		for _, u := range req.Users {
			if count[u.Name] == 0 {
				users = append(users, u.Name)
			}
			count[u.Name]++
		}
	}
	for _, user := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = user
		switch {
		case count[user] > 1:
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + user)
		case len(infos[user]) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + user)
		default:
			res.CredentialInfos = infos[user]
		}
		resp.Results = append(resp.Results, res)
	}
	r.respond(resp)
}

// handleDescribeClientQuotas answers DescribeClientQuotas from the
// image's client quotas with core/quota's matching (KIP-546: exact,
// default and any components, strict or not), sorted by entity and key.
// A malformed filter gets quota's error code (INVALID_REQUEST, or
// UNSUPPORTED_VERSION for an unknown entity type) and no entries.
func handleDescribeClientQuotas(b *Broker, r *request) {
	if !b.authorizeCluster(r, kmsg.ACLOperationDescribeConfigs) {
		return
	}
	req := r.body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	img := b.image()
	if img == nil {
		img = meta.Empty()
	}
	f := quota.Filter{Strict: req.Strict}
	for _, c := range req.Components {
		f.Components = append(f.Components, quota.FilterComponent{Type: c.EntityType, Match: quota.MatchType(c.MatchType), Name: c.Match})
	}
	var described []quota.Described
	m, err := img.QuotaManager(quota.Config{})
	if err == nil {
		described, err = m.Describe(f)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = b.code(err), kmsg.StringPtr(err.Error())
		r.respond(resp)
		return
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, d := range described {
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range meta.QuotaEntityData(d.Entity) {
			ec := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ec.Type, ec.Name = c.EntityType, c.EntityName
			e.Entity = append(e.Entity, ec)
		}
		for _, v := range d.Values {
			ev := kmsg.NewDescribeClientQuotasResponseEntryValue()
			ev.Key, ev.Value = string(v.Key), v.Value
			e.Values = append(e.Values, ev)
		}
		resp.Entries = append(resp.Entries, e)
	}
	r.respond(resp)
}
