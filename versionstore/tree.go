package versionstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
)

// nodeSource reads tree nodes: the store's cache and backend, possibly
// overlaid with nodes not yet durable.
type nodeSource interface {
	node(ctx context.Context, h Hash) (*node, error)
}

// nodeStore also accepts the new nodes of an edit, which it must serve to
// later reads.
type nodeStore interface {
	nodeSource
	putNode(n *node) Hash
}

// lookup returns the value hash stored under key, if any.
func lookup(ctx context.Context, src nodeSource, root Hash, key []byte) (Hash, bool, error) {
	if root == emptyTree {
		return Hash{}, false, nil
	}
	h := root
	for {
		n, err := src.node(ctx, h)
		if err != nil {
			return Hash{}, false, err
		}
		i := n.search(key)
		if i == len(n.keys) {
			return Hash{}, false, nil
		}
		if n.level == 0 {
			if bytes.Equal(n.keys[i], key) {
				return n.hashes[i], true, nil
			}
			return Hash{}, false, nil
		}
		h = n.hashes[i]
	}
}

// mutation sets (or, with del, removes) one entry at some level of an edit.
type mutation struct {
	key   []byte
	value Hash
	del   bool
}

// editTree applies mutations, sorted by key with no duplicates, to the tree
// at root and returns the new root.
//
// The tree is a Merkle search tree: at level L the entries are cut into
// nodes after every entry whose key has keyLevel > L, and level L+1 holds
// one entry (last key, node hash) per level-L node. The edit works level by
// level: it re-cuts only the nodes that hold a mutated key (plus the right
// neighbour of a node that lost its boundary key, since the two now form one
// node), and turns the replaced and new nodes into the mutations of the
// level above. Untouched nodes are shared with the old tree.
func editTree(ctx context.Context, ns nodeStore, root Hash, muts []mutation) (Hash, error) {
	if len(muts) == 0 {
		return root, nil
	}
	height := -1 // level of the old root; -1 for an empty tree
	var rootNode located
	if root != emptyTree {
		n, err := ns.node(ctx, root)
		if err != nil {
			return Hash{}, err
		}
		rootNode, height = located{n: n, hash: root}, n.level
	}
	for level := 0; ; level++ {
		if level > height {
			// No old nodes here: the puts are the whole level.
			var entries []mutation
			for _, m := range muts {
				if !m.del {
					entries = append(entries, m)
				}
			}
			return buildUp(ns, level, entries), nil
		}
		affected, err := affectedNodes(ctx, ns, rootNode, level, muts)
		if err != nil {
			return Hash{}, err
		}
		chunks := chunk(mergeEntries(affected, muts), level)
		top := make([]mutation, len(chunks))
		next := make(map[string]mutation, len(affected)+len(chunks))
		for _, a := range affected {
			k := a.n.lastKey()
			next[string(k)] = mutation{key: k, del: true}
		}
		for i, c := range chunks {
			h := ns.putNode(c)
			k := c.lastKey()
			top[i] = mutation{key: k, value: h}
			if old, ok := next[string(k)]; ok && old.del && containsNode(affected, h) {
				delete(next, string(k)) // an unchanged node changes nothing above
				continue
			}
			next[string(k)] = mutation{key: k, value: h}
		}
		if len(next) == 0 {
			return root, nil
		}
		if level == height {
			// The old root was the only node at this level, so the new
			// chunks are the whole level.
			return buildUpFromNodes(ctx, ns, level+1, top)
		}
		muts = sortedMutations(next)
	}
}

type located struct {
	n    *node
	hash Hash
}

func containsNode(ls []located, h Hash) bool {
	for _, l := range ls {
		if l.hash == h {
			return true
		}
	}
	return false
}

// affectedNodes finds, in key order, the old nodes at level that the
// mutations touch, closed under "a node whose last key is deleted pulls in
// its right neighbour".
func affectedNodes(ctx context.Context, src nodeSource, root located, level int, muts []mutation) ([]located, error) {
	byLast := map[string]located{}
	deleted := map[string]bool{}
	for _, m := range muts {
		if m.del {
			deleted[string(m.key)] = true
		}
	}
	var queue []located
	add := func(l located) {
		if _, ok := byLast[string(l.n.lastKey())]; !ok {
			byLast[string(l.n.lastKey())] = l
			queue = append(queue, l)
		}
	}
	for _, m := range muts {
		l, ok, err := nodeAt(ctx, src, root, level, m.key, false)
		if err != nil {
			return nil, err
		}
		if !ok {
			l, err = lastNodeAt(ctx, src, root, level)
			if err != nil {
				return nil, err
			}
		}
		add(l)
	}
	for len(queue) > 0 {
		l := queue[0]
		queue = queue[1:]
		last := l.n.lastKey()
		if !deleted[string(last)] {
			continue
		}
		succ, ok, err := nodeAt(ctx, src, root, level, last, true)
		if err != nil {
			return nil, err
		}
		if ok {
			add(succ)
		}
	}
	out := make([]located, 0, len(byLast))
	for _, l := range byLast {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b located) int { return bytes.Compare(a.n.lastKey(), b.n.lastKey()) })
	return out, nil
}

// nodeAt descends from root to the node at level covering key: the first
// node whose last key is >= key (> key when strict). ok is false when key is
// past the last node.
func nodeAt(ctx context.Context, src nodeSource, root located, level int, key []byte, strict bool) (located, bool, error) {
	n, h := root.n, root.hash
	for {
		if n.level == level {
			return located{n: n, hash: h}, true, nil
		}
		i := n.search(key)
		if strict && i < len(n.keys) && bytes.Equal(n.keys[i], key) {
			i++
		}
		if i == len(n.keys) {
			return located{}, false, nil
		}
		h = n.hashes[i]
		child, err := src.node(ctx, h)
		if err != nil {
			return located{}, false, err
		}
		if child.level != n.level-1 {
			return located{}, false, fmt.Errorf("%w: node %s at level %d under level %d", ErrCorrupt, h, child.level, n.level)
		}
		n = child
	}
}

func lastNodeAt(ctx context.Context, src nodeSource, root located, level int) (located, error) {
	n, h := root.n, root.hash
	for n.level > level {
		h = n.hashes[len(n.hashes)-1]
		child, err := src.node(ctx, h)
		if err != nil {
			return located{}, err
		}
		if child.level != n.level-1 {
			return located{}, fmt.Errorf("%w: node %s at level %d under level %d", ErrCorrupt, h, child.level, n.level)
		}
		n = child
	}
	return located{n: n, hash: h}, nil
}

// mergeEntries merges the entries of the affected nodes with the mutations.
func mergeEntries(affected []located, muts []mutation) []mutation {
	n := len(muts)
	for _, l := range affected {
		n += len(l.n.keys)
	}
	out := make([]mutation, 0, n)
	j := 0
	for _, l := range affected {
		for i, k := range l.n.keys {
			for j < len(muts) && bytes.Compare(muts[j].key, k) < 0 {
				if !muts[j].del {
					out = append(out, muts[j])
				}
				j++
			}
			if j < len(muts) && bytes.Equal(muts[j].key, k) {
				if !muts[j].del { // the mutation wins over the old entry
					out = append(out, muts[j])
				}
				j++
				continue
			}
			out = append(out, mutation{key: k, value: l.n.hashes[i]})
		}
	}
	for ; j < len(muts); j++ {
		if !muts[j].del {
			out = append(out, muts[j])
		}
	}
	return out
}

// chunk cuts sorted entries into nodes of the given level.
func chunk(entries []mutation, level int) []*node {
	var out []*node
	start := 0
	for i, e := range entries {
		if isBoundary(e.key, level) || i == len(entries)-1 {
			n := &node{level: level, keys: make([][]byte, i+1-start), hashes: make([]Hash, i+1-start)}
			for j, e := range entries[start : i+1] {
				n.keys[j], n.hashes[j] = e.key, e.value
			}
			out = append(out, n)
			start = i + 1
		}
	}
	return out
}

// buildUp builds the levels from level upward over entries that are the
// complete contents of that level, and returns the root.
func buildUp(sink nodeStore, level int, entries []mutation) Hash {
	for {
		if len(entries) == 0 {
			return emptyTree
		}
		chunks := chunk(entries, level)
		if len(chunks) == 1 {
			return collapseRoot(chunks[0], sink)
		}
		entries = entries[:0:0]
		for _, c := range chunks {
			entries = append(entries, mutation{key: c.lastKey(), value: sink.putNode(c)})
		}
		level++
	}
}

// buildUpFromNodes is buildUp for a level whose entries point at nodes that
// may need collapsing when the level holds only one of them.
func buildUpFromNodes(ctx context.Context, ns nodeStore, level int, entries []mutation) (Hash, error) {
	if len(entries) == 0 {
		return emptyTree, nil
	}
	if len(entries) == 1 {
		// One node below: it is the root, unless it is itself an internal
		// node with one child.
		h := entries[0].value
		for {
			n, err := ns.node(ctx, h)
			if err != nil {
				return Hash{}, err
			}
			if n.level == 0 || len(n.keys) > 1 {
				return h, nil
			}
			h = n.hashes[0]
		}
	}
	return buildUp(ns, level, entries), nil
}

// collapseRoot stores n as the root, unless n is an internal node with a
// single child, in which case that child (already stored) is the root.
func collapseRoot(n *node, sink nodeStore) Hash {
	if n.level > 0 && len(n.keys) == 1 {
		return n.hashes[0]
	}
	return sink.putNode(n)
}

func sortedMutations(m map[string]mutation) []mutation {
	out := make([]mutation, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b mutation) int { return bytes.Compare(a.key, b.key) })
	return out
}
