package acl

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Wildcard is the resource name and host that match every name or host
// ("*", Kafka's ResourcePattern.WILDCARD_RESOURCE and AclEntry's wildcard
// host).
const Wildcard = "*"

// WildcardPrincipal is the principal of a binding that matches every
// principal (Kafka's StandardAuthorizer.WILDCARD_PRINCIPAL). Only the User
// type has a wildcard, as in Kafka.
const WildcardPrincipal = "User:*"

// Binding is one ACL: Permission for Principal, connecting from Host, to
// perform Operation on the resources of ResourceType that PatternType and
// ResourceName select. It is Kafka's AclBinding (a ResourcePattern and an
// AccessControlEntry) and the body of an AccessControlEntryRecord.
type Binding struct {
	// Principal is "Type:name", such as "User:alice", or WildcardPrincipal.
	Principal string
	// Host is the client's address as the broker prints it, or Wildcard.
	Host string
	// ResourceType is TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID,
	// DELEGATION_TOKEN or USER.
	ResourceType kmsg.ACLResourceType
	// ResourceName is the literal name, the name prefix, or Wildcard.
	ResourceName string
	// PatternType is LITERAL or PREFIXED.
	PatternType kmsg.ACLResourcePatternType
	// Operation is any operation but UNKNOWN and ANY; ALL stands for every
	// operation.
	Operation kmsg.ACLOperation
	// Permission is ALLOW or DENY.
	Permission kmsg.ACLPermissionType
}

// String renders b as "TYPE:PATTERN:name principal@host PERMISSION
// OPERATION", which is how scripts and logs show a binding.
func (b Binding) String() string {
	return fmt.Sprintf("%s:%s:%s %s@%s %s %s", b.ResourceType, b.PatternType, b.ResourceName,
		b.Principal, b.Host, b.Permission, b.Operation)
}

// Compare orders bindings by resource type, pattern type, resource name,
// principal, host, operation and permission. Every listing of this package
// is in this order.
func Compare(a, b Binding) int {
	if c := cmp.Compare(a.ResourceType, b.ResourceType); c != 0 {
		return c
	}
	if c := cmp.Compare(a.PatternType, b.PatternType); c != 0 {
		return c
	}
	if c := strings.Compare(a.ResourceName, b.ResourceName); c != 0 {
		return c
	}
	return compareEntry(a, b)
}

// compareEntry orders bindings of one resource.
func compareEntry(a, b Binding) int {
	if c := strings.Compare(a.Principal, b.Principal); c != 0 {
		return c
	}
	if c := strings.Compare(a.Host, b.Host); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Operation, b.Operation); c != 0 {
		return c
	}
	return cmp.Compare(a.Permission, b.Permission)
}

// Validate reports whether b may be created, as CreateAcls checks it
// (Kafka's AclControlManager.validateNewAcl). The error wraps
// kerr.InvalidRequest and names the field at fault. Beyond Kafka it refuses
// a principal whose type or name is empty, an empty host (Wildcard means
// every host) and a PREFIXED Wildcard name (which would match only names
// starting with "*", never what the user meant).
func (b Binding) Validate() error {
	if !concreteResourceType(b.ResourceType) {
		return invalid("resource type %s (%d) cannot be bound: use a concrete type such as TOPIC or GROUP", b.ResourceType, int8(b.ResourceType))
	}
	if b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed {
		return invalid("pattern type %s (%d) cannot be bound: use LITERAL or PREFIXED", b.PatternType, int8(b.PatternType))
	}
	if !concreteOperation(b.Operation) {
		return invalid("operation %s (%d) cannot be bound", b.Operation, int8(b.Operation))
	}
	if b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny {
		return invalid("permission type %s (%d) cannot be bound: use ALLOW or DENY", b.Permission, int8(b.Permission))
	}
	if b.ResourceName == "" {
		return invalid("resource name is empty")
	}
	if b.PatternType == kmsg.ACLResourcePatternTypePrefixed && b.ResourceName == Wildcard {
		return invalid("a PREFIXED pattern cannot have the wildcard name %q: use LITERAL %q for every resource", Wildcard, Wildcard)
	}
	if err := ValidatePrincipal(b.Principal); err != nil {
		return err
	}
	if b.Host == "" {
		return invalid("host is empty: use %q for every host", Wildcard)
	}
	return nil
}

// ValidatePrincipal reports whether p has the form "Type:name" with a
// non-empty type and name (Kafka's SecurityUtils.parseKafkaPrincipal, which
// splits at the first colon). The error wraps kerr.InvalidRequest.
func ValidatePrincipal(p string) error {
	typ, name, ok := strings.Cut(p, ":")
	switch {
	case !ok:
		return invalid("principal %q is not of the form Type:name (no colon separates the type from the name)", p)
	case typ == "":
		return invalid("principal %q has an empty type", p)
	case name == "":
		return invalid("principal %q has an empty name", p)
	}
	return nil
}

// BindingFromCreation returns the binding a CreateAcls creation asks for,
// unvalidated. A v0 request has no pattern type; kmsg decodes it as
// LITERAL, Kafka's meaning for v0.
func BindingFromCreation(c kmsg.CreateACLsRequestCreation) Binding {
	return Binding{
		Principal:    c.Principal,
		Host:         c.Host,
		ResourceType: c.ResourceType,
		ResourceName: c.ResourceName,
		PatternType:  c.ResourcePatternType,
		Operation:    c.Operation,
		Permission:   c.PermissionType,
	}
}

// concreteResourceType reports whether t names one kind of resource (not
// UNKNOWN, ANY, or a value kmsg does not know).
func concreteResourceType(t kmsg.ACLResourceType) bool {
	return t != kmsg.ACLResourceTypeAny && t.String() != "UNKNOWN"
}

// concreteOperation reports whether op is an operation a binding or request
// can name (ALL included; not UNKNOWN, ANY, or a value kmsg does not know).
func concreteOperation(op kmsg.ACLOperation) bool {
	return op != kmsg.ACLOperationAny && op.String() != "UNKNOWN"
}

// ValidationError is the error of a malformed binding, filter or
// principal. It wraps kerr.InvalidRequest, the code Kafka answers for them;
// its message, fit for a response's error message, names the problem.
type ValidationError struct {
	// Problem says what is wrong.
	Problem string
}

// Error returns the problem.
func (e *ValidationError) Error() string { return e.Problem }

// Unwrap returns kerr.InvalidRequest.
func (e *ValidationError) Unwrap() error { return kerr.InvalidRequest }

func invalid(format string, args ...any) error {
	return &ValidationError{Problem: fmt.Sprintf(format, args...)}
}
