package pebblebackend

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Checkpoint writes a consistent copy of the open database into dir, which
// must not exist, while writes go on: Pebble hard-links the sstables
// (copying them across filesystems) and copies the WAL and MANIFEST. The
// copy is the database as of one point of Pebble's commit order, so every
// batch is in it whole or not at all, and floe's invariants hold in it as
// they do after a crash.
//
// Every batch whose Apply returned before Checkpoint was called is in the
// copy: Apply returns only after its WAL record is synced, and Checkpoint
// copies the WAL files as they are when it runs, so those records are in
// the copied WAL and are replayed when the copy is opened. WithFlushedWAL
// also syncs the WAL first, which extends the guarantee to batches written
// with NoSync (tests) — Pebble documents it as "any writes committed before
// calling DB.Checkpoint will be part of that checkpoint". Batches in flight
// may or may not be in it, as after a crash.
//
// The copy is a data directory: Open it (after copying it elsewhere, since
// opening writes to it) to restore.
func (b *Backend) Checkpoint(ctx context.Context, dir string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pebblebackend: checkpoint %s into %s: %w", b.dir, dir, err)
	}
	if err := b.enter("checkpoint"); err != nil {
		return err
	}
	defer b.leave()
	// A checkpoint syncs the WAL through the commit pipeline, which a failed
	// WAL would make panic; and a refusing disk would hold it.
	if err := b.Writable(); err != nil {
		return fmt.Errorf("pebblebackend: checkpoint %s into %s: %w", b.dir, dir, err)
	}
	if err := b.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("pebblebackend: checkpoint %s into %s: %w", b.dir, dir, err)
	}
	return nil
}
