package icebergtable

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"syscall"

	"github.com/floe-catalog/floe/internal/inorder"
)

// DeferredSync holds back the fsync of the local files a warehouse writes
// under a context that carries it (WithDeferredSync), until Sync: a writer
// that makes many files before anything durable may name them (the merge
// queue's candidate, built member by member, is read by no one but the
// queue's checks until it lands, and a crash drops it) pays one round of
// device flushes for all of them instead of one per file, on the path that
// every member of a batch waits for.
//
// Invariant: a file written under it is durable (its data and its
// directory entry, as writeLocalFile makes it) once Sync returns nil; the
// caller must not let anything durable name the file before that (the
// queue calls Sync before it moves the target). Object-store writes are
// durable when they return and are not deferred. A file removed before
// Sync (a merge that was refused removes what it wrote) is skipped: what
// is gone cannot be made durable, and nothing may name it.
type DeferredSync struct {
	mu    sync.Mutex
	files []string
	dirs  []string
	// later runs the background syncs SyncLater starts; Sync waits for
	// them.
	later inorder.Chain
}

type deferredSyncKey struct{}

// WithDeferredSync returns ctx carrying d: local files a Warehouse writes
// under it are not fsynced until d.Sync.
func WithDeferredSync(ctx context.Context, d *DeferredSync) context.Context {
	return context.WithValue(ctx, deferredSyncKey{}, d)
}

func deferredSyncOf(ctx context.Context) *DeferredSync {
	d, _ := ctx.Value(deferredSyncKey{}).(*DeferredSync)
	return d
}

// add records a file written without its fsync, and the directories to
// sync after it (its own where the file system needs that, and the parents
// of those made for it).
func (d *DeferredSync) add(name string, dirs []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.files = append(d.files, name)
	for _, dir := range dirs {
		if !slices.Contains(d.dirs, dir) {
			d.dirs = append(d.dirs, dir)
		}
	}
}

// Pending is the number of files written and not yet synced.
func (d *DeferredSync) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.files)
}

// Sync makes every file written under d so far durable: each file's fsync
// at once (the file system commits them together: on ext4 concurrent
// fsyncs share a journal commit), then the directories' where needed. On
// success d is empty again; on failure it keeps them all, and none may be
// named by anything durable.
func (d *DeferredSync) Sync(ctx context.Context) error {
	d.later.Wait() // what it synced need not be synced again
	return d.sync(ctx)
}

// SyncLater starts syncing, in the background, every file written under d
// so far, after the background syncs started before it: a writer that
// makes files in steps (the queue's members) has them synced while it
// makes the next ones, and its Sync then finds little left. A failure
// leaves the files to Sync, which reports it.
func (d *DeferredSync) SyncLater(ctx context.Context) {
	d.later.Start(func() { _ = d.sync(ctx) })
}

func (d *DeferredSync) sync(ctx context.Context) error {
	d.mu.Lock()
	files, dirs := slices.Clone(d.files), slices.Clone(d.dirs)
	d.mu.Unlock()
	if err := syncAll(ctx, files, fsyncFile); err != nil {
		return err
	}
	if err := syncAll(ctx, dirs, syncDir); err != nil {
		return err
	}
	d.mu.Lock()
	d.files = slices.DeleteFunc(d.files, func(f string) bool { return slices.Contains(files, f) })
	d.dirs = slices.DeleteFunc(d.dirs, func(f string) bool { return slices.Contains(dirs, f) })
	d.mu.Unlock()
	return nil
}

// syncAll runs do on each name concurrently, at most syncParallelism at
// a time, and returns the first error.
func syncAll(ctx context.Context, names []string, do func(string) error) error {
	const syncParallelism = 16
	errs := make([]error, len(names))
	sem := make(chan struct{}, syncParallelism)
	var wg sync.WaitGroup
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			errs[i] = err
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = do(name)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// fsyncFile makes the written file name durable; a file that is gone
// (removed by its writer) is skipped.
func fsyncFile(name string) error {
	fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: name, Err: err}
	}
	err = ignoringEINTR(func() error { return syscall.Fsync(fd) })
	_ = syscall.Close(fd)
	if err != nil {
		return fmt.Errorf("sync %s: %w", name, &fs.PathError{Op: "sync", Path: name, Err: err})
	}
	return nil
}
