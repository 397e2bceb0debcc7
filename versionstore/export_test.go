package versionstore

import (
	"context"
	"fmt"
	"maps"
)

// TreePersisted reports whether the tree of commit h is persisted whole,
// for tests that need commits whose trees are intermediate.
func TreePersisted(ctx context.Context, s *Store, h Hash) (bool, error) {
	c, err := s.commit(ctx, h)
	if err != nil {
		return false, err
	}
	ok, err := s.be.HasObject(ctx, c.Tree)
	return ok || c.Tree == emptyTree, err
}

// RebuildTree rebuilds the tree of commit h from scratch, as a read after a
// restart does, and returns how many commits it replayed.
func RebuildTree(ctx context.Context, s *Store, h Hash) (replayed int, err error) {
	s.trees.forget() // earlier rebuilds
	c, err := s.commit(ctx, h)
	if err != nil {
		return 0, err
	}
	for x := c; ; replayed++ {
		ok, err := s.be.HasObject(ctx, x.Tree)
		if err != nil {
			return 0, err
		}
		if ok || x.Tree == emptyTree {
			break
		}
		if x, err = s.commit(ctx, x.Parent()); err != nil {
			return 0, err
		}
	}
	s.trees.forget()
	if _, err := s.rebuild(ctx, c, s); err != nil {
		return 0, err
	}
	return replayed, nil
}

// forget drops every registered tree and persisted root.
func (r *treeRegistry) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byRoot, r.fifo, r.nodes = map[Hash]registration{}, nil, 0
	r.persisted, r.pfifo = map[Hash]struct{}{}, nil
}

// CheckTrees walks, bypassing caches, every persisted tree of the commits
// hs, every registered tree and every root marked persisted, and reports
// the first missing node: the invariants intermediate.go relies on.
// whole holds the persisted nodes already found whole, whose subtrees are
// not walked again; CheckTrees adds those it finds.
func CheckTrees(ctx context.Context, s *Store, hs []Hash, whole map[Hash]bool) error {
	walk := func(root Hash, set *nodeSet) error {
		stack := []Hash{root}
		for len(stack) > 0 {
			h := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if h == emptyTree {
				continue
			}
			var n *node
			if set != nil {
				n = set.nodes[h]
			}
			if n == nil {
				if whole[h] {
					continue
				}
				// Marked before its children are read: a missing one ends
				// the check, and with it the map's use.
				whole[h] = true
				data, err := s.be.GetObject(ctx, h)
				if err != nil {
					return fmt.Errorf("node %s of tree %s: %w", h.String()[:8], root.String()[:8], err)
				}
				if n, err = decodeNode(data); err != nil {
					return err
				}
			}
			if n.level > 0 {
				stack = append(stack, n.hashes...)
			}
		}
		return nil
	}
	for _, h := range hs {
		data, err := s.be.GetObject(ctx, h)
		if err != nil {
			return fmt.Errorf("commit %s: %w", h.String()[:8], err)
		}
		c, err := decodeCommit(data)
		if err != nil {
			return err
		}
		ok, err := s.be.HasObject(ctx, c.Tree)
		if err != nil {
			return err
		}
		if ok {
			if err := walk(c.Tree, nil); err != nil {
				return fmt.Errorf("persisted tree of commit %s: %w", h.String()[:8], err)
			}
		}
	}
	s.trees.mu.Lock()
	regs := maps.Clone(s.trees.byRoot)
	persisted := maps.Clone(s.trees.persisted)
	s.trees.mu.Unlock()
	for root, reg := range regs {
		if err := walk(root, reg.set); err != nil {
			return fmt.Errorf("registered: %w", err)
		}
	}
	for root := range persisted {
		if err := walk(root, nil); err != nil {
			return fmt.Errorf("marked persisted: %w", err)
		}
	}
	return nil
}
