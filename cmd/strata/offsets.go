package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/strata-log/strata/internal/cli"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerStreams("offsets", "list a topic's offsets per partition (earliest, latest, max-timestamp or by time), like kafka-get-offsets.sh", withoutStdin(offsetsCommand))
}

// offsetsCommand is `strata offsets`: ListOffsets for each partition of
// --topic (or --partition), printed as a table.
func offsetsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, af := newAdminFlagSet("offsets", "offsets --topic T [--partition P] [--time earliest|latest|max-timestamp|<unix ms>] [flags]",
		"Lists an offset per partition (ListOffsets), like kafka-get-offsets.sh:\n"+
			"  earliest       the log start offset\n"+
			"  latest         the log end offset (high watermark): the next record's offset\n"+
			"  max-timestamp  the offset and timestamp of the record with the largest timestamp (-1 when empty)\n"+
			"  <unix ms>      the first offset whose record's timestamp is at or after it (the end offset if none)", stderr)
	topic := fs.String("topic", "", "the `topic` (required)")
	partition := fs.Int("partition", -1, "only this `partition`; -1 lists them all")
	at := fs.String("time", "latest", "which offset: earliest, latest, max-timestamp or a `time` in unix milliseconds")
	if code, ok := af.ParseFlags(fs, args); !ok {
		return code
	}
	var ms int64
	switch {
	case *topic == "":
		return af.UsageError("--topic is required")
	case *partition < -1 || *partition > 1<<31-1:
		return af.UsageError("--partition must be a partition number, got %d", *partition)
	}
	switch *at {
	case "earliest", "latest", "max-timestamp":
	default:
		var err error
		if ms, err = strconv.ParseInt(*at, 10, 64); err != nil || ms < 0 {
			return af.UsageError("--time must be earliest, latest, max-timestamp or unix milliseconds, got %q", *at)
		}
	}
	return af.run(ctx, func(ctx context.Context, adm *kadm.Client) int {
		partitions, err := cli.TopicPartitions(ctx, adm, *topic, int32(*partition), kmsg.ListOffsets)
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		var listed kadm.ListedOffsets
		switch *at {
		case "earliest":
			listed, err = adm.ListStartOffsets(ctx, *topic)
		case "latest":
			listed, err = adm.ListEndOffsets(ctx, *topic)
		case "max-timestamp":
			listed, err = adm.ListMaxTimestampOffsets(ctx, *topic)
		default:
			listed, err = adm.ListOffsetsAfterMilli(ctx, ms, *topic)
		}
		if err != nil {
			return af.Fail("%s", cli.KafkaError(err, ""))
		}
		code := exitOK
		tw := cli.NewTable(stdout, "TOPIC\tPARTITION\tOFFSET\tTIMESTAMP\tLEADER-EPOCH")
		for _, p := range partitions {
			lo, ok := listed.Lookup(*topic, p)
			switch {
			case !ok:
				code = af.Fail("partition %d: no answer", p)
				continue
			case lo.Err != nil:
				code = af.Fail("partition %d: %s", p, cli.KafkaError(lo.Err, ""))
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", lo.Topic, lo.Partition, lo.Offset, lo.Timestamp, lo.LeaderEpoch)
		}
		_ = tw.Flush()
		return code
	})
}
