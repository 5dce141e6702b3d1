package controller

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/quota"
)

// The security commands of TestScripts:
//
//	create-acls      one per line: PRINCIPAL OPERATION TYPE:NAME [prefixed] [deny] [host=H]
//	delete-acls      one filter per line: [principal=P] [op=OP] [type=T] [name=N] [pattern=P] [perm=P]
//	alter-scram      one per line: upsert USER mech=N [iterations=N] [salt=S] [pw-len=N] | delete USER mech=N
//	alter-quotas [validate-only]
//	                 one entry per line: TYPE=NAME,TYPE=<default> set:KEY=V remove:KEY
//	security         prints the speculative image's ACLs, credentials and quotas
func (s *script) runSecurity(t *testing.T, d *datadriven.TestData, out *strings.Builder) bool {
	switch d.Cmd {
	case "create-acls":
		req := kmsg.NewPtrCreateACLsRequest()
		req.Version = 3
		for _, line := range lines(d.Input) {
			f := strings.Fields(line)
			c := kmsg.NewCreateACLsRequestCreation()
			c.Principal, c.Host = f[0], "*"
			c.Operation = parseEnum(t, kmsg.ParseACLOperation, f[1])
			typ, name, _ := strings.Cut(f[2], ":")
			c.ResourceType, c.ResourceName = parseEnum(t, kmsg.ParseACLResourceType, typ), name
			c.ResourcePatternType, c.PermissionType = kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLPermissionTypeAllow
			for k, v := range keyValues(f[3:]) {
				switch k {
				case "prefixed":
					c.ResourcePatternType = kmsg.ACLResourcePatternTypePrefixed
				case "deny":
					c.PermissionType = kmsg.ACLPermissionTypeDeny
				case "host":
					c.Host = v
				default:
					t.Fatalf("create-acls: %q", k)
				}
			}
			req.Creations = append(req.Creations, c)
		}
		s.handle(t, req)
	case "delete-acls":
		req := kmsg.NewPtrDeleteACLsRequest()
		req.Version = 3
		for _, line := range lines(d.Input) {
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			for k, v := range keyValues(strings.Fields(line)) {
				switch k {
				case "principal":
					f.Principal = &v
				case "op":
					f.Operation = parseEnum(t, kmsg.ParseACLOperation, v)
				case "type":
					f.ResourceType = parseEnum(t, kmsg.ParseACLResourceType, v)
				case "name":
					f.ResourceName = &v
				case "pattern":
					f.ResourcePatternType = parseEnum(t, kmsg.ParseACLResourcePatternType, v)
				case "perm":
					f.PermissionType = parseEnum(t, kmsg.ParseACLPermissionType, v)
				case "all":
				default:
					t.Fatalf("delete-acls: %q", k)
				}
			}
			req.Filters = append(req.Filters, f)
		}
		s.handle(t, req)
	case "alter-scram":
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		for _, line := range lines(d.Input) {
			f := strings.Fields(line)
			opts := map[string]string{"iterations": "4096", "salt": "salt", "pw-len": "0"}
			for k, v := range keyValues(f[2:]) {
				opts[k] = v
			}
			mech := int8(atoi(t, opts["mech"]))
			if f[1] == `""` {
				f[1] = ""
			}
			switch f[0] {
			case "upsert":
				u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
				u.Name, u.Mechanism, u.Iterations = f[1], mech, int32(atoi(t, opts["iterations"]))
				u.Salt = []byte(opts["salt"])
				n := atoi(t, opts["pw-len"])
				if n == 0 {
					n = 32 * int(max(mech, 1))
				}
				u.SaltedPassword = slices.Repeat([]byte{7}, n)
				req.Upsertions = append(req.Upsertions, u)
			case "delete":
				del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
				del.Name, del.Mechanism = f[1], mech
				req.Deletions = append(req.Deletions, del)
			default:
				t.Fatalf("alter-scram: %q", f[0])
			}
		}
		s.handle(t, req)
	case "alter-quotas":
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Version = 1
		req.ValidateOnly = d.HasArg("validate-only")
		for _, line := range lines(d.Input) {
			f := strings.Fields(line)
			e := kmsg.NewAlterClientQuotasRequestEntry()
			for c := range strings.SplitSeq(f[0], ",") {
				typ, name, _ := strings.Cut(c, "=")
				ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
				ec.Type = typ
				if name != "<default>" {
					ec.Name = &name
				}
				e.Entity = append(e.Entity, ec)
			}
			for _, op := range f[1:] {
				kind, kv, _ := strings.Cut(op, ":")
				k, v, _ := strings.Cut(kv, "=")
				o := kmsg.NewAlterClientQuotasRequestEntryOp()
				o.Key = k
				switch kind {
				case "set":
					if _, err := fmt.Sscan(v, &o.Value); err != nil {
						t.Fatalf("alter-quotas: %q: %v", op, err)
					}
				case "remove":
					o.Remove = true
				default:
					t.Fatalf("alter-quotas: %q", op)
				}
				e.Ops = append(e.Ops, o)
			}
			req.Entries = append(req.Entries, e)
		}
		s.handle(t, req)
	case "security":
		out.WriteString(formatSecurity(s.h.c.SpeculativeImage()))
	default:
		return false
	}
	return true
}

// parseEnum parses a kmsg enum by name, or by number (for values kmsg
// cannot name, such as UNKNOWN).
func parseEnum[E ~int8](t *testing.T, parse func(string) (E, error), s string) E {
	t.Helper()
	if n, err := strconv.Atoi(s); err == nil {
		return E(n)
	}
	e, err := parse(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return e
}

// formatSecurity prints an image's ACLs (by binding), SCRAM credentials
// and client quotas.
func formatSecurity(img *meta.Image) string {
	var b strings.Builder
	var acls []string
	for _, binding := range img.ACLIDs() {
		acls = append(acls, binding.String())
	}
	slices.Sort(acls)
	for _, a := range acls {
		fmt.Fprintf(&b, "acl %s\n", a)
	}
	for c := range img.ScramCredentials() {
		cred, _ := img.LookupScram(c.Mechanism.SASL(), c.User)
		fmt.Fprintf(&b, "scram %s %v iterations=%d salt=%q\n", c.User, c.Mechanism, c.Iterations, cred.Salt)
	}
	for e, values := range img.ClientQuotas() {
		fmt.Fprintf(&b, "quota %v", e)
		for _, v := range values {
			fmt.Fprintf(&b, " %s=%v", v.Key, v.Value)
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		b.WriteString("none\n")
	}
	return b.String()
}

// formatSecurityRecord describes a security record, nil for another kind.
func (h *harness) formatSecurityRecord(r meta.Record) (string, bool) {
	switch r := r.(type) {
	case *meta.AccessControlEntryRecord:
		return "AccessControlEntry " + r.Binding().String(), true
	case *meta.RemoveAccessControlEntryRecord:
		b, ok := h.c.CommittedImage().ACLBinding(r.ID)
		if !ok {
			b, _ = h.c.SpeculativeImage().ACLBinding(r.ID)
		}
		for _, p := range h.proposals {
			for _, rec := range p.Records {
				if a, ok := rec.(*meta.AccessControlEntryRecord); ok && a.ID == r.ID {
					b = a.Binding()
				}
			}
		}
		return "RemoveAccessControlEntry " + b.String(), true
	case *meta.UserScramCredentialRecord, *meta.RemoveUserScramCredentialRecord, *meta.ClientQuotaRecord:
		return r.String(), true
	}
	return "", false
}

// formatSecurityResponse describes a security response.
func formatSecurityResponse(b *strings.Builder, msg kmsg.Response) bool {
	switch r := msg.(type) {
	case *kmsg.CreateACLsResponse:
		b.WriteString("CreateACLs")
		for i, res := range r.Results {
			writeResult(b, fmt.Sprint(i), res.ErrorCode, res.ErrorMessage)
		}
	case *kmsg.DeleteACLsResponse:
		b.WriteString("DeleteACLs")
		for i, res := range r.Results {
			writeResult(b, fmt.Sprint(i), res.ErrorCode, res.ErrorMessage)
			for _, m := range res.MatchingACLs {
				fmt.Fprintf(b, "\n    %s:%s:%s %s@%s %s %s", m.ResourceType, m.ResourcePatternType, m.ResourceName,
					m.Principal, m.Host, m.PermissionType, m.Operation)
			}
		}
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		b.WriteString("AlterUserSCRAMCredentials")
		for _, res := range r.Results {
			writeResult(b, res.User, res.ErrorCode, res.ErrorMessage)
		}
	case *kmsg.AlterClientQuotasResponse:
		b.WriteString("AlterClientQuotas")
		for _, res := range r.Entries {
			var parts []string
			for _, e := range res.Entity {
				name := "<default>"
				if e.Name != nil {
					name = *e.Name
				}
				parts = append(parts, e.Type+"="+name)
			}
			writeResult(b, strings.Join(parts, ","), res.ErrorCode, res.ErrorMessage)
		}
	default:
		return false
	}
	return true
}

// TestQuotaManagerFromImage: the image the controller builds gives the
// broker a quota.Manager that resolves what AlterClientQuotas set.
func TestQuotaManagerFromImage(t *testing.T) {
	h := newCluster(t, Config{}, 1)
	req := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: quota.EntityUser, Name: kmsg.StringPtr("alice")}}
	e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: string(quota.ProducerByteRate), Value: 1024}}
	req.Entries = append(req.Entries, e)
	resp := h.do(req).(*kmsg.AlterClientQuotasResponse)
	if resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("alter: %s", errName(resp.Entries[0].ErrorCode))
	}
	m, err := h.c.CommittedImage().QuotaManager(quota.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Resolve(quota.ProducerByteRate, "alice", "any").Limit; got != 1024 {
		t.Fatalf("alice's producer_byte_rate %v, want 1024", got)
	}
}
