package versionstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
)

// Intermediate trees.
//
// A round of group commit applies many commits to one branch, each with its
// own tree, but only the tree of the round's last commit is persisted: the
// nodes the earlier commits made and the last one no longer uses are left
// out of the batch. That is about a third of the bytes every commit would
// otherwise write. An intermediate tree is still fully determined by stored
// data, because a commit's tree is its first parent's tree with the
// commit's operations applied, and the tree of a key set does not depend on
// the order it was built in. Reading one means rebuilding it from the
// nearest ancestor whose tree is persisted, which the store does on demand
// and verifies against the commit's tree hash.
//
// The invariant that makes this sound: a persisted node's whole subtree is
// persisted. A round keeps it by persisting every node of its last tree
// that it made, and by first copying into itself the nodes of any tree it
// builds on that is not persisted (adopt).
//
// Recent rounds register the nodes they did not persist, so that reads of
// their commits, such as the expected-hash check of a client that sends
// the hash of its own last commit, need no rebuild.

// maxRebuild bounds the commits replayed to rebuild one tree. A round
// holds at most MaxGroup commits, so real chains are short; a longer one
// means a corrupt store.
const maxRebuild = 1 << 16

// Bounds of the registry of unpersisted trees and of the set of roots
// known to be persisted.
const (
	maxRegisteredNodes = 1 << 14 // ~16 MiB of nodes
	maxPersistedRoots  = 1 << 12
)

// nodeSet holds the unpersisted nodes of one or more trees; it is never
// changed once registered.
type nodeSet struct {
	nodes map[Hash]*node
}

// setSource reads a tree from set, falling back to next for the nodes that
// are persisted.
type setSource struct {
	set  *nodeSet
	next nodeSource
}

func (s setSource) node(ctx context.Context, h Hash) (*node, error) {
	if n, ok := s.set.nodes[h]; ok {
		return n, nil
	}
	return s.next.node(ctx, h)
}

// treeRegistry remembers unpersisted trees of recent rounds and of
// rebuilds, and roots known to be persisted, each bounded first in first
// out.
type treeRegistry struct {
	mu        sync.Mutex
	byRoot    map[Hash]registration
	fifo      []registered
	gen       uint64
	nodes     int
	persisted map[Hash]struct{}
	pfifo     []Hash
}

type registration struct {
	set *nodeSet
	gen uint64
}

type registered struct {
	roots []Hash
	size  int
	gen   uint64
}

func newTreeRegistry() *treeRegistry {
	return &treeRegistry{byRoot: map[Hash]registration{}, persisted: map[Hash]struct{}{}}
}

func (r *treeRegistry) lookup(root Hash) *nodeSet {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byRoot[root].set
}

func (r *treeRegistry) register(roots []Hash, set *nodeSet) {
	if len(roots) == 0 || len(set.nodes) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	for _, root := range roots {
		r.byRoot[root] = registration{set: set, gen: r.gen}
	}
	r.fifo = append(r.fifo, registered{roots: roots, size: len(set.nodes), gen: r.gen})
	r.nodes += len(set.nodes)
	for r.nodes > maxRegisteredNodes && len(r.fifo) > 1 {
		old := r.fifo[0]
		r.fifo = r.fifo[1:]
		r.nodes -= old.size
		for _, root := range old.roots {
			// A later registration of the same root keeps its own set.
			if r.byRoot[root].gen == old.gen {
				delete(r.byRoot, root)
			}
		}
	}
}

func (r *treeRegistry) isPersisted(root Hash) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.persisted[root]
	return ok
}

func (r *treeRegistry) markPersisted(root Hash) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.persisted[root]; ok {
		return
	}
	r.persisted[root] = struct{}{}
	r.pfifo = append(r.pfifo, root)
	if len(r.pfifo) > maxPersistedRoots {
		delete(r.persisted, r.pfifo[0])
		r.pfifo = r.pfifo[1:]
	}
}

// persisted reports whether root is a persisted node, and so a complete
// persisted tree.
func (s *Store) persisted(ctx context.Context, root Hash) (bool, error) {
	if root == emptyTree || s.trees.isPersisted(root) {
		return true, nil
	}
	ok, err := s.be.HasObject(ctx, root)
	if err != nil {
		return false, fmt.Errorf("look up tree %s: %w", root, err)
	}
	if ok {
		s.trees.markPersisted(root)
	}
	return ok, nil
}

// treeSource returns a source from which every node of c's tree can be
// read, reading persisted nodes through src.
func (s *Store) treeSource(ctx context.Context, c *Commit, src objectSource) (nodeSource, error) {
	if r, ok, err := s.readable(ctx, c.Tree, src); ok || err != nil {
		return r, err
	}
	set, err := s.rebuild(ctx, c, src)
	if err != nil {
		return nil, err
	}
	return setSource{set: set, next: src}, nil
}

// readable returns a source for the tree at root, if it can be read
// without a rebuild: it is empty, made by a round in memory (whose
// overlays hold every node it made), registered, or persisted.
func (s *Store) readable(ctx context.Context, root Hash, src objectSource) (nodeSource, bool, error) {
	if o, ok := src.(*overlay); ok {
		if _, found := o.find(root); found {
			return src, true, nil
		}
	}
	if set := s.trees.lookup(root); set != nil {
		return setSource{set: set, next: src}, true, nil
	}
	ok, err := s.persisted(ctx, root)
	if err != nil || !ok {
		return nil, false, err
	}
	return src, true, nil
}

// bothTrees is treeSource for two commits' trees at once, for diffs.
func (s *Store) bothTrees(ctx context.Context, a, b *Commit, src objectSource) (nodeSource, error) {
	sa, err := s.treeSource(ctx, a, src)
	if err != nil {
		return nil, err
	}
	sb, err := s.treeSource(ctx, b, src)
	if err != nil {
		return nil, err
	}
	switch {
	case sa == nodeSource(src):
		return sb, nil
	case sb == nodeSource(src):
		return sa, nil
	}
	// Both rebuilt or registered: read a's set, then b's, then src.
	return setSource{set: sa.(setSource).set, next: sb}, nil
}

// rebuild recomputes c's tree from the nearest first-parent ancestor whose
// tree is readable, checks it against c's tree hash, and registers the
// nodes it made when they and the persisted nodes hold the whole tree.
func (s *Store) rebuild(ctx context.Context, c *Commit, src objectSource) (*nodeSet, error) {
	var chain []*Commit
	x := c
	var base nodeSource
	// standalone is false when the base tree is read from a round that is
	// not durable, whose nodes may never be (a failed or unchanged write):
	// a set built on it holds only what the rebuild made, so it serves
	// this caller through src but is not registered for later reads.
	standalone := true
	for {
		r, ok, err := s.readable(ctx, x.Tree, src)
		if err != nil {
			return nil, err
		}
		if ok {
			base = r
			if o, isOverlay := src.(*overlay); isOverlay && r == nodeSource(src) {
				_, inRound := o.find(x.Tree)
				standalone = !inRound
			}
			break
		}
		if len(chain) == maxRebuild {
			return nil, fmt.Errorf("%w: tree %s of commit %s: no persisted tree within %d first parents", ErrCorrupt, c.Tree, c.Hash, maxRebuild)
		}
		chain = append(chain, x)
		if len(x.Parents) == 0 || x.Parent() == NoAncestor {
			// A branch's first commit: its parent's tree is the empty one.
			x, base = noAncestorCommit, src
			break
		}
		p, err := src.commit(ctx, x.Parent())
		if err != nil {
			return nil, fmt.Errorf("rebuild tree of commit %s: %w", c.Hash, err)
		}
		x = p
	}
	mem := &rebuildNodes{made: map[Hash]*node{}, next: base}
	if ss, ok := base.(setSource); ok {
		// The new set must stand alone: take the base set's nodes too.
		for h, n := range ss.set.nodes {
			mem.made[h] = n
		}
	}
	// One edit with every key's last change since x gives c's tree, the
	// tree of a key set being independent of how it was built; that is
	// far cheaper than one edit per replayed commit.
	last := make(map[string]int)
	var muts []mutation
	for i := len(chain) - 1; i >= 0; i-- {
		for _, m := range opsToMutations(chain[i].Operations) {
			if j, seen := last[string(m.key)]; seen {
				muts[j] = m
				continue
			}
			last[string(m.key)] = len(muts)
			muts = append(muts, m)
		}
	}
	slices.SortFunc(muts, func(a, b mutation) int { return bytes.Compare(a.key, b.key) })
	root, err := editTree(ctx, mem, x.Tree, muts)
	if err != nil {
		return nil, fmt.Errorf("rebuild tree of commit %s: %w", c.Hash, err)
	}
	if root != c.Tree {
		return nil, fmt.Errorf("%w: commit %s: the operations of the %d commits since tree %s give tree %s, not its tree %s",
			ErrCorrupt, c.Hash, len(chain), x.Tree, root, c.Tree)
	}
	set := &nodeSet{nodes: mem.made}
	if standalone {
		s.trees.register([]Hash{c.Tree}, set)
	}
	s.stats.TreesRebuilt.Add(1)
	return set, nil
}

// opsToMutations turns stored operations (puts and deletes) into the tree
// edit they make, in the same order.
func opsToMutations(ops []CommitOp) []mutation {
	muts := make([]mutation, len(ops))
	for i, op := range ops {
		muts[i] = mutation{key: op.Key.Encode(), value: op.Value, del: op.Kind == OpDelete}
	}
	return muts
}

// rebuildNodes is the node store of a rebuild: new nodes stay in memory.
type rebuildNodes struct {
	made map[Hash]*node
	next nodeSource
}

func (m *rebuildNodes) node(ctx context.Context, h Hash) (*node, error) {
	if n, ok := m.made[h]; ok {
		return n, nil
	}
	return m.next.node(ctx, h)
}

func (m *rebuildNodes) putNode(n *node) Hash {
	n.size = nodeFootprint(len(n.keyBuf), n.len())
	h := hashOf(encodeNode(n))
	if _, ok := m.made[h]; !ok {
		m.made[h] = n
	}
	return h
}

// loadHead loads the branch head a write builds on and adopts its tree.
func (t *refTxn) loadHead(ctx context.Context, h Hash) (*Commit, error) {
	c, err := t.ov.commit(ctx, h)
	if err != nil {
		return nil, err
	}
	if err := t.adopt(ctx, c); err != nil {
		return nil, fmt.Errorf("tree of head %s: %w", h, err)
	}
	return c, nil
}

// adopt makes the round able to build on c's tree: if that tree is not
// persisted, its unpersisted nodes are copied into the round's overlay, so
// that the round persists those its last tree keeps.
func (t *refTxn) adopt(ctx context.Context, c *Commit) error {
	o := t.ov
	if c.Tree == emptyTree {
		return nil
	}
	if _, own := o.objs[c.Tree]; own {
		return nil
	}
	var set *nodeSet
	if _, kept, found := o.inFlight(c.Tree); found {
		if kept {
			return nil
		}
	} else {
		ok, err := t.s.persisted(ctx, c.Tree)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if set = t.s.trees.lookup(c.Tree); set == nil {
			if set, err = t.s.rebuild(ctx, c, o); err != nil {
				return err
			}
		}
	}
	stack := []Hash{c.Tree}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, own := o.objs[h]; own {
			continue
		}
		var n *node
		if p, kept, found := o.inFlight(h); found {
			if kept {
				continue
			}
			n, _ = p.val.(*node)
		} else if set != nil {
			n = set.nodes[h]
		}
		if n == nil {
			continue // persisted
		}
		o.putEncoded(encodeNode(n), h, n)
		if n.level > 0 {
			stack = append(stack, n.hashes...)
		}
	}
	return nil
}

// inFlight finds h among the objects of the rounds in flight below this
// one and says whether that round persists it.
func (o *overlay) inFlight(h Hash) (p pendingObject, kept, found bool) {
	for x := o.parent; x != nil; x = x.parent {
		if p, ok := x.objs[h]; ok {
			return p, !x.unpersisted(h, p), true
		}
	}
	return pendingObject{}, false, false
}

// unpersisted reports whether the round leaves h out of its batch: a node
// of an intermediate tree only. Before seal, nothing is left out.
func (o *overlay) unpersisted(h Hash, p pendingObject) bool {
	return o.sealed && isNode(p) && !o.kept[h]
}

func isNode(p pendingObject) bool {
	_, ok := p.val.(*node)
	return ok
}

// seal decides, before the round is written, which of its nodes the batch
// persists: those of the tree of the round's last head, when the round
// made or adopted them. Nodes it reaches that are not the round's own are
// persisted already (see adopt).
func (p *preparedRound) seal() {
	o := p.ov
	o.kept = make(map[Hash]bool, len(o.order)/2)
	o.sealed = true
	if p.cur == nil {
		return
	}
	v, ok := o.objs[p.cur.Head]
	if !ok {
		return
	}
	c, ok := v.val.(*Commit)
	if !ok {
		return
	}
	stack := []Hash{c.Tree}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		po, ok := o.objs[h]
		if !ok || o.kept[h] {
			continue
		}
		n, ok := po.val.(*node)
		if !ok {
			continue
		}
		o.kept[h] = true
		if n.level > 0 {
			stack = append(stack, n.hashes...)
		}
	}
}

// registerUnpersisted, once the round is durable, registers the trees of
// its commits that it did not persist, and the root it did.
func (o *overlay) registerUnpersisted() {
	var set *nodeSet
	var roots []Hash
	for _, h := range o.order {
		p := o.objs[h]
		c, ok := p.val.(*Commit)
		if !ok {
			continue
		}
		if o.kept[c.Tree] {
			o.store.trees.markPersisted(c.Tree)
			continue
		}
		if _, made := o.objs[c.Tree]; !made {
			continue // the tree of an earlier round, registered then
		}
		if set == nil {
			set = &nodeSet{nodes: make(map[Hash]*node, len(o.order))}
			for _, nh := range o.order {
				if p := o.objs[nh]; o.unpersisted(nh, p) {
					set.nodes[nh] = p.val.(*node)
				}
			}
		}
		roots = append(roots, c.Tree)
	}
	if set != nil {
		o.store.trees.register(roots, set)
	}
}
