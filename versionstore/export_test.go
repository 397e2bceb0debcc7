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
	s.trees = newTreeRegistry() // forget earlier rebuilds
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
	s.trees = newTreeRegistry()
	if _, err := s.rebuild(ctx, c, s); err != nil {
		return 0, err
	}
	return replayed, nil
}
