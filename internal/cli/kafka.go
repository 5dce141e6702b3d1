package cli

// What the Kafka client commands (topic, produce, consume, offsets) share:
// the --bootstrap-server flag and the client built from it, repeatable
// key=value flags, flags given after positional arguments, an interrupt
// context, and Kafka errors printed with their names.

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults shared by the Kafka client commands.
const (
	// DefaultBootstrapServer is --bootstrap-server when not given: the
	// client listener of `strata serve` with no configuration.
	DefaultBootstrapServer = "127.0.0.1:9092"
	// DefaultAdminTimeout bounds a topic or offsets command: dialing,
	// metadata, the request and its retries.
	DefaultAdminTimeout = 30 * time.Second
	// DialTimeout bounds one connection attempt.
	DialTimeout = 3 * time.Second
	// ClientID is the client id the commands send.
	ClientID = "strata-cli"
)

// BootstrapFlag registers --bootstrap-server on fs.
func BootstrapFlag(fs *flag.FlagSet) *string {
	return fs.String("bootstrap-server", DefaultBootstrapServer, "broker client listeners, `host:port[,host:port...]`")
}

// ParseAddrs splits a --bootstrap-server value and checks each address.
func ParseAddrs(s string) ([]string, error) {
	addrs := SplitAddrs(s)
	if len(addrs) == 0 {
		return nil, errors.New("--bootstrap-server is empty")
	}
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("bad address %q in --bootstrap-server: %w", a, err)
		}
	}
	return addrs, nil
}

// NewKafkaClient is a franz-go client seeded with addrs; opts come after
// the shared ones, so they may override them.
func NewKafkaClient(addrs []string, opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(addrs...), kgo.DialTimeout(DialTimeout), kgo.ClientID(ClientID)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return cl, nil
}

// KafkaError renders err with a Kafka error code's name, as kerr spells
// it ("INVALID_CONFIG: The configuration is invalid."), and with the
// broker's own message in place of kerr's description when the broker
// sent one ("INVALID_CONFIG: Unknown topic config name: x"). Errors that
// are not Kafka error codes (a refused connection, a timeout) print as
// they are.
func KafkaError(err error, brokerMessage string) string {
	if brokerMessage == "" {
		return err.Error()
	}
	if ke, ok := err.(*kerr.Error); ok {
		return ke.Message + ": " + brokerMessage
	}
	return err.Error() + ": " + brokerMessage
}

// KeyValue is one key=value of a repeatable flag.
type KeyValue struct{ Key, Value string }

// KeyValues is a repeatable key=value flag (--config, --header,
// --node-arg), in the order given.
type KeyValues []KeyValue

func (kvs *KeyValues) String() string {
	if kvs == nil {
		return ""
	}
	parts := make([]string, len(*kvs))
	for i, kv := range *kvs {
		parts[i] = kv.Key + "=" + kv.Value
	}
	return strings.Join(parts, ",")
}

// Set adds one key=value; the value may be empty and may contain '='.
func (kvs *KeyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	*kvs = append(*kvs, KeyValue{k, v})
	return nil
}

// StringList is a repeatable flag of plain strings (--delete-config).
type StringList []string

func (l *StringList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *StringList) Set(s string) error {
	if s == "" {
		return errors.New("empty value")
	}
	*l = append(*l, s)
	return nil
}

// ParseInterleaved parses fs's flags from args wherever they appear, so
// that `topic create NAME --partitions 3` works as Kafka's tools do, and
// returns the positional arguments in order. Everything after "--" is
// positional.
func ParseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// InterruptContext is canceled by the first SIGINT or SIGTERM; a second
// one gets the default action, so an operator can always kill a command
// whose shutdown hangs.
func InterruptContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// DescribeTopic is one topic's metadata; a topic the broker does not know
// is its UNKNOWN_TOPIC_OR_PARTITION error.
func DescribeTopic(ctx context.Context, adm *kadm.Client, topic string) (kadm.TopicDetail, error) {
	tds, err := adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		return kadm.TopicDetail{}, fmt.Errorf("metadata: %w", err)
	}
	td, ok := tds[topic]
	switch {
	case !ok:
		return td, fmt.Errorf("topic %q: %w", topic, kerr.UnknownTopicOrPartition)
	case td.Err != nil:
		return td, fmt.Errorf("topic %q: %w", topic, td.Err)
	}
	return td, nil
}

// SelectPartitions is every partition of td, sorted, when partition is
// -1, and partition alone otherwise, which must exist.
func SelectPartitions(td kadm.TopicDetail, partition int32) ([]int32, error) {
	all := td.Partitions.Numbers()
	slices.Sort(all)
	if partition < 0 {
		return all, nil
	}
	if !slices.Contains(all, partition) {
		return nil, fmt.Errorf("topic %q has no partition %d (it has %d): %w", td.Topic, partition, len(all), kerr.UnknownTopicOrPartition)
	}
	return []int32{partition}, nil
}

// TopicPartitions checks that the brokers offer keys (RequireAPIs) and
// returns topic's partitions as SelectPartitions does.
func TopicPartitions(ctx context.Context, adm *kadm.Client, topic string, partition int32, keys ...kmsg.Key) ([]int32, error) {
	if err := RequireAPIs(ctx, adm, keys...); err != nil {
		return nil, err
	}
	td, err := DescribeTopic(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	return SelectPartitions(td, partition)
}

// RequireAPIs checks that every broker that answers ApiVersions offers
// the requests a command needs, so that a broker without one is a clear
// error. Without the check the failure is obscure: franz-go reads a
// broker that does not list Produce as one whose versions are unknown and
// sends it anything, a broker closes the connection on a request it does
// not know, and franz-go then retries the request (a consumer waits
// forever) or blames SASL.
func RequireAPIs(ctx context.Context, adm *kadm.Client, keys ...kmsg.Key) error {
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	var firstErr error
	answered := 0
	for _, v := range vs.Sorted() {
		if v.Err != nil {
			firstErr = cmp.Or(firstErr, fmt.Errorf("ApiVersions of broker %d: %w", v.NodeID, v.Err))
			continue
		}
		answered++
		var missing []string
		for _, k := range keys {
			if _, ok := v.KeyMaxVersion(k.Int16()); !ok {
				missing = append(missing, k.Name())
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("broker %d does not offer %s (not in its ApiVersions answer), which this command needs", v.NodeID, strings.Join(missing, ", "))
		}
	}
	if answered == 0 && firstErr != nil {
		return firstErr
	}
	return nil
}
