package acl

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"
)

// Small alphabets make collisions (same resource, prefixes of each other,
// the wildcard) common.
var (
	propNames      = []string{"#", "#a", "a", "ab", "abc", "abd", "b", "ba", "*", "*a", "a*"}
	propPrincipals = []string{"User:alice", "User:bob", WildcardPrincipal, "Group:alice"}
	propHosts      = []string{Wildcard, "h1", "h2"}
	propTypes      = []kmsg.ACLResourceType{kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster}
)

func propOperation() *rapid.Generator[kmsg.ACLOperation] {
	return rapid.Custom(func(t *rapid.T) kmsg.ACLOperation {
		return kmsg.ACLOperation(rapid.IntRange(int(kmsg.ACLOperationAll), int(kmsg.ACLOperationDescribeTokens)).Draw(t, "op"))
	})
}

func propBinding() *rapid.Generator[Binding] {
	return rapid.Custom(func(t *rapid.T) Binding {
		b := Binding{
			Principal:    rapid.SampledFrom(propPrincipals).Draw(t, "principal"),
			Host:         rapid.SampledFrom(propHosts).Draw(t, "host"),
			ResourceType: rapid.SampledFrom(propTypes).Draw(t, "type"),
			ResourceName: rapid.SampledFrom(propNames).Draw(t, "name"),
			PatternType:  rapid.SampledFrom([]kmsg.ACLResourcePatternType{kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed}).Draw(t, "pattern"),
			Operation:    propOperation().Draw(t, "op"),
			Permission:   rapid.SampledFrom([]kmsg.ACLPermissionType{kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny}).Draw(t, "perm"),
		}
		if b.PatternType == kmsg.ACLResourcePatternTypePrefixed && b.ResourceName == Wildcard {
			b.PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
		return b
	})
}

func propRequest() *rapid.Generator[Request] {
	return rapid.Custom(func(t *rapid.T) Request {
		return Request{
			Principal:    rapid.SampledFrom(append([]string{"User:carol"}, propPrincipals...)).Draw(t, "principal"),
			Host:         rapid.SampledFrom([]string{"h1", "h2", "h3", Wildcard}).Draw(t, "host"),
			Operation:    propOperation().Draw(t, "op"),
			ResourceType: rapid.SampledFrom(propTypes).Draw(t, "type"),
			ResourceName: rapid.SampledFrom(append([]string{"abcd", "c", "abc*"}, propNames...)).Draw(t, "name"),
		}
	})
}

func optional(t *rapid.T, label string, values []string) *string {
	if !rapid.Bool().Draw(t, label+"?") {
		return nil
	}
	v := rapid.SampledFrom(values).Draw(t, label)
	return &v
}

func propFilter() *rapid.Generator[Filter] {
	return rapid.Custom(func(t *rapid.T) Filter {
		f := MatchAll
		if rapid.Bool().Draw(t, "type?") {
			f.ResourceType = rapid.SampledFrom(propTypes).Draw(t, "type")
		}
		f.PatternType = kmsg.ACLResourcePatternType(rapid.IntRange(1, 4).Draw(t, "pattern"))
		f.ResourceName = optional(t, "name", append([]string{"abcd"}, propNames...))
		f.Principal = optional(t, "principal", propPrincipals)
		f.Host = optional(t, "host", propHosts)
		if rapid.Bool().Draw(t, "op?") {
			f.Operation = propOperation().Draw(t, "op")
		}
		f.Permission = kmsg.ACLPermissionType(rapid.IntRange(1, 3).Draw(t, "perm"))
		return f
	})
}

// naiveApplies says whether b's resource pattern covers the resource
// t:name, spelled out from Kafka's documentation rather than shared with
// the index.
func naiveApplies(b Binding, t kmsg.ACLResourceType, name string) bool {
	if b.ResourceType != t {
		return false
	}
	if b.PatternType == kmsg.ACLResourcePatternTypeLiteral {
		return b.ResourceName == name || b.ResourceName == "*"
	}
	return strings.HasPrefix(name, b.ResourceName)
}

var naiveImplied = map[kmsg.ACLOperation][]kmsg.ACLOperation{
	kmsg.ACLOperationRead:         {kmsg.ACLOperationDescribe},
	kmsg.ACLOperationWrite:        {kmsg.ACLOperationDescribe},
	kmsg.ACLOperationDelete:       {kmsg.ACLOperationDescribe},
	kmsg.ACLOperationAlter:        {kmsg.ACLOperationDescribe},
	kmsg.ACLOperationAlterConfigs: {kmsg.ACLOperationDescribeConfigs},
}

func naiveMatches(b Binding, r Request) bool {
	if b.Principal != r.Principal && b.Principal != "User:*" {
		return false
	}
	if b.Host != r.Host && b.Host != "*" {
		return false
	}
	switch {
	case b.Operation == kmsg.ACLOperationAll, b.Operation == r.Operation:
		return true
	case b.Permission == kmsg.ACLPermissionTypeAllow:
		return slices.Contains(naiveImplied[b.Operation], r.Operation)
	}
	return false
}

// naiveAuthorize decides by scanning every binding.
func naiveAuthorize(all []Binding, superUsers []string, allowEveryone bool, r Request) Decision {
	if slices.Contains(superUsers, r.Principal) {
		return Decision{Allowed: true, Reason: ReasonSuperUser}
	}
	var applies, allows, denies []Binding
	for _, b := range all {
		if !naiveApplies(b, r.ResourceType, r.ResourceName) {
			continue
		}
		applies = append(applies, b)
		if naiveMatches(b, r) {
			if b.Permission == kmsg.ACLPermissionTypeDeny {
				denies = append(denies, b)
			} else {
				allows = append(allows, b)
			}
		}
	}
	switch {
	case len(denies) > 0:
		return Decision{Reason: ReasonDenyACL, Binding: slices.MinFunc(denies, Compare)}
	case len(allows) > 0:
		return Decision{Allowed: true, Reason: ReasonAllowACL, Binding: slices.MinFunc(allows, Compare)}
	case len(applies) > 0:
		return Decision{Reason: ReasonNoMatchingACL}
	}
	return Decision{Allowed: allowEveryone, Reason: ReasonNoACL}
}

// TestIndexAgreesWithScan checks that the index's lookups, Matching and
// Authorize, agree with a scan of every binding, through random adds and
// removes, and that an index is not changed by deriving another from it.
func TestIndexAgreesWithScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		superUsers := rapid.SliceOfDistinct(rapid.SampledFrom([]string{"User:alice", "User:root"}), rapid.ID).Draw(t, "super")
		allowEveryone := rapid.Bool().Draw(t, "allowEveryone")
		policy, err := NewPolicy(superUsers, allowEveryone)
		require.NoError(t, err)

		var (
			ix    Index
			model []Binding // the bindings, sorted by Compare, no duplicates
		)
		for range rapid.IntRange(1, 12).Draw(t, "steps") {
			before, beforeModel := ix, slices.Clone(model)
			batch := rapid.SliceOfN(propBinding(), 0, 6).Draw(t, "batch")
			if rapid.Bool().Draw(t, "remove") && len(model) > 0 {
				// Remove some present bindings and maybe absent ones.
				victims := rapid.SliceOfN(rapid.SampledFrom(model), 1, 4).Draw(t, "victims")
				batch = append(batch, victims...)
				ix = ix.Remove(batch...)
				model = slices.DeleteFunc(model, func(b Binding) bool {
					return slices.ContainsFunc(batch, func(v Binding) bool { return v == b })
				})
			} else {
				ix, err = ix.Add(batch...)
				require.NoError(t, err)
				for _, b := range batch {
					if i, found := slices.BinarySearchFunc(model, b, Compare); !found {
						model = slices.Insert(model, i, b)
					}
				}
			}
			got, err := before.Matching(MatchAll)
			require.NoError(t, err)
			require.Equal(t, nonNil(beforeModel), nonNil(got), "deriving an index changed its base")
			require.Equal(t, len(model), ix.Len())
			all, err := ix.Matching(MatchAll)
			require.NoError(t, err)
			require.Equal(t, nonNil(model), nonNil(all))

			for range 8 {
				r := propRequest().Draw(t, "request")
				require.Equal(t, naiveAuthorize(model, superUsers, allowEveryone, r), ix.Authorize(policy, r), "request %+v", r)
			}
			for range 4 {
				f := propFilter().Draw(t, "filter")
				var want []Binding
				for _, b := range model {
					if f.Matches(b) {
						want = append(want, b)
					}
				}
				got, err := ix.Matching(f)
				require.NoError(t, err)
				require.Equal(t, nonNil(want), nonNil(got), "filter %+v", f)
			}
		}
	})
}

func nonNil(bs []Binding) []Binding {
	if bs == nil {
		return []Binding{}
	}
	return bs
}

// TestFilterMatchesLikeKafka pins AclBindingFilter's matching, one case a
// row, against an independent reading of Kafka's ResourcePatternFilter.
func TestFilterMatchesLikeKafka(t *testing.T) {
	str := func(s string) *string { return &s }
	lit := Binding{Principal: "User:a", Host: "*", ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "foo",
		PatternType: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	pre := lit
	pre.PatternType = kmsg.ACLResourcePatternTypePrefixed
	wild := lit
	wild.ResourceName = "*"
	for _, tc := range []struct {
		name    string
		pattern kmsg.ACLResourcePatternType
		filter  *string
		b       Binding
		want    bool
	}{
		{"any-nil", kmsg.ACLResourcePatternTypeAny, nil, pre, true},
		{"any-exact", kmsg.ACLResourcePatternTypeAny, str("foo"), pre, true},
		{"any-longer", kmsg.ACLResourcePatternTypeAny, str("foobar"), pre, false},
		{"any-wildcard-not-expanded", kmsg.ACLResourcePatternTypeAny, str("foo"), wild, false},
		{"literal-on-prefixed", kmsg.ACLResourcePatternTypeLiteral, str("foo"), pre, false},
		{"prefixed-exact", kmsg.ACLResourcePatternTypePrefixed, str("foo"), pre, true},
		{"prefixed-not-expanded", kmsg.ACLResourcePatternTypePrefixed, str("foobar"), pre, false},
		{"match-prefix", kmsg.ACLResourcePatternTypeMatch, str("foobar"), pre, true},
		{"match-prefix-shorter", kmsg.ACLResourcePatternTypeMatch, str("fo"), pre, false},
		{"match-literal-longer", kmsg.ACLResourcePatternTypeMatch, str("foobar"), lit, false},
		{"match-wildcard", kmsg.ACLResourcePatternTypeMatch, str("bar"), wild, true},
		{"match-nil", kmsg.ACLResourcePatternTypeMatch, nil, lit, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := MatchAll
			f.PatternType, f.ResourceName = tc.pattern, tc.filter
			require.Equal(t, tc.want, f.Matches(tc.b))
		})
	}
}

// TestErrorsWrapInvalidRequest checks the error the broker maps to a
// Kafka error code.
func TestErrorsWrapInvalidRequest(t *testing.T) {
	err := Binding{}.Validate()
	require.ErrorIs(t, err, kerr.InvalidRequest)
	var ve *ValidationError
	require.True(t, errors.As(err, &ve))
	_, err = Index{}.Matching(Filter{})
	require.ErrorIs(t, err, kerr.InvalidRequest)
	require.False(t, Filter{}.Matches(Binding{}), "an invalid filter matches nothing")
	_, err = NewPolicy([]string{"nocolon"}, false)
	require.ErrorIs(t, err, kerr.InvalidRequest)
}

// TestKafka14435AnotherPrincipalsACLDenies is KAFKA-14435: under
// allow.everyone.if.no.acl.found, an ACL on the resource for another
// principal means the request is denied, not allowed as if there were none.
func TestKafka14435AnotherPrincipalsACLDenies(t *testing.T) {
	policy, err := NewPolicy(nil, true)
	require.NoError(t, err)
	bob := Request{Principal: "User:bob", Host: "10.0.0.2", Operation: kmsg.ACLOperationRead,
		ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders"}
	var ix Index
	require.Equal(t, Decision{Allowed: true, Reason: ReasonNoACL}, ix.Authorize(policy, bob))
	for _, other := range []Binding{
		{Principal: "User:alice", Host: "*", ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders",
			PatternType: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow},
		{Principal: "User:alice", Host: "*", ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "ord",
			PatternType: kmsg.ACLResourcePatternTypePrefixed, Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeAllow},
		{Principal: "User:bob", Host: "10.9.9.9", ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "*",
			PatternType: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow},
	} {
		withOther, err := ix.Add(other)
		require.NoError(t, err)
		require.Equal(t, Decision{Reason: ReasonNoMatchingACL}, withOther.Authorize(policy, bob), "with %s", other)
	}
}

// TestBindingFromKmsg checks the conversions from CreateAcls, DescribeAcls
// and DeleteAcls requests.
func TestBindingFromKmsg(t *testing.T) {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.Principal, c.Host = kmsg.ACLResourceTypeGroup, "etl", "User:alice", "*"
	c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	b := BindingFromCreation(c)
	require.NoError(t, b.Validate(), "kmsg's default pattern type is LITERAL, Kafka's meaning for v0")
	require.Equal(t, "GROUP:LITERAL:etl User:alice@* ALLOW READ", b.String())

	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType = kmsg.ACLResourceTypeGroup, kmsg.ACLResourcePatternTypeMatch
	d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	name := "etl-2"
	d.ResourceName = &name
	require.False(t, FilterFromDescribe(d).Matches(b))
	name = "etl"
	require.True(t, FilterFromDescribe(d).Matches(b))

	del := kmsg.NewDeleteACLsRequestFilter()
	del.ResourceType, del.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	del.Operation, del.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeDeny
	require.False(t, FilterFromDeletion(del).Matches(b))
	del.PermissionType = kmsg.ACLPermissionTypeAllow
	require.True(t, FilterFromDeletion(del).Matches(b))
}
