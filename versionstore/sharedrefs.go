package versionstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// References on a shared backend (backend.Shared: several floe replicas
// over one SQL database).
//
// Consistency model: every resolution of a reference by name (GetRef,
// Resolve, ListRefs, Check) reads its head from the backend, never from
// the in-memory mirror, which another replica's commit may have made stale.
// The database is linearizable for single-row reads and compare-and-swap
// writes, so a read that starts after a write was acknowledged, by any
// replica, returns that write or a later one; a replica therefore never
// serves a head older than one it (or any replica) has already returned.
// Immutable objects (commits, trees, contents) stay cached: they never
// change once written.
//
// The mirror is only the committers' working copy: a committer starting a
// round reloads its ref, and a round whose compare-and-swap another replica
// won is rebased on the reloaded head (complete, in committer.go).
//
// The cost is one primary-key read per resolution; see the pgbackend
// README for the figures.

// sharedReadTimeout bounds a reference read made without a caller's
// context (GetRef, ListRefs).
const sharedReadTimeout = 10 * time.Second

func (s *Store) readSharedRef(ctx context.Context, name string) (*Ref, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, sharedReadTimeout)
		defer cancel()
	}
	raw, err := s.be.GetRef(ctx, name)
	switch {
	case errors.Is(err, backend.ErrRefNotFound):
		return nil, fmt.Errorf("%q: %w", name, ErrReferenceNotFound)
	case err != nil:
		return nil, fmt.Errorf("read reference %q: %w", name, err)
	}
	r, err := decodeRef(raw)
	if err != nil {
		return nil, err
	}
	if r.Name != name {
		return nil, fmt.Errorf("%w: reference stored as %q is named %q", ErrCorrupt, name, r.Name)
	}
	return r, nil
}

// listSharedRefs lists the references stored in the backend. ListRefs has
// no error to return, so when the backend cannot be read the committers'
// working copy is listed instead, with a warning: it may be stale, but a
// write based on it would be refused by the compare-and-swap.
func (s *Store) listSharedRefs() []*Ref {
	ctx, cancel := context.WithTimeout(context.Background(), sharedReadTimeout)
	defer cancel()
	refs, err := s.loadRefs(ctx)
	if err != nil {
		s.logger.Warn("listing references from the in-memory copy: the backend cannot be read", "err", err)
		return s.refs.list()
	}
	return refs
}

// planBase is the head a merge or transplant is planned on: the mirror's,
// or on a shared backend the stored one (nil: the ref does not exist).
func (s *Store) planBase(ctx context.Context, name string) (*Ref, error) {
	if !s.shared {
		return s.refs.get(name), nil
	}
	r, err := s.readSharedRef(ctx, name)
	if errors.Is(err, ErrReferenceNotFound) {
		return nil, nil
	}
	return r, err
}
