// Package acl decides who may do what, with the semantics of Kafka's
// StandardAuthorizer (KIP-500's KRaft authorizer, classes StandardAuthorizer,
// StandardAuthorizerData and AclControlManager), as pure functions over an
// immutable index of ACL bindings.
//
// # What it owns
//
//   - Binding: one ACL (principal, host, resource type, name and pattern
//     type, LITERAL or KIP-290's PREFIXED, operation, ALLOW or DENY) over
//     franz-go's kmsg enums, and its validation as CreateAcls does it
//     (AclControlManager.validateNewAcl, a little stricter: empty principal
//     types or names, empty hosts and a PREFIXED "*" are refused too).
//     Errors are *ValidationError, which wraps kerr.InvalidRequest.
//   - Filter: DescribeAcls' and DeleteAcls' filters with Kafka's matching
//     (ResourcePatternFilter and AccessControlEntryFilter): ANY matches every
//     value, a nil name, principal or host matches all, and the MATCH pattern
//     type matches the bindings that would apply to the named resource
//     (the literal name, the literal wildcard "*", and every PREFIXED
//     binding whose name is a prefix of it).
//   - Index: an immutable set of bindings (a persistent radix tree,
//     hashicorp/go-immutable-radix, keyed by resource type, pattern type and
//     name), so the metadata image can hold
//     one and derive the next from it while readers keep the old one. An
//     authorization looks up the literal name, the literal "*", and the
//     PREFIXED bindings along the path of the name; it never scans every ACL.
//   - Authorize: the decision for one request, under a Policy that carries
//     super.users and allow.everyone.if.no.acl.found; AuthorizedOperations:
//     the KIP-430 bit field of the operations a principal may perform on a
//     resource.
//
// # The rules Authorize follows (StandardAuthorizerData.authorize)
//
//  1. A principal listed in super.users is allowed everything.
//  2. The bindings that apply are those on the resource: LITERAL with the
//     resource's name or "*", and PREFIXED with a prefix of the name.
//  3. Of those, a binding matches the request when its principal is the
//     request's or "User:*", its host is the request's or "*", and its
//     operation is the request's or ALL. An ALLOW binding also matches the
//     operations it implies: READ, WRITE, DELETE and ALTER imply DESCRIBE,
//     and ALTER_CONFIGS implies DESCRIBE_CONFIGS. A DENY binding implies
//     nothing (a DENY READ does not deny DESCRIBE), but a DENY on ALL denies
//     every operation.
//  4. A matching DENY wins over any matching ALLOW.
//  5. With no matching binding, the request is denied, unless
//     allow.everyone.if.no.acl.found is set and no binding at all, for any
//     principal, host or operation, applies to the resource. An ACL for
//     another principal therefore still denies (KAFKA-14435).
//
// A Decision says which rule decided and, for rules 3 and 4, which binding,
// so a caller can write Kafka's audit log line. When several bindings match,
// the one reported is the least in Compare's order, so decisions are
// reproducible.
//
// # Left to the caller
//
// The package holds no ACL ids: the metadata image maps the ids of
// AccessControlEntryRecords to bindings and adds or removes those. Creating
// a binding that is already present, or removing one that is absent,
// changes nothing, as AclControlManager dedups creations. Mapping requests
// (API keys) to the operations and resources they need, the error codes
// answered, hiding unauthorized topics, and audit logging are the broker's.
// The package is deterministic: no map order reaches an output.
package acl
