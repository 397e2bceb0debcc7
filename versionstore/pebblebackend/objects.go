package pebblebackend

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// GetObject returns a copy of the object's bytes.
func (b *Backend) GetObject(ctx context.Context, id backend.ObjectID) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebblebackend: get object %s: %w", id, err)
	}
	if err := b.enter("get object"); err != nil {
		return nil, err
	}
	defer b.leave()

	v, closer, err := b.db.Get(objectKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("pebblebackend: get object %s: %w", id, backend.ErrObjectNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: get object %s: %w", id, err)
	}
	// v is only valid until closer.Close.
	data := append([]byte{}, v...)
	if err := closer.Close(); err != nil {
		return nil, fmt.Errorf("pebblebackend: get object %s: %w", id, err)
	}
	return data, nil
}

// HasObject reports whether the object exists.
func (b *Backend) HasObject(ctx context.Context, id backend.ObjectID) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("pebblebackend: has object %s: %w", id, err)
	}
	if err := b.enter("has object"); err != nil {
		return false, err
	}
	defer b.leave()

	_, closer, err := b.db.Get(objectKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("pebblebackend: has object %s: %w", id, err)
	}
	if err := closer.Close(); err != nil {
		return false, fmt.Errorf("pebblebackend: has object %s: %w", id, err)
	}
	return true, nil
}

// ObjectsWithPrefix lists up to limit object ids starting with prefix, in
// ascending order. A prefix longer than an id matches nothing; limit must be
// positive.
func (b *Backend) ObjectsWithPrefix(ctx context.Context, prefix []byte, limit int) ([]backend.ObjectID, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("pebblebackend: objects with prefix %x: limit %d must be positive", prefix, limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebblebackend: objects with prefix %x: %w", prefix, err)
	}
	if len(prefix) > len(backend.ObjectID{}) {
		return nil, nil
	}
	if err := b.enter("objects with prefix"); err != nil {
		return nil, err
	}
	defer b.leave()

	lower := append([]byte{prefixObject}, prefix...)
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: objects with prefix %x: %w", prefix, err)
	}
	var ids []backend.ObjectID
	for ok := it.First(); ok && len(ids) < limit; ok = it.Next() {
		k := it.Key()
		var id backend.ObjectID
		if len(k) != 1+len(id) {
			err = fmt.Errorf("malformed object key %x", k)
			break
		}
		copy(id[:], k[1:])
		ids = append(ids, id)
	}
	if err := errors.Join(err, it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("pebblebackend: objects with prefix %x: %w", prefix, err)
	}
	return ids, nil
}
