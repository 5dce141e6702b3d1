package acl

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/plant"
)

// ClusterName is the name of the one CLUSTER resource in ACL bindings.
const ClusterName = "kafka-cluster"

// Policy is the authorizer's static configuration.
type Policy struct {
	superUsers map[string]struct{}
	// allowIfNoACL is allow.everyone.if.no.acl.found.
	allowIfNoACL bool
}

// NewPolicy returns the policy for super.users (principals allowed
// everything, matched exactly as Kafka does: "User:*" here is not a
// wildcard) and allow.everyone.if.no.acl.found (Kafka's default is false).
// The error, for a malformed principal, wraps kerr.InvalidRequest.
func NewPolicy(superUsers []string, allowEveryoneIfNoACLFound bool) (Policy, error) {
	p := Policy{superUsers: make(map[string]struct{}, len(superUsers)), allowIfNoACL: allowEveryoneIfNoACLFound}
	for _, u := range superUsers {
		if err := ValidatePrincipal(u); err != nil {
			return Policy{}, fmt.Errorf("super.users: %w", err)
		}
		p.superUsers[u] = struct{}{}
	}
	return p, nil
}

// ParseSuperUsers splits the value of Kafka's super.users config, a list of
// principals separated by semicolons ("User:admin;User:ops"), ignoring
// spaces around each and empty entries.
func ParseSuperUsers(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ";") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// IsSuperUser reports whether principal is one of p's super users.
func (p Policy) IsSuperUser(principal string) bool {
	_, ok := p.superUsers[principal]
	return ok
}

// Request is one authorization question: may Principal, connected from
// Host, perform Operation on the resource ResourceType:ResourceName? It is
// Kafka's AuthorizableRequestContext and Action, with the resource always a
// literal name (Kafka refuses other pattern types in an Action).
type Request struct {
	// Principal is the authenticated principal, "Type:name".
	Principal string
	// Host is the client's address as bindings name it.
	Host string
	// Operation is a concrete operation (not UNKNOWN or ANY).
	Operation kmsg.ACLOperation
	// ResourceType is a concrete resource type (not UNKNOWN or ANY).
	ResourceType kmsg.ACLResourceType
	// ResourceName is the resource's name ("kafka-cluster" for CLUSTER).
	ResourceName string
}

// Reason says which rule made a Decision.
type Reason int8

// The reasons a Decision gives, after Kafka's MatchingRule kinds.
const (
	// ReasonInvalidRequest: the request names no concrete operation or
	// resource type, or its principal is malformed; it is denied.
	ReasonInvalidRequest Reason = iota
	// ReasonSuperUser: the principal is a super user; allowed.
	ReasonSuperUser
	// ReasonDenyACL: a DENY binding matched; denied (Kafka's
	// MatchingAcl with DENIED).
	ReasonDenyACL
	// ReasonAllowACL: an ALLOW binding matched and no DENY did; allowed
	// (Kafka's MatchingAcl with ALLOWED).
	ReasonAllowACL
	// ReasonNoMatchingACL: bindings apply to the resource but none
	// matches the request; denied (Kafka's DENY_RULE).
	ReasonNoMatchingACL
	// ReasonNoACL: no binding applies to the resource at all; allowed
	// only under allow.everyone.if.no.acl.found (Kafka's DefaultAllow and
	// DefaultDeny).
	ReasonNoACL
)

// String names r as Kafka's audit log does where it can.
func (r Reason) String() string {
	switch r {
	case ReasonInvalidRequest:
		return "InvalidRequest"
	case ReasonSuperUser:
		return "SuperUser"
	case ReasonDenyACL:
		return "MatchingDenyAcl"
	case ReasonAllowACL:
		return "MatchingAllowAcl"
	case ReasonNoMatchingACL:
		return "NoMatchingAcl"
	case ReasonNoACL:
		return "NoAcl"
	}
	return fmt.Sprintf("Reason(%d)", int8(r))
}

// Decision is the answer to a Request.
type Decision struct {
	// Allowed is the answer.
	Allowed bool
	// Reason is the rule that decided.
	Reason Reason
	// Binding is the binding that decided when Reason is ReasonDenyACL or
	// ReasonAllowACL: the least matching one in Compare's order.
	Binding Binding
}

// String renders d for logs and scripts.
func (d Decision) String() string {
	verdict := "DENIED"
	if d.Allowed {
		verdict = "ALLOWED"
	}
	if d.Reason == ReasonDenyACL || d.Reason == ReasonAllowACL {
		return fmt.Sprintf("%s by %s (%s)", verdict, d.Reason, d.Binding)
	}
	return fmt.Sprintf("%s by %s", verdict, d.Reason)
}

// Authorize decides r under p with the bindings of ix, by the rules in the
// package documentation.
func (ix Index) Authorize(p Policy, r Request) Decision {
	if !concreteOperation(r.Operation) || !concreteResourceType(r.ResourceType) || ValidatePrincipal(r.Principal) != nil {
		return Decision{Reason: ReasonInvalidRequest}
	}
	if p.IsSuperUser(r.Principal) {
		return Decision{Allowed: true, Reason: ReasonSuperUser}
	}
	var (
		anyApplies bool
		allow      Binding
		allowed    bool
		deny       Binding
		denied     bool
	)
	// applicable visits patterns in Compare's order and each pattern's
	// bindings are sorted, so the first DENY seen is the least, and so is
	// the first ALLOW.
	ix.applicable(r.ResourceType, r.ResourceName, func(bs []Binding) bool {
		anyApplies = anyApplies || len(bs) > 0
		for _, b := range bs {
			switch matchEntry(b, r) {
			case kmsg.ACLPermissionTypeDeny:
				deny, denied = b, true
				if plant.Is(plant.AllowIgnoresDeny) {
					continue // planted: look on for an ALLOW
				}
				return true
			case kmsg.ACLPermissionTypeAllow:
				if !allowed {
					allow, allowed = b, true
				}
			}
		}
		return false
	})
	switch {
	case denied && !(allowed && plant.Is(plant.AllowIgnoresDeny)):
		return Decision{Reason: ReasonDenyACL, Binding: deny}
	case allowed:
		return Decision{Allowed: true, Reason: ReasonAllowACL, Binding: allow}
	case anyApplies:
		return Decision{Reason: ReasonNoMatchingACL}
	}
	return Decision{Allowed: p.allowIfNoACL, Reason: ReasonNoACL}
}

// matchEntry returns b's permission if b, whose resource pattern applies to
// r's resource, matches r's principal, host and operation, and UNKNOWN if it
// does not (Kafka's StandardAuthorizerData.findResult).
func matchEntry(b Binding, r Request) kmsg.ACLPermissionType {
	if b.Principal != r.Principal && b.Principal != WildcardPrincipal {
		return kmsg.ACLPermissionTypeUnknown
	}
	if b.Host != r.Host && b.Host != Wildcard {
		return kmsg.ACLPermissionTypeUnknown
	}
	if !operationMatches(b, r.Operation) {
		return kmsg.ACLPermissionTypeUnknown
	}
	return b.Permission
}

// operationMatches reports whether b's operation covers op: ALL covers
// every operation; an ALLOW also covers the operations its operation
// implies; a DENY covers only its own operation.
func operationMatches(b Binding, op kmsg.ACLOperation) bool {
	if b.Operation == kmsg.ACLOperationAll || b.Operation == op {
		return true
	}
	if b.Permission != kmsg.ACLPermissionTypeAllow {
		return false
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch b.Operation {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return b.Operation == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// Operations lists, for each resource type, the operations Kafka defines
// on it (AclEntry.supportedOperations in Kafka 4, where groups have
// configs since KIP-848), ascending. AuthorizedOperations
// reports among these.
func Operations(t kmsg.ACLResourceType) []kmsg.ACLOperation {
	switch t {
	case kmsg.ACLResourceTypeTopic:
		return []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
			kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
			kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	case kmsg.ACLResourceTypeGroup:
		return []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDelete, kmsg.ACLOperationDescribe,
			kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	case kmsg.ACLResourceTypeCluster:
		return []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
			kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
			kmsg.ACLOperationIdempotentWrite}
	case kmsg.ACLResourceTypeTransactionalId:
		return []kmsg.ACLOperation{kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe}
	case kmsg.ACLResourceTypeDelegationToken:
		return []kmsg.ACLOperation{kmsg.ACLOperationDescribe}
	case kmsg.ACLResourceTypeUser:
		return []kmsg.ACLOperation{kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens}
	}
	return nil
}

// AuthorizedOperations returns the bit field of the operations principal,
// from host, may perform on t:name, as the authorized-operations fields of
// Metadata, DescribeCluster and DescribeGroups carry it (KIP-430: bit n set
// for the operation with code n, among Operations(t)).
func (ix Index) AuthorizedOperations(p Policy, principal, host string, t kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range Operations(t) {
		d := ix.Authorize(p, Request{Principal: principal, Host: host, Operation: op, ResourceType: t, ResourceName: name})
		if d.Allowed {
			bits |= 1 << uint(op)
		}
	}
	return bits
}
