package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
)

// clusterName is the CLUSTER resource's name in ACL bindings.
const clusterName = "kafka-cluster"

// authorized reports whether the request's principal may perform op on
// the resource t:name, by the ACLs of the image the broker has applied:
// always true without an Authorizer.
func (b *Broker) authorized(r *request, op kmsg.ACLOperation, t kmsg.ACLResourceType, name string) bool {
	if b.cfg.Authorizer == nil {
		return true
	}
	d := b.acls().Authorize(*b.cfg.Authorizer, acl.Request{
		Principal: r.cn.principal.String(), Host: r.cn.host,
		Operation: op, ResourceType: t, ResourceName: name,
	})
	return d.Allowed
}

// acls is the ACL index of the image the broker has applied.
func (b *Broker) acls() acl.Index {
	if b.cfg.Metadata == nil {
		return acl.Index{}
	}
	return b.cfg.Metadata.Image().ACLs()
}
