package broker

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
)

// TestAuthorizationReadsTheImagesACLs: without the test hook, decisions
// come from the applied image's ACL index, for the connection's principal
// (User:ANONYMOUS before authentication); without an Authorizer nothing
// is checked.
func TestAuthorizationReadsTheImagesACLs(t *testing.T) {
	ix, err := acl.Index{}.Add(acl.Binding{Principal: "User:ANONYMOUS", Host: acl.Wildcard,
		ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "a", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Operation: kmsg.ACLOperationDescribe, Permission: kmsg.ACLPermissionTypeAllow})
	require.NoError(t, err)
	policy, err := acl.NewPolicy(nil, false)
	require.NoError(t, err)
	listed := func(e *fakeEnv) []string {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		var names []string
		for _, tp := range roundTrip[*kmsg.MetadataResponse](t, e, req).Topics {
			names = append(names, *tp.Topic)
		}
		slices.Sort(names)
		return names
	}
	logDirs := func(e *fakeEnv) int16 {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = 4
		return roundTrip[*kmsg.DescribeLogDirsResponse](t, e, req).ErrorCode
	}

	_, e, md := newAdminBroker(t, func(c *Config) { c.Authorizer = &policy })
	md.img = md.img.WithACLs(ix)
	require.Equal(t, []string{"a"}, listed(e))
	require.Equal(t, kerr.ClusterAuthorizationFailed.Code, logDirs(e))

	_, e, md = newAdminBroker(t)
	md.img = md.img.WithACLs(ix)
	require.Equal(t, []string{"__internal", "a", "b", "c"}, listed(e))
	require.Zero(t, logDirs(e))
}

// TestEveryAPIHasAnAuthorizationRow: apiAuth decides every API the
// broker serves and says what it needs (an API without a row would be
// refused whole).
func TestEveryAPIHasAnAuthorizationRow(t *testing.T) {
	for _, a := range apis {
		rule, ok := apiAuth[kmsg.Key(a.Key)]
		require.True(t, ok, "%s has no row in apiAuth", a.Name())
		require.NotEmpty(t, rule.needs, a.Name())
	}
	require.Len(t, apiAuth, len(apis), "apiAuth has rows for APIs the broker does not serve")
}
