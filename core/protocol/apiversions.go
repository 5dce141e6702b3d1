package protocol

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AnswerApiVersions answers a supported-version ApiVersions request with
// the table.
func (t Table) AnswerApiVersions(req *kmsg.ApiVersionsRequest) *kmsg.ApiVersionsResponse {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	// v3+ (KIP-511) requires the client software name and version to match
	// Kafka's pattern; Kafka answers INVALID_REQUEST with no keys
	// otherwise, and so do we.
	if req.Version >= 3 && (!ValidSoftwareField(req.ClientSoftwareName) || !ValidSoftwareField(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	resp.ApiKeys = t.apiVersionsKeys()
	return resp
}

// ApiVersionsUnsupported is the KIP-511 answer to an ApiVersions request at
// a version the table does not implement: a v0 response (the only format
// every client can read) with UNSUPPORTED_VERSION. Kafka lists only the
// ApiVersions key there; we list every key, which is a superset clients
// handle either way: the Java client and librdkafka look up the
// ApiVersions row and retry at its max version, and franz-go uses a full
// list directly.
func (t Table) ApiVersionsUnsupported() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = t.apiVersionsKeys()
	return resp
}

// apiVersionsKeys renders the table as ApiVersions rows.
func (t Table) apiVersionsKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(t.rows))
	for _, a := range t.Listed() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.MinVersion, a.MaxVersion
		keys = append(keys, k)
	}
	return keys
}

// ValidSoftwareField reports whether s matches Kafka's pattern for
// ClientSoftwareName and ClientSoftwareVersion:
// [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
func ValidSoftwareField(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
