package kraft

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/acl"
	"github.com/strata-log/strata/core/connlimit"
	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/principal"
	"github.com/strata-log/strata/core/quorum"
)

// Security is the controller listener's security: the links between
// controllers, and from brokers to controllers (issue 24's node links).
// The zero Security is a plaintext listener that allows every request, as
// before issue 24 and in the simulator.
type Security struct {
	// Listener is the controller listener's name
	// (controller.listener.names), which names its TLS configuration
	// in env.SecureNet.
	Listener string
	// TLS runs the links over TLS: the listener accepts with
	// env.SecureNet's ListenTLS, and every dial to a voter (the quorum's
	// peers, an observer's fetches, the forwarder) uses DialTLS as a
	// client of Listener, presenting that listener's certificate. It
	// needs an env.Net that is an env.SecureNet.
	TLS bool
	// Principals builds the principal of each connection the listener
	// accepts from its client certificate (ssl.principal.mapping.rules);
	// a plaintext connection, or one without a certificate, is
	// User:ANONYMOUS. The zero Builder has no rules, so a certificate
	// then maps to no principal and its connection closes: use
	// principal.NewBuilder("DEFAULT") for Kafka's DEFAULT rule.
	Principals principal.Builder
	// Authorizer, when set, authorizes every request on the listener by
	// the ACLs of the member's image (listenerAuth); nil allows every
	// request, as Kafka without authorizer.class.name.
	Authorizer *acl.Policy
}

// tlsListener is the listener name the member's dials use TLS as a
// client of, empty in plaintext.
func (s Security) tlsListener() string {
	if s.TLS {
		return s.Listener
	}
	return ""
}

// listenerAuth is what a request on the controller listener needs, with
// Kafka's rules (ControllerApis): the quorum's and the brokers' requests
// CLUSTER_ACTION on the cluster; controller requests too, since the
// brokers forward them after authorizing the client (Strata forwards the
// request itself, where Kafka wraps it in an Envelope, which needs
// CLUSTER_ACTION); DescribeQuorum DESCRIBE on the cluster, or
// CLUSTER_ACTION (a broker asks on a client's behalf). ApiVersions needs
// nothing. A super user (super.users) is allowed everything.
func listenerAuth(req kmsg.Request) []kmsg.ACLOperation {
	switch req.(type) {
	case *kmsg.ApiVersionsRequest:
		return nil
	case *kmsg.DescribeQuorumRequest:
		return []kmsg.ACLOperation{kmsg.ACLOperationDescribe, kmsg.ACLOperationClusterAction}
	}
	return []kmsg.ACLOperation{kmsg.ACLOperationClusterAction}
}

// connPrincipal is the principal of a connection the listener accepted:
// from its certificate over TLS, else User:ANONYMOUS. An error means the
// certificate maps to no principal, and the connection must close.
func (n *network) connPrincipal(conn env.Conn) (principal.Principal, error) {
	cert := env.PeerCertificate(conn)
	if cert == nil {
		return principal.Anonymous, nil
	}
	return n.m.cfg.Security.Principals.Build(principal.Authentication{Mechanism: principal.TLS, PeerCertificate: cert})
}

// authorized reports whether req may be served on ic: always without an
// Authorizer, else when the connection's principal may perform one of
// the operations listenerAuth names on the cluster. A refusal is logged.
func (n *network) authorized(ic *inboundConn, req kmsg.Request) bool {
	policy := n.m.cfg.Security.Authorizer
	ops := listenerAuth(req)
	if policy == nil || ops == nil {
		return true
	}
	var acls acl.Index
	if img := n.m.Image(); img != nil {
		acls = img.ACLs()
	}
	var d acl.Decision
	for _, op := range ops {
		d = acls.Authorize(*policy, acl.Request{
			Principal: ic.principal.String(), Host: connlimit.HostOf(ic.conn.RemoteAddr()),
			Operation: op, ResourceType: kmsg.ACLResourceTypeCluster, ResourceName: clusterName,
		})
		if d.Allowed {
			return true
		}
	}
	n.m.log.Info("request refused on the controller listener", "api", kmsg.NameForKey(req.Key()),
		"principal", ic.principal.String(), "remote", ic.conn.RemoteAddr(), "decision", d.String())
	return false
}

// clusterName is the CLUSTER resource's name in ACL bindings.
const clusterName = acl.ClusterName

// refuseUnauthorized answers a request refused by authorized with
// CLUSTER_AUTHORIZATION_FAILED, as Kafka answers a
// ClusterAuthorizationException: a quorum request in its top-level error
// code, any other in every error field.
func (n *network) refuseUnauthorized(ic *inboundConn, corr int32, req kmsg.Request) {
	code := quorum.ErrorCode(kerr.ClusterAuthorizationFailed.Code)
	if resp := quorum.ErrorResponse(req, &quorum.RequestError{Code: code, TopLevel: true}, quorum.NoNode, -1); resp != nil {
		n.reply(ic, corr, resp)
		return
	}
	msg := fmt.Sprintf("Principal %s may not send %s to the controller.", ic.principal, kmsg.NameForKey(req.Key()))
	n.reply(ic, corr, ErrorResponse(req, kerr.ClusterAuthorizationFailed, msg))
}
