package storeexport

import (
	"context"
	"fmt"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// objectPage is how many ids one ObjectsWithPrefix call asks for. A range
// that fills a page is split into its 256 sub-ranges, so with uniformly
// spread SHA-256 ids a store of n objects costs about n/objectPage·256
// calls at most, and memory stays at one page of ids per level.
var objectPage = 4096 // a variable so tests can make pages small

// eachObject calls fn with every object id in the backend, in ascending
// order. The backend interface has no cursor over objects, only
// ObjectsWithPrefix with a limit, so the id space is walked by prefixes:
// a prefix whose page comes back full is split one byte deeper.
func eachObject(ctx context.Context, be backend.Backend, fn func(backend.ObjectID) error) error {
	return walkPrefix(ctx, be, nil, fn)
}

func walkPrefix(ctx context.Context, be backend.Backend, prefix []byte, fn func(backend.ObjectID) error) error {
	ids, err := be.ObjectsWithPrefix(ctx, prefix, objectPage)
	if err != nil {
		return fmt.Errorf("list objects with prefix %x: %w", prefix, err)
	}
	if len(ids) < objectPage || len(prefix) == len(backend.ObjectID{}) {
		for _, id := range ids {
			if err := fn(id); err != nil {
				return err
			}
		}
		return nil
	}
	sub := make([]byte, len(prefix)+1)
	copy(sub, prefix)
	for b := 0; b < 256; b++ {
		sub[len(prefix)] = byte(b)
		if err := walkPrefix(ctx, be, sub, fn); err != nil {
			return err
		}
	}
	return nil
}
