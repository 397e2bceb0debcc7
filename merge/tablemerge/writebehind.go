package tablemerge

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// writeBehindParallelism bounds the files one cherry-pick writes at once.
const writeBehindParallelism = 4

// WriteBehind writes a cherry-pick's new files (manifest copies, manifest
// lists) in the background while the cherry-pick goes on: its later steps
// need the files' names and bytes, never the files, and nothing reads
// them before the merge that follows commits. Creating a file costs the
// kernel far more than the bytes do on some machines (a third of a
// millisecond of system time per file on a small VM, traced in
// BenchmarkSeedDay), and the queue's worker merges its members one after
// another, so these writes run on another core beside the cherry-pick's
// own work.
//
// A caller may pass its own (Request.Writes) to add writes of its own (the
// merge engine's metadata file) and wait once for all of them.
//
// Invariant: whoever waits (CherryPick for its own, else the caller)
// waits before anything reads or names the files and before removing
// Result.Written: every file named there was then either written or
// failed (and was removed by its writer); a failed write fails the
// cherry-pick (or the caller's merge).
type WriteBehind struct {
	ctx context.Context
	g   errgroup.Group
}

// NewWriteBehind returns a WriteBehind whose writes run under ctx (which
// may carry an icebergtable.DeferredSync).
func NewWriteBehind(ctx context.Context) *WriteBehind {
	w := &WriteBehind{ctx: ctx}
	w.g.SetLimit(writeBehindParallelism)
	return w
}

// Go runs write in the background; what names it, for its error.
func (w *WriteBehind) Go(what string, write func(ctx context.Context) error) {
	w.g.Go(func() error {
		if err := write(w.ctx); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

// write writes data to loc through files in the background.
func (w *WriteBehind) write(files Files, loc string, data []byte, what string) {
	w.Go(what, func(ctx context.Context) error {
		if err := files.WriteFile(ctx, loc, data); err != nil {
			return fmt.Errorf("write %s: %w", loc, err)
		}
		return nil
	})
}

// Wait returns once every write started so far ended, with the first
// error of any. It may be called again after more writes.
func (w *WriteBehind) Wait() error { return w.g.Wait() }
