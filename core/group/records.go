package group

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/coord"
)

// Record is one record of __consumer_offsets: Kafka's key and value
// schemas, a nil Value being a tombstone (compaction drops the key).
type Record = coord.Record

// Key versions (Kafka's CoordinatorRecord types): 0 and 1 are
// OffsetCommitKey, 2 GroupMetadataKey.
const (
	keyOffsetCommit   = 1
	keyGroupMetadata  = 2
	offsetValueVer    = 3 // OffsetCommitValue with the leader epoch
	groupValueVersion = 3 // GroupMetadataValue with instance ids
)

// ErrBadRecord wraps a __consumer_offsets record that does not decode:
// replay stops at it (the partition is damaged or was written by
// something else), and the shard does not serve.
var ErrBadRecord = errors.New("group: bad __consumer_offsets record")

// offsetRecord is the record of one committed offset (value nil to delete
// it).
func offsetRecord(group, topic string, partition int32, c *committed) Record {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = keyOffsetCommit, group, topic, partition
	r := Record{Key: k.AppendTo(nil)}
	if c != nil {
		v := kmsg.NewOffsetCommitValue()
		v.Version = offsetValueVer
		v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = c.offset, c.leaderEpoch, c.metadata, c.timestamp
		r.Value = v.AppendTo(nil)
	}
	return r
}

// groupRecord is the record of a group's membership and assignment, as of
// its current generation (value nil to delete the group).
func groupRecord(g *Group, nowMs int64) Record {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = keyGroupMetadata, g.name
	r := Record{Key: k.AppendTo(nil)}
	if g.deleted {
		return r
	}
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType, v.Generation, v.CurrentStateTimestamp = g.protocolType, g.generation, nowMs
	if g.protocol != "" {
		v.Protocol = kmsg.StringPtr(g.protocol)
	}
	if g.leader != "" {
		v.Leader = kmsg.StringPtr(g.leader)
	}
	for _, m := range g.members {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis, vm.SessionTimeoutMillis = m.rebalanceTimeoutMs, m.sessionTimeoutMs
		vm.Subscription, vm.Assignment = m.metadataFor(g.protocol), m.assignment
		v.Members = append(v.Members, vm)
	}
	r.Value = v.AppendTo(nil)
	return r
}

// decodedRecord is a replayed record: an offset or a group.
type decodedRecord struct {
	group string
	// offset records
	isOffset        bool
	topic           string
	partition       int32
	offset          *committed
	groupValue      *kmsg.GroupMetadataValue
	groupTombstoned bool
}

// decodeRecord reads a record of __consumer_offsets. Records of kinds
// this coordinator does not write (transactions' and KIP-848's, later
// issues) are reported as skip.
func decodeRecord(key, value []byte) (d decodedRecord, skip bool, err error) {
	if len(key) < 2 {
		return d, false, fmt.Errorf("%w: a key of %d bytes", ErrBadRecord, len(key))
	}
	switch version := int16(binary.BigEndian.Uint16(key)); version {
	case 0, keyOffsetCommit:
		k := kmsg.NewOffsetCommitKey()
		if err := k.ReadFrom(key); err != nil {
			return d, false, fmt.Errorf("%w: offset key: %v", ErrBadRecord, err)
		}
		d.isOffset, d.group, d.topic, d.partition = true, k.Group, k.Topic, k.Partition
		if value == nil {
			return d, false, nil
		}
		v := kmsg.NewOffsetCommitValue()
		if err := v.ReadFrom(value); err != nil {
			return d, false, fmt.Errorf("%w: offset value of %s %s-%d: %v", ErrBadRecord, k.Group, k.Topic, k.Partition, err)
		}
		d.offset = &committed{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: v.Metadata, timestamp: v.CommitTimestamp}
		if v.Version < 3 {
			d.offset.leaderEpoch = -1
		}
		return d, false, nil
	case keyGroupMetadata:
		k := kmsg.NewGroupMetadataKey()
		if err := k.ReadFrom(key); err != nil {
			return d, false, fmt.Errorf("%w: group key: %v", ErrBadRecord, err)
		}
		d.group = k.Group
		if value == nil {
			d.groupTombstoned = true
			return d, false, nil
		}
		v := kmsg.NewGroupMetadataValue()
		if err := v.ReadFrom(value); err != nil {
			return d, false, fmt.Errorf("%w: group value of %s: %v", ErrBadRecord, k.Group, err)
		}
		d.groupValue = &v
		return d, false, nil
	default:
		return d, true, nil
	}
}
