package server

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/config"
)

// Security keys (issue 24) beyond the listeners' (node's rows).
const (
	KeyAuthorizerClassName           = "authorizer.class.name"
	KeySuperUsers                    = "super.users"
	KeyAllowEveryoneIfNoACLFound     = "allow.everyone.if.no.acl.found"
	KeyFailedAuthenticationDelayMs   = "connection.failed.authentication.delay.ms"
	KeyConnectionsMaxReauthMs        = "connections.max.reauth.ms"
	DefaultFailedAuthenticationDelay = 100 * time.Millisecond
)

// StandardAuthorizer is the authorizer.class.name of Kafka's KRaft
// authorizer, whose semantics core/acl implements: the one value that
// turns authorization on.
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// AuthConfig is the authorizer's configuration from the keys.
type AuthConfig struct {
	// Enabled is authorizer.class.name set to StandardAuthorizer.
	Enabled bool
	// SuperUsers is super.users.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACLFound bool
}

// policy is the broker's authorizer policy, nil when authorization is
// off.
func (a AuthConfig) policy() (*acl.Policy, error) {
	if !a.Enabled {
		return nil, nil
	}
	p, err := acl.NewPolicy(a.SuperUsers, a.AllowEveryoneIfNoACLFound)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

func securityKeys() config.Keys[Config] {
	return config.Keys[Config]{
		{Row: row(KeyAuthorizerClassName, kmsg.ConfigTypeClass, "",
			"The authorizer: empty authorizes nothing (every request is allowed, as in Kafka without one); "+StandardAuthorizer+" authorizes every request by the ACLs in the metadata log.",
			config.Custom("empty or "+StandardAuthorizer, parseAuthorizer)),
			Set: func(c *Config, v config.Value) { c.Auth.Enabled = v.Parsed().(bool) }},
		{Row: row(KeySuperUsers, kmsg.ConfigTypeString, "",
			"Principals allowed everything whatever the ACLs, separated by semicolons (User:admin;User:ops).",
			config.Custom("User:name;User:name...", parseSuperUsers)),
			Set: func(c *Config, v config.Value) { c.Auth.SuperUsers = v.Parsed().([]string) }},
		{Row: row(KeyAllowEveryoneIfNoACLFound, kmsg.ConfigTypeBoolean, "false",
			"Allow a request on a resource that no ACL of any principal names (false, the default, denies it).", config.Boolean()),
			Set: func(c *Config, v config.Value) { c.Auth.AllowEveryoneIfNoACLFound = v.Bool() }},
		{Row: row(KeyFailedAuthenticationDelayMs, kmsg.ConfigTypeInt, ms(DefaultFailedAuthenticationDelay),
			"How long the answer to a failed authentication, and the close after it, is held back, in milliseconds.",
			config.IntIn(0, MaxTimeoutMs)),
			Set: func(c *Config, v config.Value) { c.BrokerListener.Security.FailedAuthenticationDelay = millis(v) }},
		{Row: row(KeyConnectionsMaxReauthMs, kmsg.ConfigTypeLong, "0",
			"The lifetime of a SASL session (KIP-368): the client must re-authenticate within it or its connection closes at its next request; 0 means sessions never expire.",
			config.LongIn(0, 1<<40)),
			Set: func(c *Config, v config.Value) { c.BrokerListener.Security.MaxReauth = millis(v) }},
	}
}

func parseAuthorizer(value string) (any, error) {
	switch value {
	case "":
		return false, nil
	case StandardAuthorizer:
		return true, nil
	case "kafka.security.authorizer.AclAuthorizer":
		return nil, errors.New("AclAuthorizer keeps ACLs in ZooKeeper; Strata's ACLs are in the metadata log: use " + StandardAuthorizer)
	}
	return nil, errors.New("Strata has one authorizer, " + StandardAuthorizer)
}

func parseSuperUsers(value string) (any, error) {
	users := acl.ParseSuperUsers(value)
	for _, u := range users {
		if err := acl.ValidatePrincipal(u); err != nil {
			return nil, err
		}
	}
	return users, nil
}
