package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/protocol"
)

// handleApiVersions answers a supported-version ApiVersions request with the
// protocol table.
func (b *Broker) handleApiVersions(req *kmsg.ApiVersionsRequest) *kmsg.ApiVersionsResponse {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	// v3+ (KIP-511) requires the client software name and version to match
	// Kafka's pattern; Kafka answers INVALID_REQUEST with no keys
	// otherwise, and so do we.
	if req.Version >= 3 && (!validSoftwareField(req.ClientSoftwareName) || !validSoftwareField(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	resp.ApiKeys = supportedKeys()
	return resp
}

// apiVersionsUnsupported is the KIP-511 answer to an ApiVersions request at
// a version we do not implement: a v0 response (the only format every
// client can read) with UNSUPPORTED_VERSION. Kafka lists only the
// ApiVersions key there; we list every key, which is a superset clients
// handle either way: the Java client and librdkafka look up the
// ApiVersions row and retry at its max version, and franz-go uses a full
// list directly.
func (b *Broker) apiVersionsUnsupported(requested int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = supportedKeys()
	b.log.Debug("ApiVersions at unsupported version; answered v0 with UNSUPPORTED_VERSION", "requested_version", requested)
	return resp
}

// supportedKeys renders the protocol table as ApiVersions rows.
func supportedKeys() []kmsg.ApiVersionsResponseApiKey {
	table := protocol.Supported()
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(table))
	for _, a := range table {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.MinVersion, a.MaxVersion
		keys = append(keys, k)
	}
	return keys
}

// validSoftwareField reports whether s matches Kafka's pattern for
// ClientSoftwareName and ClientSoftwareVersion:
// [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
func validSoftwareField(s string) bool {
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
