package protocol

import "github.com/twmb/franz-go/pkg/kmsg"

// API is one Kafka API (request key) and the inclusive range of versions
// Strata implements for it.
type API struct {
	// Key is the Kafka API key (kmsg.Key values, e.g. 18 for ApiVersions).
	Key int16
	// MinVersion and MaxVersion bound the versions handled, inclusively.
	MinVersion, MaxVersion int16
}

// Name is the Kafka name of the API ("ApiVersions", "Metadata", ...).
func (a API) Name() string { return kmsg.NameForKey(a.Key) }

// Supports reports whether version v of this API is implemented.
func (a API) Supports(v int16) bool { return v >= a.MinVersion && v <= a.MaxVersion }

// apis is the table, sorted by key. Adding a row is a promise that package
// broker handles every version in the range; each row says why its range
// stops where it does.
var apis = [...]API{
	// Metadata v0..v13: every version kmsg encodes. v13 (KIP-1102) only adds
	// a top-level error code, which is NONE for us. Older versions stay
	// because they cost nothing and keep old clients (sarama's defaults)
	// working; Kafka 4.0 dropped v0..v3, we need not.
	{Key: kmsg.Metadata.Int16(), MinVersion: 0, MaxVersion: 13},
	// ApiVersions v0..v4: v4 is Kafka 4.x's latest stable version (same
	// body as v3). kmsg knows v5 (KIP-1242, cluster and node id checks),
	// which we do not implement yet; a v5 request gets the KIP-511
	// UNSUPPORTED_VERSION answer and the client retries at v4.
	{Key: kmsg.ApiVersions.Int16(), MinVersion: 0, MaxVersion: 4},
	// CreateTopics v0..v7: every version kmsg encodes; the request is
	// passed to the metadata quorum's active controller, which answers
	// each version (v7 adds topic ids).
	{Key: kmsg.CreateTopics.Int16(), MinVersion: 0, MaxVersion: 7},
	// DeleteTopics v0..v6: every version kmsg encodes (v6 deletes by
	// topic id); passed to the active controller like CreateTopics.
	{Key: kmsg.DeleteTopics.Int16(), MinVersion: 0, MaxVersion: 6},
	// CreatePartitions v0..v3: every version kmsg encodes; passed to the
	// active controller.
	{Key: kmsg.CreatePartitions.Int16(), MinVersion: 0, MaxVersion: 3},
	// DescribeQuorum v0..v2: every version kmsg encodes (v1 adds fetch
	// and caught-up timestamps, v2 error messages, directory ids and the
	// leader's nodes, which stay empty). As in Kafka, the broker forwards
	// it to the quorum leader, which answers it (core/quorum's encoder
	// covers every version).
	{Key: kmsg.DescribeQuorum.Int16(), MinVersion: 0, MaxVersion: 2},
}

// Lookup returns the table row for key and whether Strata implements that
// key at all.
func Lookup(key int16) (API, bool) {
	for _, a := range apis {
		if a.Key == key {
			return a, true
		}
	}
	return API{}, false
}

// Supported returns a copy of the table, sorted by key. Callers may modify
// the copy.
func Supported() []API {
	out := make([]API, len(apis))
	copy(out, apis[:])
	return out
}
