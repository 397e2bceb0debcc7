package tablemerge

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// writeBehindParallelism bounds the files one cherry-pick writes at once.
const writeBehindParallelism = 4

// writeBehind writes a cherry-pick's new files (manifest copies, manifest
// lists) in the background while the cherry-pick goes on: its later steps
// need the files' names and bytes, never the files, and nothing reads
// them before the merge that follows commits. Creating a file costs the
// kernel far more than the bytes do on some machines (a third of a
// millisecond of system time per file on a small VM, traced in
// BenchmarkSeedDay), and the queue's worker merges its members one after
// another, so these writes run on another core beside the cherry-pick's
// own work.
//
// Invariant: CherryPick returns only after wait, so every file it names
// in Result.Written was either written or failed (and was removed by its
// writer); a failed write fails the cherry-pick.
type writeBehind struct {
	ctx   context.Context
	files Files
	g     errgroup.Group
}

func newWriteBehind(ctx context.Context, files Files) *writeBehind {
	w := &writeBehind{ctx: ctx, files: files}
	w.g.SetLimit(writeBehindParallelism)
	return w
}

// write writes data to loc in the background; what names the write, for
// its error.
func (w *writeBehind) write(loc string, data []byte, what string) {
	w.g.Go(func() error {
		if err := w.files.WriteFile(w.ctx, loc, data); err != nil {
			return fmt.Errorf("%s: write %s: %w", what, loc, err)
		}
		return nil
	})
}

// wait returns once every write ended, with the first one's error.
func (w *writeBehind) wait() error { return w.g.Wait() }
