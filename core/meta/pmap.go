package meta

// pmap is a persistent ordered map: an AVL tree whose updates copy only the
// path from the root to the changed node (O(log n) new nodes) and share every
// other node with the tree they came from. It is what lets an Image derive its
// successor without copying the cluster: two images share all topics,
// brokers and config resources that a delta did not touch. A pmap value is
// immutable; set and delete return a new one. The zero pmap is not usable:
// build one with newPmap, which fixes the key order.
type pmap[K, V any] struct {
	root *pnode[K, V]
	size int
	cmp  func(a, b K) int
}

type pnode[K, V any] struct {
	key         K
	val         V
	left, right *pnode[K, V]
	height      int8
}

func newPmap[K, V any](cmp func(a, b K) int) pmap[K, V] {
	return pmap[K, V]{cmp: cmp}
}

// len is the number of entries.
func (m pmap[K, V]) len() int { return m.size }

// get returns the value for k.
func (m pmap[K, V]) get(k K) (V, bool) {
	n := m.root
	for n != nil {
		switch c := m.cmp(k, n.key); {
		case c < 0:
			n = n.left
		case c > 0:
			n = n.right
		default:
			return n.val, true
		}
	}
	var zero V
	return zero, false
}

// set returns a map with k bound to v.
func (m pmap[K, V]) set(k K, v V) pmap[K, V] {
	root, added := m.insert(m.root, k, v)
	m.root = root
	if added {
		m.size++
	}
	return m
}

// delete returns a map without k (the same map if k is absent).
func (m pmap[K, V]) delete(k K) pmap[K, V] {
	root, removed := m.remove(m.root, k)
	if !removed {
		return m
	}
	m.root = root
	m.size--
	return m
}

// all yields the entries in ascending key order.
func (m pmap[K, V]) all(yield func(K, V) bool) {
	ascend(m.root, yield)
}

func ascend[K, V any](n *pnode[K, V], yield func(K, V) bool) bool {
	for n != nil {
		if !ascend(n.left, yield) || !yield(n.key, n.val) {
			return false
		}
		n = n.right
	}
	return true
}

func (m pmap[K, V]) insert(n *pnode[K, V], k K, v V) (*pnode[K, V], bool) {
	if n == nil {
		return node(k, v, nil, nil), true
	}
	switch c := m.cmp(k, n.key); {
	case c < 0:
		left, added := m.insert(n.left, k, v)
		return rebalance(n.key, n.val, left, n.right), added
	case c > 0:
		right, added := m.insert(n.right, k, v)
		return rebalance(n.key, n.val, n.left, right), added
	default:
		return node(k, v, n.left, n.right), false
	}
}

func (m pmap[K, V]) remove(n *pnode[K, V], k K) (*pnode[K, V], bool) {
	if n == nil {
		return nil, false
	}
	switch c := m.cmp(k, n.key); {
	case c < 0:
		left, removed := m.remove(n.left, k)
		if !removed {
			return n, false
		}
		return rebalance(n.key, n.val, left, n.right), true
	case c > 0:
		right, removed := m.remove(n.right, k)
		if !removed {
			return n, false
		}
		return rebalance(n.key, n.val, n.left, right), true
	}
	if n.left == nil {
		return n.right, true
	}
	if n.right == nil {
		return n.left, true
	}
	successor := n.right
	for successor.left != nil {
		successor = successor.left
	}
	right := removeMin(n.right)
	return rebalance(successor.key, successor.val, n.left, right), true
}

func removeMin[K, V any](n *pnode[K, V]) *pnode[K, V] {
	if n.left == nil {
		return n.right
	}
	return rebalance(n.key, n.val, removeMin(n.left), n.right)
}

func height[K, V any](n *pnode[K, V]) int8 {
	if n == nil {
		return 0
	}
	return n.height
}

func node[K, V any](k K, v V, left, right *pnode[K, V]) *pnode[K, V] {
	return &pnode[K, V]{key: k, val: v, left: left, right: right, height: max(height(left), height(right)) + 1}
}

// rebalance builds a node from k, v and two subtrees whose heights differ by
// at most two, rotating so that they differ by at most one.
func rebalance[K, V any](k K, v V, left, right *pnode[K, V]) *pnode[K, V] {
	hl, hr := height(left), height(right)
	switch {
	case hl > hr+1:
		if height(left.left) >= height(left.right) {
			return node(left.key, left.val, left.left, node(k, v, left.right, right))
		}
		lr := left.right
		return node(lr.key, lr.val, node(left.key, left.val, left.left, lr.left), node(k, v, lr.right, right))
	case hr > hl+1:
		if height(right.right) >= height(right.left) {
			return node(right.key, right.val, node(k, v, left, right.left), right.right)
		}
		rl := right.left
		return node(rl.key, rl.val, node(k, v, left, rl.left), node(right.key, right.val, rl.right, right.right))
	}
	return node(k, v, left, right)
}
