// Package cli holds what strata's client commands share (topic, produce,
// consume, offsets, group, txn, quorum, top, bench, user, acl, quota):
// exit codes, a command's flag set, usage and messages, the
// --bootstrap-server flag and the franz-go client built from it, the
// --command-config client security properties (TLS, SASL), passwords
// read without a flag or an echo,
// repeatable key=value flags, flags after positional arguments, an
// interrupt context, Kafka errors printed with their names, and
// DescribeQuorum asked of brokers or controller listeners.
//
// It owns no command: each command is a file of cmd/strata (or a package
// of its own, as internal/bench and internal/top) that registers itself.
package cli

// Exit codes of every command.
const (
	ExitOK    = 0
	ExitError = 1 // the command ran and failed
	ExitUsage = 2 // the command line was wrong
)
