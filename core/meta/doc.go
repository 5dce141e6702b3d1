// Package meta owns Strata's cluster metadata as KRaft models it: the
// metadata records the controller writes to the __cluster_metadata log, their
// binary encoding, the immutable Image every node (controller or broker)
// builds by replaying them, the Delta that derives one image from the next,
// and snapshots, which are the records that recreate an image.
//
// # Records
//
// The record kinds follow Kafka's metadata records, with Kafka's type
// numbers: RegisterBroker, UnregisterBroker, FenceBroker, UnfenceBroker,
// BrokerRegistrationChange, Topic, Partition, PartitionChange, Config,
// RemoveTopic, ProducerIds, FeatureLevel and NoOp (see records.go for the
// fields), and the security records AccessControlEntry,
// RemoveAccessControlEntry, UserScramCredential, RemoveUserScramCredential
// and ClientQuota (security.go). The image keeps ACLs by id and in an
// acl.Index, SCRAM credentials by user and mechanism (it is the brokers'
// sasl.Credentials) and client quotas by entity; an ACL id and its binding
// are one-to-one, and removing an ACL id or a credential that is not in
// the image is refused, as Kafka's replay refuses it. A PartitionChangeRecord carries only the fields that change; its
// replay follows Kafka's PartitionRegistration.merge: the partition epoch
// always grows by one, the leader epoch grows by one whenever the record sets
// a leader.
//
// # Encoding
//
// A record value is a header of three unsigned varints (frame version
// FrameVersion, record type, record version) followed by the body. Bodies
// use zigzag varints for integers, KIP-482 compact strings and arrays,
// 16-byte UUIDs, one-byte bools, and end with a tagged-field section
// (count, then ascending tag, size, payload). EncodeRecord depends only on
// the record, so every node produces identical bytes.
//
// Records evolve in two ways. A field an older reader may safely ignore is
// added as a new tag: older readers skip unknown tags, so no version bump is
// needed. A field an older reader must not ignore (eligible leader replicas
// change who may lead, so ignoring them would let two nodes elect
// differently) bumps the record's version: an older reader refuses the
// record with ErrUnsupportedVersion instead of silently diverging, and the
// writer stays at the old version, through EncodeRecordVersion, until a
// feature level says every node reads the new one. DecodeRecord reads every
// version from 0 to the newest it knows; fields an older version lacks
// decode as zero. PartitionRecord and PartitionChangeRecord are at version
// 1 (version 1 added ELR and LastKnownELR); the others at version 0.
//
// # Image and Delta
//
// An Image is immutable. Its brokers, topics (by id and by name), config
// resources and features live in persistent ordered trees (pmap.go): a new
// image copies only the tree paths to what changed and shares the rest, and
// iteration is in key order, so nothing depends on Go's map order. A topic's
// partitions are a sorted slice of immutable *Partition: a change to one
// partition copies that topic's slice of pointers, never the cluster.
//
// A Delta collects the effect of records on a base image (the touched
// brokers, topics and partitions, config resources, features) and
// Delta.Apply builds the next image at a Position. Replaying records one
// delta at a time or all in one delta gives equal images.
//
// Every image carries a Digest: a multiset hash of its snapshot records
// (maintained incrementally by Apply) plus its position, so comparing two
// nodes' images costs O(1).
//
// # Validation and what a replay error means
//
// Delta.Replay checks each record against the image's invariants before it
// changes anything, and refuses a violating record with a *ReplayError
// wrapping ErrInvalidRecord (or a refinement: ErrUnknownTopic,
// ErrUnknownPartition, ErrUnknownBroker, ErrBrokerEpochMismatch,
// ErrDuplicateTopic, ErrEpochBackwards, ErrInvalidPartition). The active
// controller validates before it writes, so the committed log never holds
// such a record: a quorum driver that meets one while replaying has found
// corrupt or divergent state and must stop the node (a fatal invariant
// violation), never skip the record. The controller may use a scratch Delta
// to check records before proposing them.
//
// # Invariants
//
//   - Epochs never go backwards: a broker re-registers only with a higher
//     epoch, and records about a broker must carry its current epoch; a
//     partition's leader epoch never decreases and its partition epoch grows
//     with every change (a PartitionRecord replacing a partition included);
//     the next producer id only grows; an image's position never moves
//     backwards.
//   - For every partition: Replicas is non-empty and duplicate-free; ISR,
//     RemovingReplicas, AddingReplicas and ELR are subsets of Replicas;
//     ELR is disjoint from ISR; the leader is NoLeader (-1) or a member of
//     the ISR.
//   - Topic names and topic ids are one-to-one: a TopicRecord must bring a
//     new name and a new id; RemoveTopic frees both and drops the topic's
//     partitions and configs.
//   - A topic config exists only for a live topic; a config resource with no
//     keys is not in the image; a feature at level 0 is not in the image.
//   - ACL ids and bindings are one-to-one, and the acl.Index holds exactly
//     the bindings of the ids; a client quota entity with no keys is not
//     in the image; a SCRAM credential is usable by core/sasl (iterations,
//     salt and key sizes in bounds).
//   - SnapshotRecords(img) replayed onto the empty image gives an image equal
//     to img.
//
// # What it never does
//
// Like all of core it starts no goroutines, reads no clock, draws no
// randomness and does no I/O: it turns records into images and back.
// It never panics on input: decoding bad bytes returns ErrCorrupt,
// ErrUnknownRecordType or ErrUnsupportedVersion, and replaying a bad record
// returns a *ReplayError. It does not decide anything (placement, elections,
// fencing are core/controller's) and does not know about batches or the log
// (the quorum puts one encoded record in each Kafka record value).
package meta
