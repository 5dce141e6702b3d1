// Package protocol is the single table of the Kafka APIs Strata implements:
// which request keys it accepts and at which versions. ApiVersions responses,
// request dispatch and the compatibility docs all read this table, so that
// what the broker advertises and what it actually serves can never drift
// apart.
//
// The package owns no I/O and no state beyond the immutable table. It must
// never advertise a version that no handler in package broker implements
// correctly: ApiVersions must be truthful, because clients pick the highest
// version both sides advertise and then trust the broker to understand it.
package protocol
