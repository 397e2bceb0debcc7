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
		if i == n.len() {
			return Hash{}, false, nil
		}
		if n.level == 0 {
			if bytes.Equal(n.key(i), key) {
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
//
// Edits run on the committer goroutine for every commit of a group, so the
// level step works on sorted slices, without maps or intermediate copies.
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
		chunks := rechunk(affected, muts, level)
		top := make([]mutation, len(chunks))
		for i, c := range chunks {
			top[i] = mutation{key: c.lastKey(), value: ns.putNode(c)}
		}
		next := levelAbove(affected, top)
		if len(next) == 0 {
			return root, nil
		}
		if level == height {
			// The old root was the only node at this level, so the new
			// chunks are the whole level.
			return buildUpFromNodes(ctx, ns, level+1, top)
		}
		muts = next
	}
}

type located struct {
	n    *node
	hash Hash
}

// levelAbove turns an edit of one level into the mutations of the level
// above: the affected nodes' entries are deleted and the new nodes' entries
// put, both sorted by last key. A new node equal to the old one with the
// same last key changes nothing above and is left out.
func levelAbove(affected []located, top []mutation) []mutation {
	out := make([]mutation, 0, len(affected)+len(top))
	i, j := 0, 0
	for i < len(affected) || j < len(top) {
		var c int
		switch {
		case j == len(top):
			c = -1
		case i == len(affected):
			c = 1
		default:
			c = bytes.Compare(affected[i].n.lastKey(), top[j].key)
		}
		switch {
		case c < 0:
			out = append(out, mutation{key: affected[i].n.lastKey(), del: true})
			i++
		case c > 0:
			out = append(out, top[j])
			j++
		default:
			if affected[i].hash != top[j].value {
				out = append(out, top[j])
			}
			i++
			j++
		}
	}
	return out
}

// affectedNodes finds, in key order, the old nodes at level that the
// mutations touch, closed under "a node whose last key is deleted pulls in
// its right neighbour". Since the mutations are sorted, the nodes covering
// them come in key order too, and a mutation within the node found last
// needs no descent.
func affectedNodes(ctx context.Context, src nodeSource, root located, level int, muts []mutation) ([]located, error) {
	var out []located
	// closeOver appends the right neighbours of the last node found for as
	// long as their last keys are deleted, and reports whether key (nil:
	// none) now falls in the last node.
	closeOver := func(key []byte) (bool, error) {
		for {
			last := out[len(out)-1].n.lastKey()
			if key != nil && bytes.Compare(key, last) <= 0 {
				return true, nil
			}
			if !deletes(muts, last) {
				return false, nil
			}
			succ, ok, err := nodeAt(ctx, src, root, level, last, true)
			if err != nil || !ok || bytes.Compare(succ.n.lastKey(), last) <= 0 {
				// At the root's level there is only the root itself.
				return false, err
			}
			out = append(out, succ)
		}
	}
	for _, m := range muts {
		if len(out) > 0 {
			covered, err := closeOver(m.key)
			if err != nil {
				return nil, err
			}
			if covered {
				continue
			}
		}
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
		if len(out) == 0 || !bytes.Equal(out[len(out)-1].n.lastKey(), l.n.lastKey()) {
			out = append(out, l)
		}
	}
	if len(out) > 0 {
		if _, err := closeOver(nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// deletes reports whether the sorted mutations delete key.
func deletes(muts []mutation, key []byte) bool {
	i, found := slices.BinarySearchFunc(muts, key, func(m mutation, k []byte) int { return bytes.Compare(m.key, k) })
	return found && muts[i].del
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
		if strict && i < n.len() && bytes.Equal(n.key(i), key) {
			i++
		}
		if i == n.len() {
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

// rechunk merges the entries of the affected nodes with the mutations (a
// mutation wins over the old entry with its key) and cuts the result into
// nodes of the given level. The new nodes share their three backing arrays.
//
// An old entry other than its node's last is known not to be a boundary at
// this level (its node would have been cut after it), so only the last
// entries and the mutated keys need keyLevel.
func rechunk(affected []located, muts []mutation, level int) []*node {
	n, size := len(muts), 0
	for _, m := range muts {
		size += len(m.key)
	}
	for _, l := range affected {
		n += l.n.len()
		size += len(l.n.keyBuf)
	}
	b := levelBuilder{keyBuf: make([]byte, 0, size), ends: make([]uint32, 0, n), hashes: make([]Hash, 0, n)}
	j := 0
	for _, l := range affected {
		last := l.n.len() - 1
		for i := range l.n.len() {
			k := l.n.key(i)
			for j < len(muts) && bytes.Compare(muts[j].key, k) < 0 {
				if !muts[j].del {
					b.add(muts[j].key, muts[j].value, isBoundary(muts[j].key, level))
				}
				j++
			}
			if j < len(muts) && bytes.Equal(muts[j].key, k) {
				if !muts[j].del {
					b.add(k, muts[j].value, i == last && isBoundary(k, level))
				}
				j++
				continue
			}
			b.add(k, l.n.hashes[i], i == last && isBoundary(k, level))
		}
	}
	for ; j < len(muts); j++ {
		if !muts[j].del {
			b.add(muts[j].key, muts[j].value, isBoundary(muts[j].key, level))
		}
	}
	return b.nodes(level)
}

// levelBuilder collects the entries of a level's new nodes in shared
// arrays, noting where a node ends.
type levelBuilder struct {
	keyBuf []byte
	ends   []uint32
	hashes []Hash
	cuts   []int // entry count at the end of each node but maybe the last
}

func (b *levelBuilder) add(k []byte, h Hash, boundary bool) {
	b.keyBuf = append(b.keyBuf, k...)
	b.ends = append(b.ends, uint32(len(b.keyBuf)))
	b.hashes = append(b.hashes, h)
	if boundary {
		b.cuts = append(b.cuts, len(b.ends))
	}
}

func (b *levelBuilder) nodes(level int) []*node {
	if len(b.ends) == 0 {
		return nil
	}
	if len(b.cuts) == 0 || b.cuts[len(b.cuts)-1] != len(b.ends) {
		b.cuts = append(b.cuts, len(b.ends))
	}
	out := make([]*node, len(b.cuts))
	nodes := make([]node, len(b.cuts))
	start, keyStart := 0, uint32(0)
	for i, end := range b.cuts {
		keyEnd := b.ends[end-1]
		nd := &nodes[i]
		nd.level = level
		nd.keyBuf = b.keyBuf[keyStart:keyEnd:keyEnd]
		nd.ends = b.ends[start:end:end]
		for e := range nd.ends {
			nd.ends[e] -= keyStart // offsets within the node's own keys
		}
		nd.hashes = b.hashes[start:end:end]
		out[i] = nd
		start, keyStart = end, keyEnd
	}
	return out
}

// chunk cuts sorted entries into nodes of the given level.
func chunk(entries []mutation, level int) []*node {
	var out []*node
	var keys [][]byte
	start := 0
	for i, e := range entries {
		if isBoundary(e.key, level) || i == len(entries)-1 {
			keys = keys[:0]
			hashes := make([]Hash, i+1-start)
			for j, e := range entries[start : i+1] {
				keys = append(keys, e.key)
				hashes[j] = e.value
			}
			out = append(out, newNode(level, keys, hashes))
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
			if n.level == 0 || n.len() > 1 {
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
	if n.level > 0 && n.len() == 1 {
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
