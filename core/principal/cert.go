package principal

import (
	"crypto/x509"
	"fmt"
)

// IdentityOf reads what the rules can match from a parsed certificate:
// the subject DN as FormatRFC2253 renders cert.RawSubject, and the DNS,
// URI, email and IP SANs in certificate order.
func IdentityOf(cert *x509.Certificate) (Identity, error) {
	if cert == nil {
		return Identity{}, fmt.Errorf("%w: no certificate", ErrInvalidName)
	}
	dn, err := FormatRFC2253(cert.RawSubject)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{
		DN:    dn,
		DNS:   append([]string(nil), cert.DNSNames...),
		Email: append([]string(nil), cert.EmailAddresses...),
	}
	for _, u := range cert.URIs {
		if u != nil {
			id.URI = append(id.URI, u.String())
		}
	}
	for _, ip := range cert.IPAddresses {
		id.IP = append(id.IP, ip.String())
	}
	return id, nil
}

// FromCertificate is the principal of a TLS connection whose client
// presented cert (the leaf, already verified by the caller's TLS stack):
// User:<name> with the name the rules map the certificate to, as Kafka's
// DefaultKafkaPrincipalBuilder does for SSL. A connection without a
// client certificate (cert nil: ssl.client.auth=none, or requested and not
// sent) is User:ANONYMOUS, as in Kafka.
//
// An error (no rule matched, a name the rules cannot be applied to, an
// empty result) means the connection must not be authenticated; Kafka
// throws a KafkaException there and closes the connection.
func FromCertificate(cert *x509.Certificate, rules Rules) (Principal, error) {
	if cert == nil {
		return Anonymous, nil
	}
	id, err := IdentityOf(cert)
	if err != nil {
		return Principal{}, err
	}
	return FromIdentity(id, rules)
}

// FromIdentity maps id with rules to User:<name>.
func FromIdentity(id Identity, rules Rules) (Principal, error) {
	name, err := rules.Map(id)
	if err != nil {
		return Principal{}, err
	}
	p, err := User(name)
	if err != nil {
		return Principal{}, fmt.Errorf("mapping %q: %w", id.DN, err)
	}
	return p, nil
}
