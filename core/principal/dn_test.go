package principal

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// tlv encodes one DER element with a short or long form length.
func tlv(tag byte, content ...[]byte) []byte {
	var body []byte
	for _, c := range content {
		body = append(body, c...)
	}
	out := []byte{tag}
	switch n := len(body); {
	case n < 0x80:
		out = append(out, byte(n))
	case n < 0x100:
		out = append(out, 0x81, byte(n))
	default:
		out = append(out, 0x82, byte(n>>8), byte(n))
	}
	return append(out, body...)
}

func oid(t *testing.T, s asn1.ObjectIdentifier) []byte {
	b, err := asn1.Marshal(s)
	require.NoError(t, err)
	return b
}

var (
	oidCN     = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidUID    = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	oidDC     = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidEmail  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	oidSerial = asn1.ObjectIdentifier{2, 5, 4, 5}
	oidOU     = asn1.ObjectIdentifier{2, 5, 4, 11}
)

const (
	tagUTF8      = 0x0c
	tagPrintable = 0x13
	tagIA5       = 0x16
	tagBMP       = 0x1e
	tagOctet     = 0x04
)

// attr is one AttributeTypeAndValue; rdn a SET of them; name the
// SEQUENCE of RDNs, first RDN first (Java prints it last).
func attr(t *testing.T, o asn1.ObjectIdentifier, tag byte, v string) []byte {
	return tlv(0x30, oid(t, o), tlv(tag, []byte(v)))
}

func rdn(attrs ...[]byte) []byte { return tlv(0x31, attrs...) }

func name(rdns ...[]byte) []byte { return tlv(0x30, rdns...) }

func TestFormatNameKnownJavaOutputs(t *testing.T) {
	for _, tc := range []struct {
		name pkix.Name
		want string
	}{
		{pkix.Name{Country: []string{"US"}, Province: []string{"CA"}, Locality: []string{"SF"},
			Organization: []string{"acme"}, OrganizationalUnit: []string{"eng"}, CommonName: "host1"},
			"CN=host1,OU=eng,O=acme,L=SF,ST=CA,C=US"},
		// The X500Principal javadoc's examples.
		{pkix.Name{Country: []string{"US"}, Organization: []string{"Sun Microsystems"},
			OrganizationalUnit: []string{"JavaSoft"}, CommonName: "Duke"},
			"CN=Duke,OU=JavaSoft,O=Sun Microsystems,C=US"},
		{pkix.Name{Country: []string{"GB"}, Organization: []string{"Isode Limited"}, CommonName: "Steve Kille"},
			"CN=Steve Kille,O=Isode Limited,C=GB"},
		{pkix.Name{StreetAddress: []string{"1 Main St"}, CommonName: "x"}, "CN=x,STREET=1 Main St"},
		// Go encodes SerialNumber as a PrintableString; Java has no RFC 2253
		// keyword for it.
		{pkix.Name{CommonName: "x", SerialNumber: "42"}, "2.5.4.5=#13023432,CN=x"},
		{pkix.Name{}, ""},
	} {
		got, err := FormatName(tc.name)
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
}

func TestFormatRFC2253Escaping(t *testing.T) {
	for _, tc := range []struct {
		value, want string
	}{
		{`a,b+c=d<e>f#g;h"i\j`, `CN=a\,b\+c\=d\<e\>f\#g\;h\"i\\j`},
		{`Tkac, Adam`, `CN=Tkac\, Adam`},
		{` lead and trail `, `CN=\ lead and trail\ `},
		{"  ", `CN=\ \ `},
		{"\r x\r", "CN=\\\r\\ x\\\r"},
		{`#hash`, `CN=\#hash`},
		{"a\x00b", `CN=a\00b`},
		{"tab\there", "CN=tab\there"},
		{"new\nline", "CN=new\nline"},
		{"Ünïcödé 名前", "CN=Ünïcödé 名前"},
		{"", "CN="},
		{"a/b:c?d'e(f)", "CN=a/b:c?d'e(f)"},
	} {
		got, err := FormatRFC2253(name(rdn(attr(t, oidCN, tagUTF8, tc.value))))
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%q", tc.value)
	}
}

func TestFormatRFC2253Structure(t *testing.T) {
	for _, tc := range []struct {
		desc string
		der  []byte
		want string
	}{
		{"DC and UID keywords, IA5 strings",
			name(rdn(attr(t, oidDC, tagIA5, "com")), rdn(attr(t, oidDC, tagIA5, "example")), rdn(attr(t, oidUID, tagUTF8, "jsmith"))),
			"UID=jsmith,DC=example,DC=com"},
		{"emailAddress has no RFC 2253 keyword: OID and hex DER",
			name(rdn(attr(t, oidEmail, tagIA5, "alice@example.com")), rdn(attr(t, oidCN, tagUTF8, "alice"))),
			"CN=alice,1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d"},
		{"serialNumber",
			name(rdn(attr(t, oidSerial, tagPrintable, "42"))),
			"2.5.4.5=#13023432"},
		{"a known keyword with a non-string value is hex",
			name(rdn(attr(t, oidCN, tagOctet, "abc"))),
			"CN=#0403616263"},
		{"BMPString bytes read as UTF-8, as Java does",
			name(rdn(attr(t, oidCN, tagBMP, "\x00a\x00b"))),
			`CN=\00a\00b`},
		{"multi-valued RDN in certificate order",
			name(rdn(attr(t, oidOU, tagUTF8, "eng")), rdn(attr(t, oidCN, tagUTF8, "a"), attr(t, oidUID, tagUTF8, "b"))),
			"CN=a+UID=b,OU=eng"},
		{"multi-valued RDN, other order",
			name(rdn(attr(t, oidUID, tagUTF8, "b"), attr(t, oidCN, tagUTF8, "a+c"))),
			`UID=b+CN=a\+c`},
		{"empty name", name(), ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := FormatRFC2253(tc.der)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestFormatRFC2253Invalid(t *testing.T) {
	for _, tc := range []struct {
		desc string
		der  []byte
		err  string
	}{
		{"not DER", []byte{0x30, 0x05, 0x01}, "invalid distinguished name"},
		{"empty input", nil, "invalid distinguished name"},
		{"trailing bytes", append(name(), 0x00), "1 trailing bytes"},
		{"not a SEQUENCE", tlv(0x31), "invalid distinguished name"},
		{"empty RDN", name(tlv(0x31)), "an empty relative distinguished name"},
		{"attribute not a SEQUENCE", name(rdn(tlv(0x04, []byte("x")))), "not a SEQUENCE"},
		{"attribute without a value", name(rdn(tlv(0x30, oid(t, oidCN)))), "attribute value"},
		{"attribute type not an OID", name(rdn(tlv(0x30, tlv(0x0c, []byte("x")), tlv(0x0c, []byte("y"))))), "attribute type"},
		{"bytes after the value", name(rdn(tlv(0x30, oid(t, oidCN), tlv(0x0c, []byte("y")), tlv(0x0c, []byte("z"))))), "bytes after an attribute value"},
		{"value not UTF-8", name(rdn(attr(t, oidCN, tagUTF8, "a\xffb"))), "not valid UTF-8"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := FormatRFC2253(tc.der)
			require.ErrorIs(t, err, ErrInvalidName)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// Any byte string is either rendered or refused with ErrInvalidName.
func TestFormatRFC2253NeverPanics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		der := rapid.SliceOf(rapid.Byte()).Draw(t, "der")
		if _, err := FormatRFC2253(der); err != nil {
			require.ErrorIs(t, err, ErrInvalidName)
		}
	})
}

// A CN of letters, digits and spaces inside renders as itself, and the
// Kafka-style rule that extracts the CN gets it back.
func TestFormatRFC2253PlainValuesRoundTrip(t *testing.T) {
	rules, err := ParseRules(`RULE:^CN=([^,]*)(,.*)?$/$1/`)
	require.NoError(t, err)
	rapid.Check(t, func(t *rapid.T) {
		cn := rapid.StringMatching(`[A-Za-z0-9]([A-Za-z0-9 .-]*[A-Za-z0-9])?`).Draw(t, "cn")
		dn, err := FormatName(pkix.Name{CommonName: cn, Organization: []string{"acme"}})
		require.NoError(t, err)
		require.Equal(t, "CN="+cn+",O=acme", dn)
		got, err := rules.MapDN(dn)
		require.NoError(t, err)
		require.Equal(t, cn, got)
	})
}
