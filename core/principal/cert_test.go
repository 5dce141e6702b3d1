package principal

import (
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"math/rand/v2"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// certificate makes a self-signed certificate from template, with a key
// and randomness fixed by the seed so the test is deterministic.
func certificate(t *testing.T, template x509.Certificate) *x509.Certificate {
	t.Helper()
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	template.SerialNumber = big.NewInt(1)
	template.NotBefore = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	template.NotAfter = template.NotBefore.Add(24 * time.Hour)
	var seed [32]byte
	der, err := x509.CreateCertificate(rand.NewChaCha8(seed), &template, &template, key.Public(), key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

func TestFromCertificate(t *testing.T) {
	cert := certificate(t, x509.Certificate{
		Subject: pkix.Name{Country: []string{"US"}, Province: []string{"CA"}, Locality: []string{"SF"},
			Organization: []string{"acme"}, OrganizationalUnit: []string{"eng"}, CommonName: "host1"},
		DNSNames:       []string{"other.example.org", "etl.kafka.example.com"},
		URIs:           []*url.URL{mustURL(t, "spiffe://example.org/ns/prod/sa/etl")},
		EmailAddresses: []string{"Alice@Example.com"},
		IPAddresses:    []net.IP{net.ParseIP("10.0.0.7"), net.ParseIP("2001:db8::1")},
	})
	id, err := IdentityOf(cert)
	require.NoError(t, err)
	require.Equal(t, Identity{
		DN:    "CN=host1,OU=eng,O=acme,L=SF,ST=CA,C=US",
		DNS:   []string{"other.example.org", "etl.kafka.example.com"},
		URI:   []string{"spiffe://example.org/ns/prod/sa/etl"},
		Email: []string{"Alice@Example.com"},
		IP:    []string{"10.0.0.7", "2001:db8::1"},
	}, id)

	for _, tc := range []struct{ rules, want, err string }{
		{DefaultRules, "User:CN=host1,OU=eng,O=acme,L=SF,ST=CA,C=US", ""},
		{`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U`, "User:HOST1@ENG", ""},
		// A SAN rule tries each SAN of its kind in certificate order.
		{`SAN:DNS:^([a-z]+)\.kafka\.example\.com$/$1/, DEFAULT`, "User:etl", ""},
		{`SAN:URI:^spiffe:\/\/example\.org\/ns\/([a-z]+)\/sa\/([a-z]+)$/$2.$1/`, "User:etl.prod", ""},
		{`SAN:EMAIL:^(.*)@Example\.com$/$1/L`, "User:alice", ""},
		{`SAN:IP:^10\..*$/node-$0/`, "User:node-10.0.0.7", ""},
		{`SAN:IP:^.*:.*$/$0/`, "User:2001:db8::1", ""},
		// Rules are tried in order, SAN and DN alike: the first match wins.
		{`RULE:^CN=nomatch$/x/, SAN:DNS:^other\.(.*)$/$1/, RULE:^CN=(host1).*$/$1/`, "User:example.org", ""},
		{`RULE:^CN=(host1).*$/$1/, SAN:DNS:^other\.(.*)$/$1/`, "User:host1", ""},
		// No SAN of the kind matches, then no rule: NoMatchingRule.
		{`SAN:DNS:^x$/y/, SAN:URI:^https:.*$/y/`, "", "no rules apply"},
		// A rule producing an empty name fails the authentication.
		{`RULE:^CN=host1,.*$//`, "", "empty principal name"},
	} {
		t.Run(tc.rules, func(t *testing.T) {
			rules, err := ParseRules(tc.rules)
			require.NoError(t, err)
			p, err := FromCertificate(cert, rules)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, p.String())
		})
	}
}

func TestFromCertificateWithoutCertificateIsAnonymous(t *testing.T) {
	rules, err := ParseRules(DefaultRules)
	require.NoError(t, err)
	p, err := FromCertificate(nil, rules)
	require.NoError(t, err)
	require.Equal(t, Anonymous, p)
}

func TestFromCertificateSANRulesOnlyReadTheirKind(t *testing.T) {
	cert := certificate(t, x509.Certificate{Subject: pkix.Name{CommonName: "bare"}})
	rules, err := ParseRules(`SAN:DNS:.*/x/, SAN:URI:.*/x/, SAN:EMAIL:.*/x/, SAN:IP:.*/x/, RULE:^CN=(.*)$/$1/`)
	require.NoError(t, err)
	p, err := FromCertificate(cert, rules)
	require.NoError(t, err)
	require.Equal(t, "User:bare", p.String())

	// MapDN has no SANs: SAN rules never apply.
	got, err := rules.MapDN("CN=other")
	require.NoError(t, err)
	require.Equal(t, "other", got)
}

func TestRuleList(t *testing.T) {
	rules, err := ParseRules(`SAN:URI:^spiffe:\/\/(.*)$/$1/L, DEFAULT`)
	require.NoError(t, err)
	list := rules.List()
	require.Len(t, list, 2)
	require.Equal(t, SourceURI, list[0].Source)
	require.Equal(t, `^spiffe:\/\/(.*)$`, list[0].Pattern)
	require.Equal(t, `$1`, list[0].Replacement)
	require.True(t, list[0].Lower)
	require.True(t, list[1].Default)
	require.Equal(t, "URI", SourceURI.String())
}

func TestBuilder(t *testing.T) {
	cert := certificate(t, x509.Certificate{Subject: pkix.Name{CommonName: "Client1", Organization: []string{"acme"}}})
	b, err := NewBuilder(`RULE:^CN=([^,]*),.*$/$1/L`)
	require.NoError(t, err)
	for _, tc := range []struct {
		auth Authentication
		want string
		err  string
	}{
		{auth: Authentication{Mechanism: Plaintext}, want: "User:ANONYMOUS"},
		{auth: Authentication{Mechanism: TLS}, want: "User:ANONYMOUS"},
		{auth: Authentication{Mechanism: TLS, PeerCertificate: cert}, want: "User:client1"},
		{auth: Authentication{Mechanism: SASL, AuthorizationID: "alice", PeerCertificate: cert}, want: "User:alice"},
		{auth: Authentication{Mechanism: SASL}, err: "empty principal name"},
		{auth: Authentication{Mechanism: Mechanism(9)}, err: "unknown authentication mechanism 9"},
	} {
		p, err := b.Build(tc.auth)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, p.String())
	}

	_, err = NewBuilder(`RULE:(?i)cn=(.*)/$1/`)
	require.ErrorIs(t, err, ErrUnsupportedRegex)

	var zero Builder
	_, err = zero.Build(Authentication{Mechanism: TLS, PeerCertificate: cert})
	require.ErrorIs(t, err, ErrNoMatchingRule)
}
