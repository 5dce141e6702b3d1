package acl_test

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
)

// Grant alice READ on every topic whose name starts with "orders", deny it
// from one host, and ask.
func ExampleIndex_Authorize() {
	policy, err := acl.NewPolicy(acl.ParseSuperUsers("User:admin"), false)
	if err != nil {
		panic(err)
	}
	var ix acl.Index
	ix, err = ix.Add(
		acl.Binding{Principal: "User:alice", Host: "*", ResourceType: kmsg.ACLResourceTypeTopic,
			ResourceName: "orders", PatternType: kmsg.ACLResourcePatternTypePrefixed,
			Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow},
		acl.Binding{Principal: "User:alice", Host: "10.0.0.66", ResourceType: kmsg.ACLResourceTypeTopic,
			ResourceName: "orders-eu", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Operation: kmsg.ACLOperationAll, Permission: kmsg.ACLPermissionTypeDeny},
	)
	if err != nil {
		panic(err)
	}
	ask := func(principal, host string, op kmsg.ACLOperation, topic string) {
		d := ix.Authorize(policy, acl.Request{Principal: principal, Host: host, Operation: op,
			ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: topic})
		fmt.Printf("%s %s %s %s: %s\n", principal, host, op, topic, d)
	}
	ask("User:alice", "10.0.0.1", kmsg.ACLOperationRead, "orders-eu")
	ask("User:alice", "10.0.0.1", kmsg.ACLOperationDescribe, "orders-us")
	ask("User:alice", "10.0.0.66", kmsg.ACLOperationRead, "orders-eu")
	ask("User:bob", "10.0.0.1", kmsg.ACLOperationRead, "orders-eu")
	ask("User:admin", "10.0.0.66", kmsg.ACLOperationDelete, "orders-eu")
	// Output:
	// User:alice 10.0.0.1 READ orders-eu: ALLOWED by MatchingAllowAcl (TOPIC:PREFIXED:orders User:alice@* ALLOW READ)
	// User:alice 10.0.0.1 DESCRIBE orders-us: ALLOWED by MatchingAllowAcl (TOPIC:PREFIXED:orders User:alice@* ALLOW READ)
	// User:alice 10.0.0.66 READ orders-eu: DENIED by MatchingDenyAcl (TOPIC:LITERAL:orders-eu User:alice@10.0.0.66 DENY ALL)
	// User:bob 10.0.0.1 READ orders-eu: DENIED by NoMatchingAcl
	// User:admin 10.0.0.66 DELETE orders-eu: ALLOWED by SuperUser
}
