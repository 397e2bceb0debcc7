package icebergtable

import (
	"context"

	iceio "github.com/apache/iceberg-go/io"
)

// FileIO returns the warehouse's file system for loc, bound to ctx, for
// readers that go through iceberg-go's scanner (the merge engine's
// duplicate-key check reads data files with it). Call done when finished.
func (w *Warehouse) FileIO(ctx context.Context, loc string) (fsys iceio.IO, done context.CancelFunc, err error) {
	return w.fileIO(ctx, loc)
}
