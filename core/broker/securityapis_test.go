package broker

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/quota"
	"github.com/strata-log/strata/core/sasl"
)

// securityImage is testImage with ACLs, SCRAM credentials and quotas.
func securityImage(t *testing.T, bindings ...acl.Binding) *meta.Image {
	t.Helper()
	base := testImage(t)
	d := base.NewDelta()
	for i, b := range bindings {
		require.NoError(t, d.Replay(meta.AccessControlEntryFor(meta.UUID{0: 0xac, 15: byte(i + 1)}, b)))
	}
	for _, c := range []struct {
		user string
		m    meta.ScramMechanism
		n    int
		it   int32
	}{{"bob", meta.ScramSHA512, 64, 8192}, {"alice", meta.ScramSHA256, 32, 4096}, {"alice", meta.ScramSHA512, 64, 4096}} {
		cred, err := sasl.DeriveScramCredential(c.m.SASL(), []byte("salt"), int(c.it), slices.Repeat([]byte{1}, c.n))
		require.NoError(t, err)
		require.NoError(t, d.Replay(&meta.UserScramCredentialRecord{Name: c.user, Mechanism: c.m, Salt: cred.Salt,
			StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: c.it}))
	}
	require.NoError(t, d.Replay(&meta.ClientQuotaRecord{Entity: meta.QuotaEntityData(quota.Entity{User: quota.Named("alice")}),
		Key: string(quota.ProducerByteRate), Value: 1024}))
	require.NoError(t, d.Replay(&meta.ClientQuotaRecord{Entity: meta.QuotaEntityData(quota.Entity{User: quota.Default()}),
		Key: string(quota.RequestPercentage), Value: 50}))
	return d.Apply(meta.Position{Offset: base.Position().Offset + 10, Epoch: 1})
}

func clusterACL(op kmsg.ACLOperation) acl.Binding {
	return acl.Binding{Principal: "User:ANONYMOUS", Host: "*", ResourceType: kmsg.ACLResourceTypeCluster,
		ResourceName: clusterName, PatternType: kmsg.ACLResourcePatternTypeLiteral, Operation: op,
		Permission: kmsg.ACLPermissionTypeAllow}
}

func topicACL(principal, topic string, pattern kmsg.ACLResourcePatternType) acl.Binding {
	return acl.Binding{Principal: principal, Host: "*", ResourceType: kmsg.ACLResourceTypeTopic,
		ResourceName: topic, PatternType: pattern, Operation: kmsg.ACLOperationRead,
		Permission: kmsg.ACLPermissionTypeAllow}
}

// describeAll is a DescribeAcls request for every binding.
func describeAll() *kmsg.DescribeACLsRequest {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.Version = 3
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	return req
}

func withAuthorizer(t *testing.T) func(*Config) {
	p, err := acl.NewPolicy(nil, false)
	require.NoError(t, err)
	return func(c *Config) { c.Authorizer = &p }
}

// TestSecurityAPIsRefuseWithoutClusterACL: with an authorizer and no ACL
// for the anonymous principal, every security API answers
// CLUSTER_AUTHORIZATION_FAILED in each of its error places, and nothing
// reaches the controller.
func TestSecurityAPIsRefuseWithoutClusterACL(t *testing.T) {
	_, e, md := newAdminBroker(t, withAuthorizer(t))
	md.img = securityImage(t, topicACL("User:alice", "a", kmsg.ACLResourcePatternTypeLiteral))
	denied := kerr.ClusterAuthorizationFailed.Code

	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.Version = 3
	require.Equal(t, denied, roundTrip[*kmsg.DescribeACLsResponse](t, e, describe).ErrorCode)

	create := kmsg.NewPtrCreateACLsRequest()
	create.Version = 3
	create.Creations = []kmsg.CreateACLsRequestCreation{kmsg.NewCreateACLsRequestCreation(), kmsg.NewCreateACLsRequestCreation()}
	cr := roundTrip[*kmsg.CreateACLsResponse](t, e, create)
	require.Len(t, cr.Results, 2)
	for _, r := range cr.Results {
		require.Equal(t, denied, r.ErrorCode)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	del.Filters = []kmsg.DeleteACLsRequestFilter{kmsg.NewDeleteACLsRequestFilter()}
	require.Equal(t, denied, roundTrip[*kmsg.DeleteACLsResponse](t, e, del).Results[0].ErrorCode)

	scram := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	require.Equal(t, denied, roundTrip[*kmsg.DescribeUserSCRAMCredentialsResponse](t, e, scram).ErrorCode)

	alterScram := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	alterScram.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "carol"}}
	as := roundTrip[*kmsg.AlterUserSCRAMCredentialsResponse](t, e, alterScram)
	require.Equal(t, []int16{denied}, []int16{as.Results[0].ErrorCode})
	require.Equal(t, "carol", as.Results[0].User)

	quotas := kmsg.NewPtrDescribeClientQuotasRequest()
	quotas.Version = 1
	require.Equal(t, denied, roundTrip[*kmsg.DescribeClientQuotasResponse](t, e, quotas).ErrorCode)

	alterQuotas := kmsg.NewPtrAlterClientQuotasRequest()
	alterQuotas.Version = 1
	alterQuotas.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user"}}}}
	aq := roundTrip[*kmsg.AlterClientQuotasResponse](t, e, alterQuotas)
	require.Equal(t, denied, aq.Entries[0].ErrorCode)
	require.Equal(t, "user", aq.Entries[0].Entity[0].Type)

	require.Empty(t, md.reqs, "refused requests never reach the controller")
}

// TestSecurityAPIsNeedTheirOperation: DESCRIBE on the cluster lets the
// Describe APIs through but not the Alter ones; ALTER lets CreateACLs reach
// the controller; ALTER implies DESCRIBE; ALTER_CONFIGS serves the quota
// APIs.
func TestSecurityAPIsNeedTheirOperation(t *testing.T) {
	_, e, md := newAdminBroker(t, withAuthorizer(t))
	md.img = securityImage(t, clusterACL(kmsg.ACLOperationDescribe))

	described := roundTrip[*kmsg.DescribeACLsResponse](t, e, describeAll())
	require.Zero(t, described.ErrorCode)
	require.Len(t, described.Resources, 1)
	create := kmsg.NewPtrCreateACLsRequest()
	create.Version = 3
	create.Creations = []kmsg.CreateACLsRequestCreation{kmsg.NewCreateACLsRequestCreation()}
	require.Equal(t, kerr.ClusterAuthorizationFailed.Code, roundTrip[*kmsg.CreateACLsResponse](t, e, create).Results[0].ErrorCode)
	quotas := kmsg.NewPtrDescribeClientQuotasRequest()
	require.Equal(t, kerr.ClusterAuthorizationFailed.Code, roundTrip[*kmsg.DescribeClientQuotasResponse](t, e, quotas).ErrorCode,
		"DESCRIBE does not imply DESCRIBE_CONFIGS")

	md.img = securityImage(t, clusterACL(kmsg.ACLOperationAlter), clusterACL(kmsg.ACLOperationAlterConfigs))
	require.Zero(t, roundTrip[*kmsg.DescribeUserSCRAMCredentialsResponse](t, e, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).ErrorCode)
	require.Zero(t, roundTrip[*kmsg.DescribeClientQuotasResponse](t, e, quotas).ErrorCode)
	c := e.net.connect()
	c.deliver(encodeRequest(create, 5))
	e.run()
	require.Len(t, md.reqs, 1, "authorized: passed to the controller")
	require.IsType(t, &kmsg.CreateACLsRequest{}, md.reqs[0])
}

// TestDescribeACLsFromImage: the image's bindings, filtered and grouped by
// resource pattern, at every version (v0 filters and answers LITERAL
// only).
func TestDescribeACLsFromImage(t *testing.T) {
	_, e, md := newAdminBroker(t)
	md.img = securityImage(t,
		topicACL("User:alice", "orders", kmsg.ACLResourcePatternTypeLiteral),
		topicACL("User:bob", "orders", kmsg.ACLResourcePatternTypeLiteral),
		topicACL("User:bob", "ord", kmsg.ACLResourcePatternTypePrefixed),
		clusterACL(kmsg.ACLOperationAlter))
	for _, v := range versions(t, kmsg.DescribeACLs) {
		req := describeAll()
		req.Version = v
		req.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
		req.ResourceType = kmsg.ACLResourceTypeTopic
		req.ResourceName = kmsg.StringPtr("orders")
		if v >= 1 {
			req.ResourcePatternType = kmsg.ACLResourcePatternTypeMatch
		}
		resp := roundTrip[*kmsg.DescribeACLsResponse](t, e, req)
		require.Zero(t, resp.ErrorCode)
		var got []string
		for _, res := range resp.Resources {
			for _, a := range res.ACLs {
				got = append(got, acl.Binding{Principal: a.Principal, Host: a.Host, ResourceType: res.ResourceType,
					ResourceName: res.ResourceName, PatternType: res.ResourcePatternType, Operation: a.Operation,
					Permission: a.PermissionType}.String())
			}
		}
		want := []string{"TOPIC:LITERAL:orders User:alice@* ALLOW READ", "TOPIC:LITERAL:orders User:bob@* ALLOW READ"}
		if v >= 1 {
			want = append([]string{"TOPIC:PREFIXED:ord User:bob@* ALLOW READ"}, want...)
			require.Len(t, resp.Resources, 2, "v%d: grouped by resource pattern", v)
		}
		require.ElementsMatch(t, want, got, "v%d", v)
	}
	bad := kmsg.NewPtrDescribeACLsRequest()
	bad.Version, bad.Operation = 3, kmsg.ACLOperationUnknown
	require.Equal(t, kerr.InvalidRequest.Code, roundTrip[*kmsg.DescribeACLsResponse](t, e, bad).ErrorCode)
}

// TestDescribeUserSCRAMCredentialsFromImage: ScramImage.describe's
// answers, mechanisms and iterations only.
func TestDescribeUserSCRAMCredentialsFromImage(t *testing.T) {
	_, e, md := newAdminBroker(t)
	md.img = securityImage(t)
	type info struct {
		user string
		code int16
		mech []int8
		its  []int32
	}
	flatten := func(resp *kmsg.DescribeUserSCRAMCredentialsResponse) []info {
		var out []info
		for _, r := range resp.Results {
			i := info{user: r.User, code: r.ErrorCode}
			for _, c := range r.CredentialInfos {
				i.mech, i.its = append(i.mech, c.Mechanism), append(i.its, c.Iterations)
			}
			out = append(out, i)
		}
		return out
	}
	all := roundTrip[*kmsg.DescribeUserSCRAMCredentialsResponse](t, e, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest())
	require.Equal(t, []info{
		{user: "alice", mech: []int8{1, 2}, its: []int32{4096, 4096}},
		{user: "bob", mech: []int8{2}, its: []int32{8192}},
	}, flatten(all))

	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range []string{"bob", "carol", "alice", "bob"} {
		req.Users = append(req.Users, kmsg.DescribeUserSCRAMCredentialsRequestUser{Name: u})
	}
	named := roundTrip[*kmsg.DescribeUserSCRAMCredentialsResponse](t, e, req)
	require.Equal(t, []info{
		{user: "bob", code: kerr.DuplicateResource.Code},
		{user: "carol", code: kerr.ResourceNotFound.Code},
		{user: "alice", mech: []int8{1, 2}, its: []int32{4096, 4096}},
	}, flatten(named))
}

// TestDescribeClientQuotasFromImage: KIP-546's matching over the image's
// quotas, and a malformed filter's code.
func TestDescribeClientQuotasFromImage(t *testing.T) {
	_, e, md := newAdminBroker(t)
	md.img = securityImage(t)
	for _, v := range versions(t, kmsg.DescribeClientQuotas) {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Version = v
		req.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: kmsg.QuotasMatchTypeExact, Match: kmsg.StringPtr("alice")}}
		resp := roundTrip[*kmsg.DescribeClientQuotasResponse](t, e, req)
		require.Zero(t, resp.ErrorCode)
		require.Len(t, resp.Entries, 1)
		require.Equal(t, "alice", *resp.Entries[0].Entity[0].Name)
		require.Equal(t, []kmsg.DescribeClientQuotasResponseEntryValue{{Key: "producer_byte_rate", Value: 1024}}, resp.Entries[0].Values)

		all := kmsg.NewPtrDescribeClientQuotasRequest()
		all.Version = v
		require.Len(t, roundTrip[*kmsg.DescribeClientQuotasResponse](t, e, all).Entries, 2)

		bad := kmsg.NewPtrDescribeClientQuotasRequest()
		bad.Version = v
		bad.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "group", MatchType: kmsg.QuotasMatchTypeAny}}
		br := roundTrip[*kmsg.DescribeClientQuotasResponse](t, e, bad)
		require.Equal(t, kerr.UnsupportedVersion.Code, br.ErrorCode)
		require.Nil(t, br.Entries)
	}
}
