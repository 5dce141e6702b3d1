package meta

import (
	"fmt"
	"slices"
)

// Equal reports whether two images hold the same metadata at the same
// position. It compares content, never the shape of the internal trees, so
// images built by different record groupings (one delta per record, one for
// all, a snapshot load) compare equal when they should.
func Equal(a, b *Image) bool { return len(diff(a, b, 1)) == 0 }

// Diff describes the differences between two images, in a deterministic
// order, up to maxDiffs of them; nil when they are equal. Tests and the
// simulator print it when images that should agree do not.
func Diff(a, b *Image) []string { return diff(a, b, maxDiffs) }

// maxDiffs bounds the differences Diff reports.
const maxDiffs = 20

func diff(a, b *Image, limit int) []string {
	var out []string
	add := func(format string, args ...any) bool {
		out = append(out, fmt.Sprintf(format, args...))
		return len(out) < limit
	}
	if a.position != b.position && !add("position %v != %v", a.position, b.position) {
		return out
	}
	if a.producerIDs != b.producerIDs && !add("producer ids %+v != %+v", a.producerIDs, b.producerIDs) {
		return out
	}
	if !diffMaps(a.features, b.features, func(x, y int16) bool { return x == y }, describeValues, "feature", add) {
		return out
	}
	if !diffMaps(a.brokers, b.brokers, (*BrokerRegistration).equal, describeBrokers, "broker", add) {
		return out
	}
	if !diffMaps(a.names, b.names, func(x, y UUID) bool { return x == y }, describeValues, "topic name", add) {
		return out
	}
	if !diffMaps(a.topics, b.topics, topicsEqual, describeTopics, "topic", add) {
		return out
	}
	if !diffMaps(a.configs, b.configs, func(x, y *configImage) bool { return slices.Equal(x.entries, y.entries) },
		func(x, y *configImage) string { return describeValues(x.entries, y.entries) }, "config", add) {
		return out
	}
	diffSecurity(a, b, add)
	return out
}

// diffMaps walks two ordered maps in step and reports keys present in one
// only and values that differ. It returns false once add says to stop.
func diffMaps[K, V any](a, b pmap[K, V], equal func(V, V) bool, describe func(V, V) string, what string, add func(string, ...any) bool) bool {
	type entry struct {
		k K
		v V
	}
	collect := func(m pmap[K, V]) []entry {
		out := make([]entry, 0, m.len())
		m.all(func(k K, v V) bool {
			out = append(out, entry{k, v})
			return true
		})
		return out
	}
	if a.root == b.root {
		return true
	}
	ea, eb := collect(a), collect(b)
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var c int
		switch {
		case i == len(ea):
			c = 1
		case j == len(eb):
			c = -1
		default:
			c = a.cmp(ea[i].k, eb[j].k)
		}
		ok := true
		switch {
		case c < 0:
			ok = add("%s %v only in the first image", what, ea[i].k)
			i++
		case c > 0:
			ok = add("%s %v only in the second image", what, eb[j].k)
			j++
		default:
			if !equal(ea[i].v, eb[j].v) {
				ok = add("%s %v differs: %s", what, ea[i].k, describe(ea[i].v, eb[j].v))
			}
			i++
			j++
		}
		if !ok {
			return false
		}
	}
	return true
}

// describeValues renders two differing plain values.
func describeValues[V any](a, b V) string { return fmt.Sprintf("%v != %v", a, b) }

// describeBrokers renders two differing registrations without pointers.
func describeBrokers(a, b *BrokerRegistration) string {
	return a.record().String() + " != " + b.record().String()
}

// describeTopics names what differs between two versions of a topic: its
// name, or its partitions, one by one.
func describeTopics(a, b *TopicImage) string {
	if a.name != b.name {
		return fmt.Sprintf("name %q != %q", a.name, b.name)
	}
	s := ""
	for _, p := range a.partitions {
		q := b.partition(p.ID)
		switch {
		case q == nil:
			s += fmt.Sprintf("; partition %d only in the first image", p.ID)
		case !p.equal(q):
			s += fmt.Sprintf("; %v != %v", p.record(a.id), q.record(b.id))
		}
	}
	for _, q := range b.partitions {
		if a.partition(q.ID) == nil {
			s += fmt.Sprintf("; partition %d only in the second image", q.ID)
		}
	}
	return s
}

// topicsEqual compares two topics, sharing partitions by pointer when they
// can.
func topicsEqual(a, b *TopicImage) bool {
	if a == b {
		return true
	}
	if a.name != b.name || a.id != b.id || len(a.partitions) != len(b.partitions) {
		return false
	}
	for i, p := range a.partitions {
		if p != b.partitions[i] && !p.equal(b.partitions[i]) {
			return false
		}
	}
	return true
}
