package meta

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/sasl"
)

// The security records: ACLs (KIP-500's AclControlManager), SCRAM
// credentials (KIP-554's ScramControlManager) and client quotas (KIP-546's
// ClientQuotaControlManager), with Kafka's fields.

// AccessControlEntryRecord creates one ACL binding under an id chosen by
// the controller. Ids and bindings are one-to-one: a binding already in
// the image is not created again (AclControlManager dedups creations).
type AccessControlEntryRecord struct {
	ID             UUID
	ResourceType   kmsg.ACLResourceType
	ResourceName   string
	PatternType    kmsg.ACLResourcePatternType
	Principal      string
	Host           string
	Operation      kmsg.ACLOperation
	PermissionType kmsg.ACLPermissionType
}

// AccessControlEntryFor is the record that creates b under id.
func AccessControlEntryFor(id UUID, b acl.Binding) *AccessControlEntryRecord {
	return &AccessControlEntryRecord{
		ID: id, ResourceType: b.ResourceType, ResourceName: b.ResourceName, PatternType: b.PatternType,
		Principal: b.Principal, Host: b.Host, Operation: b.Operation, PermissionType: b.Permission,
	}
}

// Binding is the ACL binding the record creates.
func (r *AccessControlEntryRecord) Binding() acl.Binding {
	return acl.Binding{
		Principal: r.Principal, Host: r.Host, ResourceType: r.ResourceType, ResourceName: r.ResourceName,
		PatternType: r.PatternType, Operation: r.Operation, Permission: r.PermissionType,
	}
}

// RemoveAccessControlEntryRecord removes the ACL binding with an id; the
// id must be in the image (Kafka's replay fails on an unknown one too).
type RemoveAccessControlEntryRecord struct {
	ID UUID
}

// ScramMechanism is a SCRAM mechanism as the records number it (Kafka's
// ScramMechanism type).
type ScramMechanism int8

// The SCRAM mechanisms.
const (
	ScramSHA256 ScramMechanism = 1
	ScramSHA512 ScramMechanism = 2
)

// ScramMechanismOf returns the record number of a SASL mechanism, and
// false for one that is not SCRAM.
func ScramMechanismOf(m sasl.Mechanism) (ScramMechanism, bool) {
	switch m {
	case sasl.ScramSHA256:
		return ScramSHA256, true
	case sasl.ScramSHA512:
		return ScramSHA512, true
	}
	return 0, false
}

// SASL returns the mechanism's SASL name, "" for an unknown number.
func (m ScramMechanism) SASL() sasl.Mechanism {
	switch m {
	case ScramSHA256:
		return sasl.ScramSHA256
	case ScramSHA512:
		return sasl.ScramSHA512
	}
	return ""
}

// keyBytes is the size of the mechanism's stored and server keys, 0 for an
// unknown mechanism.
func (m ScramMechanism) keyBytes() int {
	switch m {
	case ScramSHA256:
		return 32
	case ScramSHA512:
		return 64
	}
	return 0
}

// String names the mechanism as SASL does ("SCRAM-SHA-256").
func (m ScramMechanism) String() string {
	if s := m.SASL(); s != "" {
		return string(s)
	}
	return fmt.Sprintf("ScramMechanism(%d)", int8(m))
}

// UserScramCredentialRecord sets (creates or replaces) one user's
// credential for one mechanism: the salt, the iterations and the keys the
// controller derived from the client's salted password, never a password.
type UserScramCredentialRecord struct {
	Name       string
	Mechanism  ScramMechanism
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// Credential is the credential the record sets.
func (r *UserScramCredentialRecord) Credential() sasl.ScramCredential {
	return sasl.ScramCredential{Salt: r.Salt, Iterations: int(r.Iterations), StoredKey: r.StoredKey, ServerKey: r.ServerKey}
}

// RemoveUserScramCredentialRecord removes one user's credential for one
// mechanism; it must be in the image (Kafka's replay fails otherwise).
type RemoveUserScramCredentialRecord struct {
	Name      string
	Mechanism ScramMechanism
}

// ClientQuotaEntityData is one component of a client quota entity: a type
// (user, client-id or ip) and a name, nil for the type's default.
type ClientQuotaEntityData struct {
	EntityType string
	EntityName *string
}

// ClientQuotaRecord sets (Remove false) or removes one quota key of an
// entity. Removing a key that is not set changes nothing, as in Kafka.
type ClientQuotaRecord struct {
	Entity []ClientQuotaEntityData
	Key    string
	Value  float64
	Remove bool
}

// Type implements Record.
func (*AccessControlEntryRecord) Type() RecordType { return TypeAccessControlEntry }

// Type implements Record.
func (*RemoveAccessControlEntryRecord) Type() RecordType { return TypeRemoveAccessControlEntry }

// Type implements Record.
func (*UserScramCredentialRecord) Type() RecordType { return TypeUserScramCredential }

// Type implements Record.
func (*RemoveUserScramCredentialRecord) Type() RecordType { return TypeRemoveUserScramCredential }

// Type implements Record.
func (*ClientQuotaRecord) Type() RecordType { return TypeClientQuota }

// String implements Record.
func (r *AccessControlEntryRecord) String() string {
	return fmt.Sprintf("AccessControlEntryRecord{id=%v %v}", r.ID, r.Binding())
}

// String implements Record.
func (r *RemoveAccessControlEntryRecord) String() string {
	return fmt.Sprintf("RemoveAccessControlEntryRecord{id=%v}", r.ID)
}

// String implements Record. Salt and keys are not shown: a record's text
// goes to logs.
func (r *UserScramCredentialRecord) String() string {
	return fmt.Sprintf("UserScramCredentialRecord{name=%q mechanism=%v iterations=%d}", r.Name, r.Mechanism, r.Iterations)
}

// String implements Record.
func (r *RemoveUserScramCredentialRecord) String() string {
	return fmt.Sprintf("RemoveUserScramCredentialRecord{name=%q mechanism=%v}", r.Name, r.Mechanism)
}

// String implements Record.
func (r *ClientQuotaRecord) String() string {
	parts := make([]string, len(r.Entity))
	for i, c := range r.Entity {
		name := "<default>"
		if c.EntityName != nil {
			name = fmt.Sprintf("%q", *c.EntityName)
		}
		parts[i] = c.EntityType + "=" + name
	}
	if r.Remove {
		return fmt.Sprintf("ClientQuotaRecord{%s remove %q}", strings.Join(parts, ","), r.Key)
	}
	return fmt.Sprintf("ClientQuotaRecord{%s %q=%v}", strings.Join(parts, ","), r.Key, r.Value)
}

func (r *AccessControlEntryRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	b = appendUUID(b, r.ID)
	b = appendInt16(b, int16(r.ResourceType))
	b = appendString(b, r.ResourceName)
	b = appendInt16(b, int16(r.PatternType))
	b = appendString(b, r.Principal)
	b = appendString(b, r.Host)
	b = appendInt16(b, int16(r.Operation))
	b = appendInt16(b, int16(r.PermissionType))
	return appendNoTags(b), nil
}

func (r *AccessControlEntryRecord) readBody(rd *reader, _ int16) {
	r.ID = rd.uuid()
	r.ResourceType = kmsg.ACLResourceType(rd.int8())
	r.ResourceName = rd.string()
	r.PatternType = kmsg.ACLResourcePatternType(rd.int8())
	r.Principal = rd.string()
	r.Host = rd.string()
	r.Operation = kmsg.ACLOperation(rd.int8())
	r.PermissionType = kmsg.ACLPermissionType(rd.int8())
	rd.tags(nil)
}

func (r *RemoveAccessControlEntryRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	return appendNoTags(appendUUID(b, r.ID)), nil
}

func (r *RemoveAccessControlEntryRecord) readBody(rd *reader, _ int16) {
	r.ID = rd.uuid()
	rd.tags(nil)
}

func (r *UserScramCredentialRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	b = appendString(b, r.Name)
	b = appendInt16(b, int16(r.Mechanism))
	b = appendBytes(b, r.Salt)
	b = appendBytes(b, r.StoredKey)
	b = appendBytes(b, r.ServerKey)
	b = appendInt32(b, r.Iterations)
	return appendNoTags(b), nil
}

func (r *UserScramCredentialRecord) readBody(rd *reader, _ int16) {
	r.Name = rd.string()
	r.Mechanism = ScramMechanism(rd.int8())
	r.Salt = rd.bytes()
	r.StoredKey = rd.bytes()
	r.ServerKey = rd.bytes()
	r.Iterations = rd.int32()
	rd.tags(nil)
}

func (r *RemoveUserScramCredentialRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	b = appendString(b, r.Name)
	b = appendInt16(b, int16(r.Mechanism))
	return appendNoTags(b), nil
}

func (r *RemoveUserScramCredentialRecord) readBody(rd *reader, _ int16) {
	r.Name = rd.string()
	r.Mechanism = ScramMechanism(rd.int8())
	rd.tags(nil)
}

func (r *ClientQuotaRecord) appendBody(b []byte, _ int16) ([]byte, error) {
	b = appendArrayLen(b, len(r.Entity))
	for _, e := range r.Entity {
		b = appendString(b, e.EntityType)
		b = appendNullableString(b, e.EntityName)
	}
	b = appendString(b, r.Key)
	b = appendFloat64(b, r.Value)
	b = appendBool(b, r.Remove)
	return appendNoTags(b), nil
}

func (r *ClientQuotaRecord) readBody(rd *reader, _ int16) {
	r.Entity = make([]ClientQuotaEntityData, rd.arrayLen())
	for i := range r.Entity {
		e := &r.Entity[i]
		e.EntityType = rd.string()
		e.EntityName = rd.nullableString()
	}
	r.Key = rd.string()
	r.Value = rd.float64()
	r.Remove = rd.bool()
	rd.tags(nil)
}
