package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/env"
	"github.com/strata-log/strata/core/replica"
)

// handleDescribeLogDirs answers DescribeLogDirs with the one data
// directory (Config.LogDir) and the partitions hosted in it: every one, or
// those the request names (partitions not hosted here are left out, as
// Kafka does). A partition's size is its log's (replica.Partition.Size);
// its offset lag is 0 and it is never a future replica (there are no
// followers and no AlterReplicaLogDirs yet). The volume's total and
// usable bytes (version 4+) come from the disk when it can tell
// (env.DiskSpace), else -1.
func handleDescribeLogDirs(b *Broker, r *request) {
	req := r.body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.cfg.LogDir
	if ds, ok := b.e.Disk().(env.DiskSpace); ok {
		if total, usable, err := ds.Space(); err == nil {
			dir.TotalBytes, dir.UsableBytes = total, usable
		}
	}
	type partKey struct {
		topic string
		id    int32
	}
	var wanted map[partKey]bool // nil: every partition; only looked up
	if req.Topics != nil {
		wanted = map[partKey]bool{}
		for _, t := range req.Topics {
			for _, id := range t.Partitions {
				wanted[partKey{t.Topic, id}] = true
			}
		}
	}
	dir.Topics = []kmsg.DescribeLogDirsResponseDirTopic{}
	var parts []*replica.Partition
	if b.cfg.Partitions != nil {
		parts = b.cfg.Partitions.Partitions() // sorted by topic, partition
	}
	for _, p := range parts {
		if wanted != nil && !wanted[partKey{p.Topic(), p.ID()}] {
			continue
		}
		n := len(dir.Topics)
		if n == 0 || dir.Topics[n-1].Topic != p.Topic() {
			dt := kmsg.NewDescribeLogDirsResponseDirTopic()
			dt.Topic = p.Topic()
			dir.Topics = append(dir.Topics, dt)
			n++
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition, dp.Size, dp.OffsetLag, dp.IsFuture = p.ID(), p.Size(), 0, false
		dir.Topics[n-1].Partitions = append(dir.Topics[n-1].Partitions, dp)
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{dir}
	r.respond(resp)
}
