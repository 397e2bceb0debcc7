package versionstore

import "context"

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
