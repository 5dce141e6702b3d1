package broker

import (
	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/principal"
)

// Helpers of the package's own tests that its external tests
// (package broker_test) use too.
var (
	// Versions lists the versions of key the broker serves.
	Versions = versions
	// ConfigByName is a DescribeConfigs resource's config name.
	ConfigByName = configByName
)

// SetTestAuth makes the broker of c authorize with policy, give each new
// connection the principal principalOf(its host) and decide by the ACLs
// acls returns instead of the image's (the handshakes that set principals
// and the ACL records are wired elsewhere).
func SetTestAuth(c *Config, policy acl.Policy, principalOf func(host string) principal.Principal, acls func() acl.Index) {
	c.Authorizer = &policy
	c.testPrincipal, c.testACLs = principalOf, acls
}
