package pebblebackend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// GetRef returns a copy of the reference's durable value. It reads the
// in-memory mirror, never the disk.
func (b *Backend) GetRef(ctx context.Context, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebblebackend: get ref %q: %w", name, err)
	}
	if err := b.enter("get ref"); err != nil {
		return nil, err
	}
	defer b.leave()

	b.refsMu.RLock()
	v, ok := b.refs[name]
	b.refsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("pebblebackend: get ref %q: %w", name, backend.ErrRefNotFound)
	}
	// Mirror values are never modified in place, only replaced, so copying
	// outside the lock is safe.
	return append([]byte{}, v...), nil
}

// ListRefs returns every reference ordered by name (bytewise, the same order
// as the keys on disk).
func (b *Backend) ListRefs(ctx context.Context) ([]backend.Ref, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebblebackend: list refs: %w", err)
	}
	if err := b.enter("list refs"); err != nil {
		return nil, err
	}
	defer b.leave()

	b.refsMu.RLock()
	refs := make([]backend.Ref, 0, len(b.refs))
	for name, v := range b.refs {
		refs = append(refs, backend.Ref{Name: name, Value: append([]byte{}, v...)})
	}
	b.refsMu.RUnlock()
	slices.SortFunc(refs, func(x, y backend.Ref) int { return strings.Compare(x.Name, y.Name) })
	return refs, nil
}
