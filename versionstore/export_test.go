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
