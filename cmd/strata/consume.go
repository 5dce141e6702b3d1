package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerStreams("consume", "print a topic's records to stdout, one value per line, like kafka-console-consumer.sh", withoutStdin(consumeCommand))
}

// consumeCommand is `strata consume`: it reads --topic's partitions (all,
// or --partition) from a start position without a consumer group and
// prints each record's value on a line, until --max-messages records,
// --timeout without a record, or Ctrl-C (ctx), all of which exit 0. It
// exits 1 on an unknown topic or partition and on a fetch error.
func consumeCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, cmd := cli.NewFlagSet("consume", "consume --topic T [flags]",
		"Prints records to stdout, one value per line, like kafka-console-consumer.sh; a null value prints\n"+
			"as null. The start is the end of each partition (only new records) unless --from-beginning,\n"+
			"--offset or --offset-time says otherwise. Stops after --max-messages, after --timeout without a\n"+
			"record, or on Ctrl-C, and then prints how many records it printed to stderr.", stderr)
	bootstrap := cli.BootstrapFlag(fs)
	commandConfig := cli.CommandConfigFlag(fs)
	topic := fs.String("topic", "", "the `topic` to consume (required)")
	partition := fs.Int("partition", -1, "consume only this `partition`; -1 reads them all")
	fromBeginning := fs.Bool("from-beginning", false, "start at each partition's log start")
	offset := fs.Int64("offset", -1, "start at this `offset` of each partition, clamped to the log's start and end; -1 means not given")
	offsetTime := fs.String("offset-time", "", "start at each partition's first record at or after `time`: RFC 3339 (2026-01-02T15:04:05Z) or unix milliseconds")
	maxMessages := fs.Int("max-messages", 0, "exit after printing this many `records` (default: no limit)")
	idle := fs.Duration("timeout", 0, "exit after this long without a record (default: run until Ctrl-C or --max-messages)")
	printKey := fs.Bool("print-key", false, "print each record's key (null when it has none) and the separator before the value")
	printOffset := fs.Bool("print-offset", false, "print Partition:P and Offset:O, each followed by the separator, before the key and value")
	keySep := fs.String("key-separator", "\t", "the `separator` after the key and the offset fields")
	extra, code, ok := cli.ParseArgs(fs, args)
	if !ok {
		return code
	}
	starts := 0
	offsetGiven := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "from-beginning", "offset-time":
			starts++
		case "offset":
			starts++
			offsetGiven = true
		}
	})
	start := kgo.NewOffset().AtEnd()
	switch {
	case *fromBeginning:
		start = kgo.NewOffset().AtStart()
	case offsetGiven:
		start = kgo.NewOffset().At(*offset)
	case *offsetTime != "":
		ms, err := parseOffsetTime(*offsetTime)
		if err != nil {
			return cmd.UsageError("--offset-time: %v", err)
		}
		start = kgo.NewOffset().AfterMilli(ms)
	}
	addrs, addrErr := cli.ParseAddrs(*bootstrap)
	switch {
	case len(extra) > 0:
		return cmd.UsageError("unexpected arguments %q", extra)
	case *topic == "":
		return cmd.UsageError("--topic is required")
	case starts > 1:
		return cmd.UsageError("give at most one of --from-beginning, --offset and --offset-time")
	case offsetGiven && *offset < 0:
		return cmd.UsageError("--offset must be at least 0, got %d", *offset)
	case *partition < -1 || *partition > 1<<31-1:
		return cmd.UsageError("--partition must be a partition number, got %d", *partition)
	case *maxMessages < 0:
		return cmd.UsageError("--max-messages must be at least 0")
	case *idle < 0:
		return cmd.UsageError("--timeout must be at least 0")
	case addrErr != nil:
		return cmd.UsageError("%v", addrErr)
	}
	fail := func(err error) int { return cmd.Fail("%s", cli.KafkaError(err, "")) }
	security, err := cli.LoadClientSecurity(*commandConfig)
	if err != nil {
		return cmd.UsageError("%v", err)
	}

	partitions, err := consumePartitions(ctx, addrs, security, *topic, int32(*partition))
	if err != nil {
		return fail(err)
	}
	offsets := map[int32]kgo.Offset{}
	for _, p := range partitions {
		offsets[p] = start
	}
	cl, err := cli.NewKafkaClient(addrs, append(security, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{*topic: offsets}))...)
	if err != nil {
		return fail(err)
	}
	defer cl.Close()

	c := consumer{
		out:         bufio.NewWriter(stdout),
		printKey:    *printKey,
		printOffset: *printOffset,
		sep:         []byte(*keySep),
		max:         *maxMessages,
		idle:        *idle,
	}
	err = c.run(ctx, cl)
	if flushErr := c.out.Flush(); err == nil && flushErr != nil {
		err = fmt.Errorf("writing stdout: %w", flushErr)
	}
	fmt.Fprintf(stderr, "Processed a total of %d messages\n", c.printed)
	if err != nil {
		return fail(err)
	}
	return exitOK
}

// consumePartitions checks that topic (and partition, unless -1) exists
// and returns the partitions to read; security are the client's TLS and
// SASL options.
func consumePartitions(ctx context.Context, addrs []string, security []kgo.Opt, topic string, partition int32) ([]int32, error) {
	cl, err := cli.NewKafkaClient(addrs, security...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, cli.DefaultAdminTimeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	return cli.TopicPartitions(ctx, adm, topic, partition, kmsg.Fetch, kmsg.ListOffsets)
}

// parseOffsetTime is --offset-time in unix milliseconds.
func parseOffsetTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("%d is before 1970", ms)
		}
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("want RFC 3339 (2026-01-02T15:04:05Z) or unix milliseconds, got %q", s)
	}
	return t.UnixMilli(), nil
}

// consumer prints polled records.
type consumer struct {
	out         *bufio.Writer
	printKey    bool
	printOffset bool
	sep         []byte
	max         int           // 0: no limit
	idle        time.Duration // 0: no idle timeout
	printed     int
}

// run polls and prints until the limit, the idle timeout or ctx's end,
// each of which is a clean stop, or a fetch error.
func (c *consumer) run(ctx context.Context, cl *kgo.Client) error {
	for c.max == 0 || c.printed < c.max {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if c.idle > 0 {
			pollCtx, cancel = context.WithTimeout(ctx, c.idle)
		}
		fetches := cl.PollRecords(pollCtx, c.max-c.printed)
		cancel()
		if ctx.Err() != nil || pollCtx.Err() != nil {
			// Ctrl-C or the idle timeout; records polled with
			// it are still printed.
			c.print(fetches)
			return nil
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			if fetchErr == nil {
				fetchErr = fmt.Errorf("fetching %s/%d: %w", t, p, err)
			}
		})
		if fetchErr != nil {
			return fetchErr
		}
		c.print(fetches)
		if err := c.out.Flush(); err != nil {
			return fmt.Errorf("writing stdout: %w", err)
		}
	}
	return nil
}

func (c *consumer) print(fetches kgo.Fetches) {
	fetches.EachRecord(func(r *kgo.Record) {
		if c.max > 0 && c.printed >= c.max {
			return
		}
		c.printed++
		if c.printOffset {
			fmt.Fprintf(c.out, "Partition:%d%sOffset:%d%s", r.Partition, c.sep, r.Offset, c.sep)
		}
		if c.printKey {
			writeNullable(c.out, r.Key)
			_, _ = c.out.Write(c.sep)
		}
		writeNullable(c.out, r.Value)
		_ = c.out.WriteByte('\n')
	})
}

// writeNullable writes b, or "null" for a null key or value, as
// kafka-console-consumer.sh does.
func writeNullable(w *bufio.Writer, b []byte) {
	if b == nil {
		_, _ = w.WriteString("null")
		return
	}
	_, _ = w.Write(b)
}
