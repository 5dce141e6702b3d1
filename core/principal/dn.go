package principal

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidName is wrapped by the error for a distinguished name that is
// not a DER X.501 Name, or whose string value is not valid UTF-8 (where
// Java would substitute U+FFFD).
var ErrInvalidName = errors.New("invalid distinguished name")

type rawAttribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// encoding/asn1 reads a slice type whose name ends in "SET" as SET OF.
// Each AttributeTypeAndValue is read by parseAttribute, which, as Java's
// AVA does, refuses one with anything after its value.
type rawRDNSET []asn1.RawValue

type rawRDNSequence []rawRDNSET

// rfc2253Keywords are the attribute types Java's AVAKeyword marks RFC 2253
// compliant; every other type is written as its dotted OID with the value
// as '#' and the hex of its DER encoding.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// Universal tags Java's AVA renders as strings (AVA.isDerString, not
// canonical).
var javaStringTags = map[int]bool{
	asn1.TagPrintableString: true,
	asn1.TagT61String:       true,
	asn1.TagIA5String:       true,
	27:                      true, // GeneralString
	asn1.TagBMPString:       true,
	asn1.TagUTF8String:      true,
}

// FormatRFC2253 renders a DER-encoded X.501 Name (a certificate's
// RawSubject or RawIssuer) exactly as Java's X500Principal.getName()
// does, the string Kafka's ssl.principal.mapping.rules are applied to:
// RDNs from last to first separated by ',', the attributes of a
// multi-valued RDN in certificate order separated by '+', the keywords CN,
// C, L, ST, O, OU, STREET, DC and UID (any other type as its dotted OID
// with the value as '#' and the lower-case hex of its DER encoding, as
// for a value that is not a string type), and in string values
// ',' '=' '+' '<' '>' '#' ';' '"' '\' escaped with '\', NUL as "\00",
// leading and trailing spaces and carriage returns escaped with '\'.
// Other characters, control characters included, are copied as they are.
//
// Java reads the bytes of every string type as UTF-8 (so a BMPString's
// UTF-16 reads as NULs and letters); so does this. A value that is not
// valid UTF-8 is an error here where Java would substitute U+FFFD.
func FormatRFC2253(der []byte) (string, error) {
	var rdns rawRDNSequence
	rest, err := asn1.Unmarshal(der, &rdns)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidName, err)
	}
	if len(rest) != 0 {
		return "", fmt.Errorf("%w: %d trailing bytes", ErrInvalidName, len(rest))
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i < len(rdns)-1 {
			b.WriteByte(',')
		}
		if len(rdns[i]) == 0 {
			return "", fmt.Errorf("%w: an empty relative distinguished name", ErrInvalidName)
		}
		for j, raw := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			atv, err := parseAttribute(raw)
			if err != nil {
				return "", err
			}
			if err := writeAttribute(&b, atv); err != nil {
				return "", err
			}
		}
	}
	return b.String(), nil
}

// FormatName renders a pkix.Name built in Go (for example a
// certificate template's Subject) as FormatRFC2253 would render its DER
// encoding. It encodes name.ToRDNSequence(), which orders attributes as
// Go does (C, ST, L, STREET, POSTALCODE, O, OU, CN, SERIALNUMBER, then
// ExtraNames) and puts each in its own RDN; for a parsed certificate use
// FormatRFC2253(cert.RawSubject), which keeps the certificate's own order,
// multi-valued RDNs and string types.
func FormatName(name pkix.Name) (string, error) {
	der, err := asn1.Marshal(name.ToRDNSequence())
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidName, err)
	}
	return FormatRFC2253(der)
}

func parseAttribute(raw asn1.RawValue) (rawAttribute, error) {
	var atv rawAttribute
	if raw.Class != asn1.ClassUniversal || raw.Tag != asn1.TagSequence || !raw.IsCompound {
		return atv, fmt.Errorf("%w: an attribute that is not a SEQUENCE", ErrInvalidName)
	}
	rest, err := asn1.Unmarshal(raw.Bytes, &atv.Type)
	if err != nil {
		return atv, fmt.Errorf("%w: attribute type: %v", ErrInvalidName, err)
	}
	rest, err = asn1.Unmarshal(rest, &atv.Value)
	if err != nil {
		return atv, fmt.Errorf("%w: attribute value: %v", ErrInvalidName, err)
	}
	if len(rest) != 0 {
		return atv, fmt.Errorf("%w: %d bytes after an attribute value", ErrInvalidName, len(rest))
	}
	return atv, nil
}

func writeAttribute(b *strings.Builder, atv rawAttribute) error {
	oid := atv.Type.String()
	keyword, known := rfc2253Keywords[oid]
	v := atv.Value
	if !known || v.Class != asn1.ClassUniversal || v.IsCompound || !javaStringTags[v.Tag] {
		if !known {
			keyword = oid
		}
		b.WriteString(keyword + "=#" + hex.EncodeToString(v.FullBytes))
		return nil
	}
	if !utf8.Valid(v.Bytes) {
		return fmt.Errorf("%w: the value of %s is not valid UTF-8", ErrInvalidName, keyword)
	}
	b.WriteString(keyword + "=")
	b.WriteString(escapeRFC2253(string(v.Bytes)))
	return nil
}

// escapeRFC2253 is the string-value half of Java's AVA.toRFC2253String.
func escapeRFC2253(value string) string {
	var esc []rune
	for _, c := range value {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, c):
			esc = append(esc, '\\', c)
		case c == 0:
			esc = append(esc, '\\', '0', '0')
		default:
			esc = append(esc, c)
		}
	}
	white := func(c rune) bool { return c == ' ' || c == '\r' }
	lead := 0
	for lead < len(esc) && white(esc[lead]) {
		lead++
	}
	trail := len(esc) - 1
	for trail >= 0 && white(esc[trail]) {
		trail--
	}
	var b strings.Builder
	for i, c := range esc {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
