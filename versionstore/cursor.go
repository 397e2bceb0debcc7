package versionstore

import (
	"bytes"
	"context"
	"fmt"
)

// cursor walks a tree in key order. Its top frame may be an internal node,
// standing for a whole subtree not yet read: that lets diff skip subtrees
// whose hashes are equal without loading them.
type cursor struct {
	src   nodeSource
	stack []frame
}

type frame struct {
	n *node
	i int
}

func (c *cursor) done() bool { return len(c.stack) == 0 }

func (c *cursor) top() *frame { return &c.stack[len(c.stack)-1] }

// seek positions the cursor on the first leaf entry with key >= key (nil:
// the first entry).
func (c *cursor) seek(ctx context.Context, root Hash, key []byte) error {
	c.stack = c.stack[:0]
	if root == emptyTree {
		return nil
	}
	h := root
	for {
		n, err := c.src.node(ctx, h)
		if err != nil {
			return err
		}
		if l := len(c.stack); l > 0 && n.level != c.stack[l-1].n.level-1 {
			return fmt.Errorf("%w: node %s at level %d under level %d", ErrCorrupt, h, n.level, c.stack[l-1].n.level)
		}
		i := n.search(key)
		if i == n.len() {
			// Past the end of this subtree; since parents chose it by
			// last key this happens only at the root: nothing >= key.
			c.stack = c.stack[:0]
			return nil
		}
		c.stack = append(c.stack, frame{n: n, i: i})
		if n.level == 0 {
			return nil
		}
		h = n.hashes[i]
	}
}

// descend replaces the subtree at the top by its first child frame.
func (c *cursor) descend(ctx context.Context) error {
	f := c.top()
	h := f.n.hashes[f.i]
	child, err := c.src.node(ctx, h)
	if err != nil {
		return err
	}
	if child.level != f.n.level-1 {
		return fmt.Errorf("%w: node %s at level %d under level %d", ErrCorrupt, h, child.level, f.n.level)
	}
	c.stack = append(c.stack, frame{n: child})
	return nil
}

// toLeaf descends until the top frame is a leaf entry.
func (c *cursor) toLeaf(ctx context.Context) error {
	for !c.done() && c.top().n.level > 0 {
		if err := c.descend(ctx); err != nil {
			return err
		}
	}
	return nil
}

// advance moves past the current top entry (a leaf entry or a subtree).
func (c *cursor) advance() {
	for !c.done() {
		f := c.top()
		f.i++
		if f.i < f.n.len() {
			return
		}
		c.stack = c.stack[:len(c.stack)-1]
	}
}

// entry returns the current leaf entry; the top frame must be a leaf.
func (c *cursor) entry() ([]byte, Hash) {
	f := c.top()
	return f.n.key(f.i), f.n.hashes[f.i]
}

// scanRange calls fn for each entry with lo <= key < hi (nil hi: no upper
// bound) in key order until fn returns false.
func scanRange(ctx context.Context, src nodeSource, root Hash, lo, hi []byte, fn func(key []byte, value Hash) bool) error {
	c := cursor{src: src}
	if err := c.seek(ctx, root, lo); err != nil {
		return err
	}
	for {
		if err := c.toLeaf(ctx); err != nil {
			return err
		}
		if c.done() {
			return nil
		}
		k, v := c.entry()
		if hi != nil && bytes.Compare(k, hi) >= 0 {
			return nil
		}
		if !fn(k, v) {
			return nil
		}
		c.advance()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// diffTrees calls fn for every key whose value differs between the trees at
// a and b (a zero Hash with ok=false for an absent side), in key order, for
// keys in [lo, hi), until fn returns false. Subtrees with equal hashes are
// skipped without being read, so the cost follows the number of changes,
// not the size of the trees.
func diffTrees(ctx context.Context, src nodeSource, a, b Hash, lo, hi []byte,
	fn func(key []byte, av Hash, aok bool, bv Hash, bok bool) bool) error {
	if a == b {
		return nil
	}
	ca, cb := cursor{src: src}, cursor{src: src}
	if err := ca.seek(ctx, a, lo); err != nil {
		return err
	}
	if err := cb.seek(ctx, b, lo); err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ca.done() && cb.done() {
			return nil
		}
		if !ca.done() && !cb.done() {
			fa, fb := ca.top(), cb.top()
			if fa.n.level > 0 && fa.n.level == fb.n.level {
				// Two whole subtrees at the same position: equal hashes
				// mean equal contents, so skip both.
				if fa.n.hashes[fa.i] == fb.n.hashes[fb.i] {
					ca.advance()
					cb.advance()
					continue
				}
				if err := ca.descend(ctx); err != nil {
					return err
				}
				if err := cb.descend(ctx); err != nil {
					return err
				}
				continue
			}
			// Bring the higher one down a level and compare again.
			if fa.n.level > fb.n.level {
				if err := ca.descend(ctx); err != nil {
					return err
				}
				continue
			}
			if fb.n.level > fa.n.level {
				if err := cb.descend(ctx); err != nil {
					return err
				}
				continue
			}
		}
		if err := ca.toLeaf(ctx); err != nil {
			return err
		}
		if err := cb.toLeaf(ctx); err != nil {
			return err
		}
		var ka, kb []byte
		var va, vb Hash
		if !ca.done() {
			ka, va = ca.entry()
			if hi != nil && bytes.Compare(ka, hi) >= 0 {
				ca.stack = ca.stack[:0]
				ka = nil
			}
		}
		if !cb.done() {
			kb, vb = cb.entry()
			if hi != nil && bytes.Compare(kb, hi) >= 0 {
				cb.stack = cb.stack[:0]
				kb = nil
			}
		}
		switch {
		case ka == nil && kb == nil:
			return nil
		case kb == nil || (ka != nil && bytes.Compare(ka, kb) < 0):
			if !fn(ka, va, true, Hash{}, false) {
				return nil
			}
			ca.advance()
		case ka == nil || bytes.Compare(ka, kb) > 0:
			if !fn(kb, Hash{}, false, vb, true) {
				return nil
			}
			cb.advance()
		default:
			if va != vb && !fn(ka, va, true, vb, true) {
				return nil
			}
			ca.advance()
			cb.advance()
		}
	}
}
