package versionstore

import (
	"container/heap"
	"context"
	"fmt"
)

// commitSource reads commits, durable or pending.
type commitSource interface {
	commit(ctx context.Context, h Hash) (*Commit, error)
}

// seqHeap is a max-heap of commits by generation number: walking it visits
// descendants before ancestors.
type seqHeap []*Commit

func (h seqHeap) Len() int           { return len(h) }
func (h seqHeap) Less(i, j int) bool { return h[i].Seq > h[j].Seq }
func (h seqHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *seqHeap) Push(x any)        { *h = append(*h, x.(*Commit)) }
func (h *seqHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// isAncestor reports whether a is b or an ancestor of b. Generation numbers
// bound the walk: nothing with a lower Seq than a can lead to a.
func isAncestor(ctx context.Context, src commitSource, a, b Hash) (bool, error) {
	if a == b || a == NoAncestor {
		return true, nil
	}
	ac, err := src.commit(ctx, a)
	if err != nil {
		return false, err
	}
	bc, err := src.commit(ctx, b)
	if err != nil {
		return false, err
	}
	seen := map[Hash]bool{b: true}
	h := &seqHeap{bc}
	for h.Len() > 0 {
		c := heap.Pop(h).(*Commit)
		if c.Hash == a {
			return true, nil
		}
		if c.Seq <= ac.Seq {
			continue
		}
		for _, p := range c.Parents {
			if seen[p] || p == NoAncestor {
				continue
			}
			seen[p] = true
			pc, err := src.commit(ctx, p)
			if err != nil {
				return false, err
			}
			heap.Push(h, pc)
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	return false, nil
}

// mergeBase returns the nearest common ancestor of a and b: of all commits
// reachable from both, the one with the highest generation number.
// NoAncestor is the common root of every history, so there always is one.
func mergeBase(ctx context.Context, src commitSource, a, b Hash) (Hash, error) {
	if a == b {
		return a, nil
	}
	const fromA, fromB = 1, 2
	flags := map[Hash]uint8{}
	h := &seqHeap{}
	for _, x := range []struct {
		h Hash
		f uint8
	}{{a, fromA}, {b, fromB}} {
		if x.h == NoAncestor {
			return NoAncestor, nil
		}
		c, err := src.commit(ctx, x.h)
		if err != nil {
			return Hash{}, err
		}
		if flags[x.h] == 0 {
			heap.Push(h, c)
		}
		flags[x.h] |= x.f
	}
	for h.Len() > 0 {
		c := heap.Pop(h).(*Commit)
		f := flags[c.Hash]
		// Every descendant has a higher Seq and was popped already, so
		// c's flags are final.
		if f == fromA|fromB {
			return c.Hash, nil
		}
		for _, p := range c.Parents {
			if p == NoAncestor {
				continue
			}
			pf, seen := flags[p]
			flags[p] = pf | f
			if !seen {
				pc, err := src.commit(ctx, p)
				if err != nil {
					return Hash{}, err
				}
				heap.Push(h, pc)
			}
		}
		if err := ctx.Err(); err != nil {
			return Hash{}, err
		}
	}
	return NoAncestor, nil
}

// MergeBase returns the nearest common ancestor of two commits.
func (s *Store) MergeBase(ctx context.Context, a, b Hash) (Hash, error) {
	h, err := mergeBase(ctx, s, a, b)
	if err != nil {
		return Hash{}, fmt.Errorf("merge base of %s and %s: %w", a, b, err)
	}
	return h, nil
}

// IsAncestor reports whether a is b or one of b's ancestors.
func (s *Store) IsAncestor(ctx context.Context, a, b Hash) (bool, error) {
	return isAncestor(ctx, s, a, b)
}
