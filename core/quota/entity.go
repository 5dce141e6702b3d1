package quota

import (
	"cmp"
	"strings"
)

// Entity types of a client quota entity (ClientQuotaEntity.USER,
// CLIENT_ID, IP), as AlterClientQuotas and DescribeClientQuotas name them.
const (
	EntityUser     = "user"
	EntityClientID = "client-id"
	EntityIP       = "ip"
)

// Name is one component of an entity: absent, the default (a null name
// on the wire, `--entity-default` in kafka-configs.sh), or a name.
type Name struct {
	// Set says the component is part of the entity.
	Set bool
	// Default says the component is the type's default (Name is then
	// empty).
	Default bool
	// Name is the user, client id or IP address when not Default.
	Name string
}

// Named is the component for one user, client id or IP.
func Named(name string) Name { return Name{Set: true, Name: name} }

// Default is the component standing for every name of its type without a
// quota of its own.
func Default() Name { return Name{Set: true, Default: true} }

// String renders the component as kafka-configs.sh does: the name,
// "<default>", or "-" when absent.
func (n Name) String() string {
	switch {
	case !n.Set:
		return "-"
	case n.Default:
		return "<default>"
	}
	return n.Name
}

// compareNames orders absent before default before names, names by bytes.
func compareNames(a, b Name) int {
	rank := func(n Name) int {
		switch {
		case !n.Set:
			return 0
		case n.Default:
			return 1
		}
		return 2
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.Name, b.Name))
}

// Entity is a client quota entity: a user and/or a client id, or an IP.
// It is comparable and used as a map key.
type Entity struct {
	User     Name
	ClientID Name
	IP       Name
}

// String renders the entity as kafka-configs.sh describes it, for errors
// and tests: "user=alice,client-id=<default>".
func (e Entity) String() string {
	var parts []string
	for _, c := range []struct {
		typ string
		n   Name
	}{{EntityUser, e.User}, {EntityClientID, e.ClientID}, {EntityIP, e.IP}} {
		if c.n.Set {
			parts = append(parts, c.typ+"="+c.n.String())
		}
	}
	if len(parts) == 0 {
		return "<empty>"
	}
	return strings.Join(parts, ",")
}

// CompareEntities orders entities by user, then client id, then IP, each
// absent before default before names: the order of Describe's answer.
func CompareEntities(a, b Entity) int {
	return cmp.Or(compareNames(a.User, b.User), compareNames(a.ClientID, b.ClientID), compareNames(a.IP, b.IP))
}

// isIP says the entity is an IP entity (connection_creation_rate).
func (e Entity) isIP() bool { return e.IP.Set }

// Component is one (type, name) pair of an entity as it arrives in
// AlterClientQuotas: Name nil is the default.
type Component struct {
	Type string
	Name *string
}

// EntityFromComponents builds an Entity from AlterClientQuotas components
// with ClientQuotaControlManager.validateEntity's and
// configKeysForEntityType's rules: at least one component, no type twice,
// only user, client-id and ip, no empty name, and ip not combined with
// user or client-id. Errors wrap ErrInvalidRequest.
//
// An IP name is taken as given: core may not resolve host names, so the
// caller parses and canonicalises it (Kafka accepts an IP or a resolvable
// host, INVALID_REQUEST otherwise).
func EntityFromComponents(components []Component) (Entity, error) {
	var e Entity
	if len(components) == 0 {
		return e, invalidf("invalid empty client quota entity")
	}
	for _, c := range components {
		var slot *Name
		switch c.Type {
		case EntityUser:
			slot = &e.User
		case EntityClientID:
			slot = &e.ClientID
		case EntityIP:
			slot = &e.IP
		default:
			return Entity{}, invalidf("unhandled client quota entity type: %q", c.Type)
		}
		if slot.Set {
			return Entity{}, invalidf("invalid client quota entity, duplicate entity entry %s", c.Type)
		}
		if c.Name == nil {
			*slot = Default()
			continue
		}
		if *c.Name == "" {
			return Entity{}, invalidf("empty %s not supported", c.Type)
		}
		*slot = Named(*c.Name)
	}
	return e, e.validate()
}

// validate checks an Entity built directly, with EntityFromComponents'
// rules.
func (e Entity) validate() error {
	if !e.User.Set && !e.ClientID.Set && !e.IP.Set {
		return invalidf("invalid empty client quota entity")
	}
	if e.IP.Set && (e.User.Set || e.ClientID.Set) {
		return invalidf("invalid quota entity combination %s, IP entity should not be combined with User or ClientId", e)
	}
	for _, n := range []Name{e.User, e.ClientID, e.IP} {
		if n.Set && !n.Default && n.Name == "" {
			return invalidf("empty name in entity %s not supported", e)
		}
		if n.Default && n.Name != "" {
			return invalidf("default component with a name in entity %s", e)
		}
		if !n.Set && (n.Default || n.Name != "") {
			return invalidf("unset component with a name or default in entity %s", e)
		}
	}
	return nil
}
