package acl

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Filter selects bindings for DescribeAcls and DeleteAcls, with Kafka's
// AclBindingFilter semantics: ANY in an enum field and nil in a string field
// match every binding; PatternType MATCH with a name selects the bindings
// that apply to a resource of that name (LITERAL with the name or Wildcard,
// PREFIXED with a prefix of it); PatternType ANY or a concrete pattern type
// with a name matches that name exactly.
type Filter struct {
	// ResourceType is a concrete type or ANY.
	ResourceType kmsg.ACLResourceType
	// ResourceName is the name to match, or nil for every name.
	ResourceName *string
	// PatternType is LITERAL, PREFIXED, ANY or MATCH.
	PatternType kmsg.ACLResourcePatternType
	// Principal is the principal to match exactly, or nil for every one.
	Principal *string
	// Host is the host to match exactly, or nil for every one.
	Host *string
	// Operation is the operation to match exactly, or ANY.
	Operation kmsg.ACLOperation
	// Permission is ALLOW, DENY or ANY.
	Permission kmsg.ACLPermissionType
}

// MatchAll is the filter that every binding matches.
var MatchAll = Filter{
	ResourceType: kmsg.ACLResourceTypeAny,
	PatternType:  kmsg.ACLResourcePatternTypeAny,
	Operation:    kmsg.ACLOperationAny,
	Permission:   kmsg.ACLPermissionTypeAny,
}

// FilterFromDescribe returns the filter of a DescribeAcls request,
// unvalidated.
func FilterFromDescribe(r *kmsg.DescribeACLsRequest) Filter {
	return Filter{
		ResourceType: r.ResourceType,
		ResourceName: r.ResourceName,
		PatternType:  r.ResourcePatternType,
		Principal:    r.Principal,
		Host:         r.Host,
		Operation:    r.Operation,
		Permission:   r.PermissionType,
	}
}

// FilterFromDeletion returns one filter of a DeleteAcls request,
// unvalidated.
func FilterFromDeletion(f kmsg.DeleteACLsRequestFilter) Filter {
	return Filter{
		ResourceType: f.ResourceType,
		ResourceName: f.ResourceName,
		PatternType:  f.ResourcePatternType,
		Principal:    f.Principal,
		Host:         f.Host,
		Operation:    f.Operation,
		Permission:   f.PermissionType,
	}
}

// Validate reports whether f can be matched: Kafka refuses a filter with an
// UNKNOWN field (AclControlManager.validateFilter), and so does this, and
// with a value kmsg does not know. The error wraps kerr.InvalidRequest.
func (f Filter) Validate() error {
	if f.ResourceType.String() == "UNKNOWN" {
		return invalid("filter resource type %s (%d) is not known", f.ResourceType, int8(f.ResourceType))
	}
	if f.PatternType.String() == "UNKNOWN" {
		return invalid("filter pattern type %s (%d) is not known", f.PatternType, int8(f.PatternType))
	}
	if f.Operation.String() == "UNKNOWN" {
		return invalid("filter operation %s (%d) is not known", f.Operation, int8(f.Operation))
	}
	if f.Permission.String() == "UNKNOWN" {
		return invalid("filter permission type %s (%d) is not known", f.Permission, int8(f.Permission))
	}
	return nil
}

// Matches reports whether b is selected by f (Kafka's
// AclBindingFilter.matches). An invalid filter matches nothing.
func (f Filter) Matches(b Binding) bool {
	if f.Validate() != nil {
		return false
	}
	return f.matchesPattern(b) && f.matchesEntry(b)
}

// matchesPattern is Kafka's ResourcePatternFilter.matches.
func (f Filter) matchesPattern(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != kmsg.ACLResourcePatternTypeAny && f.PatternType != kmsg.ACLResourcePatternTypeMatch &&
		f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType != kmsg.ACLResourcePatternTypeMatch {
		return name == b.ResourceName
	}
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return name == b.ResourceName || b.ResourceName == Wildcard
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// matchesEntry is Kafka's AccessControlEntryFilter.matches.
func (f Filter) matchesEntry(b Binding) bool {
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission
}
