package acl

import (
	"slices"

	iradix "github.com/hashicorp/go-immutable-radix/v2"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Index is an immutable set of valid bindings, indexed for authorization.
// Add and Remove return a new Index that shares what did not change with the
// old one, which stays valid: the metadata image can hold an Index, derive
// its successor from a delta, and let readers keep the one they have. The
// zero Index is empty and ready to use.
//
// Bindings live in a persistent radix tree keyed by resource type, pattern
// type and resource name; each key holds the bindings of that resource
// pattern, sorted by Compare. A lookup for a resource name reads at most two
// LITERAL keys (the name and Wildcard) and walks the PREFIXED keys along
// the name's path, so its cost grows with the name's length and the ACLs on
// the resource, never with the number of ACLs.
type Index struct {
	tree *iradix.Tree[[]Binding]
	size int
}

// emptyTree is the tree of the zero Index; trees are immutable, so sharing
// it is safe.
var emptyTree = iradix.New[[]Binding]()

func (ix Index) root() *iradix.Tree[[]Binding] {
	if ix.tree == nil {
		return emptyTree
	}
	return ix.tree
}

// Len is the number of bindings in ix.
func (ix Index) Len() int { return ix.size }

// resourceKey is the tree key of a resource pattern: its type, its pattern
// type, then its name.
func resourceKey(t kmsg.ACLResourceType, p kmsg.ACLResourcePatternType, name string) []byte {
	k := make([]byte, 0, 2+len(name))
	k = append(k, byte(t), byte(p))
	return append(k, name...)
}

// Add returns ix with bs added. Every binding must be valid (see
// Binding.Validate); if one is not, Add returns ix unchanged and the first
// binding's error. A binding already present is not added twice.
func (ix Index) Add(bs ...Binding) (Index, error) {
	for _, b := range bs {
		if err := b.Validate(); err != nil {
			return ix, err
		}
	}
	txn := ix.root().Txn()
	size := ix.size
	for _, b := range bs {
		k := resourceKey(b.ResourceType, b.PatternType, b.ResourceName)
		cur, _ := txn.Get(k)
		i, found := slices.BinarySearchFunc(cur, b, compareEntry)
		if found {
			continue
		}
		txn.Insert(k, slices.Insert(slices.Clip(cur), i, b))
		size++
	}
	return Index{tree: txn.CommitOnly(), size: size}, nil
}

// Remove returns ix without bs. A binding that is absent is passed over.
func (ix Index) Remove(bs ...Binding) Index {
	txn := ix.root().Txn()
	size := ix.size
	for _, b := range bs {
		k := resourceKey(b.ResourceType, b.PatternType, b.ResourceName)
		cur, _ := txn.Get(k)
		i, found := slices.BinarySearchFunc(cur, b, compareEntry)
		if !found {
			continue
		}
		if len(cur) == 1 {
			txn.Delete(k)
		} else {
			txn.Insert(k, slices.Delete(slices.Clone(cur), i, i+1))
		}
		size--
	}
	if size == ix.size {
		return ix
	}
	return Index{tree: txn.CommitOnly(), size: size}
}

// Matching returns the bindings f selects, ordered by Compare, for
// DescribeAcls and for DeleteAcls (which then removes them). The error, for
// an invalid filter, wraps kerr.InvalidRequest.
func (ix Index) Matching(f Filter) ([]Binding, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var out []Binding
	collect := func(bs []Binding) bool {
		for _, b := range bs {
			if f.matchesPattern(b) && f.matchesEntry(b) {
				out = append(out, b)
			}
		}
		return false
	}
	walk := func(_ []byte, bs []Binding) bool { return collect(bs) }
	root := ix.root().Root()
	concreteType := concreteResourceType(f.ResourceType)
	concretePattern := f.PatternType == kmsg.ACLResourcePatternTypeLiteral ||
		f.PatternType == kmsg.ACLResourcePatternTypePrefixed
	switch {
	case concreteType && f.ResourceName != nil && f.PatternType == kmsg.ACLResourcePatternTypeMatch:
		ix.applicable(f.ResourceType, *f.ResourceName, collect)
	case concreteType && concretePattern && f.ResourceName != nil:
		bs, _ := root.Get(resourceKey(f.ResourceType, f.PatternType, *f.ResourceName))
		collect(bs)
	case concreteType && concretePattern:
		root.WalkPrefix(resourceKey(f.ResourceType, f.PatternType, ""), walk)
	case concreteType:
		root.WalkPrefix([]byte{byte(f.ResourceType)}, walk)
	default:
		root.Walk(walk)
	}
	slices.SortFunc(out, Compare)
	return out, nil
}

// applicable calls visit with the bindings of each resource pattern that
// applies to the resource t:name, in Compare's order of patterns: LITERAL
// Wildcard and LITERAL name (whichever sorts first), then each PREFIXED
// prefix of name from the shortest. It stops when visit returns true.
func (ix Index) applicable(t kmsg.ACLResourceType, name string, visit func([]Binding) bool) {
	root := ix.root().Root()
	literals := []string{name}
	switch {
	case name < Wildcard:
		literals = append(literals, Wildcard)
	case name > Wildcard:
		literals = []string{Wildcard, name}
	}
	for _, n := range literals {
		if bs, ok := root.Get(resourceKey(t, kmsg.ACLResourcePatternTypeLiteral, n)); ok && visit(bs) {
			return
		}
	}
	// The path visits the keys that are prefixes of the full key; every
	// PREFIXED key has a non-empty name, so these are exactly the PREFIXED
	// patterns whose name is a prefix of name (or name itself).
	root.WalkPath(resourceKey(t, kmsg.ACLResourcePatternTypePrefixed, name), func(_ []byte, bs []Binding) bool {
		return visit(bs)
	})
}
