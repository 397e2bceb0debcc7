package mergeengine

import (
	"context"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

// DeferredSync collects the metadata files (manifests, manifest lists,
// metadata files) merges write under a context that carries it
// (WithDeferredSync) without their fsyncs, until its Sync makes them all
// durable at once (icebergtable.DeferredSync).
type DeferredSync = icebergtable.DeferredSync

// WithDeferredSync returns ctx carrying d. Merges under it commit, into
// the version store, tables whose files are not durable until d.Sync: it
// is only for a target branch nothing durable depends on until the caller
// synced d, such as the merge queue's candidate, which the queue moves
// its target to only after d.Sync, and which a crash drops.
func WithDeferredSync(ctx context.Context, d *DeferredSync) context.Context {
	return icebergtable.WithDeferredSync(ctx, d)
}
