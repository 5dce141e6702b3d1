// Package protocol is the single table of the Kafka APIs Strata implements:
// which request keys each listener accepts and at which versions
// (Table, API), the ApiVersions answers built from it, and how a request
// of each kind is answered with an error (ErrorResponse, one file per
// request family). ApiVersions responses, request dispatch and the
// compatibility docs all read the tables, so that what a listener
// advertises and what it actually serves can never drift apart.
//
// The package owns no I/O and no state beyond the immutable tables:
// framing, connections and the reconnecting peer are core/wire's. It must
// never advertise a version that no handler in package broker implements
// correctly: ApiVersions must be truthful, because clients pick the highest
// version both sides advertise and then trust the broker to understand it.
package protocol
