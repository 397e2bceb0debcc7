package pebblebackend

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/floe-catalog/floe/internal/backoff"
)

// diskGuard stands between Pebble and the file system so that a disk which
// refuses writes (full, over quota, or a data directory that became
// unwritable) stalls the store instead of breaking it.
//
// Pebble treats a failed write to its write-ahead log as fatal. A WAL
// write error sticks to the log writer, and the next commit that finds it
// panics; a failure to close the old WAL or create the new one when the
// memtable rotates panics inside rotateWAL after it released DB.mu, so the
// deferred unlock turns the panic into the unrecoverable "fatal error:
// sync: unlock of unlocked mutex" (issue 32). That is not a misuse by floe
// that could be avoided by calling Pebble differently: the commit that
// rotates the memtable is an ordinary Apply. What can be avoided is Pebble
// seeing the error at all. So the guard holds a write-side operation the
// disk refuses and tries it again, with backoff, until the disk takes it;
// meanwhile Backend.Apply refuses new batches with backend.ErrUnavailable
// and Writable reports why, and once the disk takes writes again the held
// operations complete and the store goes on as if the disk had been slow.
// Nothing is half-written: a short write is resumed from where it stopped.
//
// Only refusals are held (ENOSPC, EDQUOT, EACCES, EPERM, EROFS): they are
// conditions an operator fixes. Other errors pass through, and so do the
// errors of fsync whatever they are, because retrying a failed fsync can
// report success for data the kernel already dropped; a failed sync
// surfaces to Apply, which marks the backend failed and reopens it (see
// recover.go).
//
// While Open runs the guard holds nothing: a store that cannot write at
// start fails at once with the cause instead of hanging (see Open).
type diskGuard struct {
	log *slog.Logger
	// holding is off while opening, so refusals fail fast.
	holding atomic.Bool

	// episodes counts the times the disk started refusing writes.
	episodes atomic.Uint64
	// walFailed is the first error a write-ahead log file's write or sync
	// returned to Pebble; see walFailure.
	walFailed atomic.Pointer[error]

	// anyHeld mirrors held > 0, so that the check on every write is an
	// atomic load.
	anyHeld atomic.Bool

	mu    sync.Mutex
	held  int       // operations waiting for the disk; guarded by mu
	since time.Time // when held last became positive; guarded by mu
	cause error     // the latest refusal; guarded by mu
}

// Backoff of a held operation between attempts.
const (
	guardRetryMin = 10 * time.Millisecond
	guardRetryMax = time.Second
)

func newDiskGuard(log *slog.Logger) *diskGuard {
	return &diskGuard{log: log}
}

// isRefusal reports whether err says the disk refuses to take a write, as
// opposed to failing: those are the errors worth waiting out.
func isRefusal(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EACCES, syscall.EPERM, syscall.EROFS} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// refusing returns nil unless an operation is waiting for the disk; then an
// error saying since when and why.
func (g *diskGuard) refusing() error {
	if !g.anyHeld.Load() {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == 0 {
		return nil
	}
	return fmt.Errorf("the disk refuses writes since %s: %w", g.since.UTC().Format(time.RFC3339), g.cause)
}

// walFailure returns the error a write-ahead log file returned to Pebble,
// or nil. Pebble's log writer keeps that error and the next commit that
// meets it panics, so the backend must not commit once it is set, until
// the database is reopened (and resetWAL called).
func (g *diskGuard) walFailure() error {
	if p := g.walFailed.Load(); p != nil {
		return *p
	}
	return nil
}

func (g *diskGuard) resetWAL() { g.walFailed.Store(nil) }

// do runs op, and while it fails with a refusal, and the guard holds,
// runs it again until it succeeds or fails otherwise. A held operation is
// never given up: returning its error would reach the Pebble paths that
// panic. Close leaves a database with held operations open (see
// Backend.Close).
func (g *diskGuard) do(op func() error) error {
	err := op()
	if err == nil || !isRefusal(err) || !g.holding.Load() {
		return err
	}
	g.begin(err)
	defer g.end()
	wait := backoff.Policy{Base: guardRetryMin, Max: guardRetryMax}
	for n := 1; ; n++ {
		time.Sleep(wait.Delay(n))
		if err = op(); err == nil || !isRefusal(err) {
			return err
		}
		g.note(err)
	}
}

func (g *diskGuard) begin(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cause = err
	g.held++
	if g.held > 1 {
		return
	}
	g.anyHeld.Store(true)
	g.since = time.Now()
	g.episodes.Add(1)
	// One line with the cause; the operations that keep failing are not
	// logged again until the disk has taken a write.
	g.log.Error("the store's disk refuses writes; writes are refused until it takes them again", "cause", err.Error())
}

func (g *diskGuard) note(err error) {
	g.mu.Lock()
	g.cause = err
	g.mu.Unlock()
}

func (g *diskGuard) end() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held--
	if g.held == 0 {
		g.anyHeld.Store(false)
		g.log.Info("the store's disk takes writes again", "refused_for", time.Since(g.since).Round(time.Millisecond).String())
	}
}

// guardFS is the file system Pebble sees: fs, with its write-side
// operations under the guard.
type guardFS struct {
	vfs.FS
	g *diskGuard
}

var _ vfs.FS = guardFS{}

// Unwrap returns the file system underneath, as vfs wrappers do.
func (fs guardFS) Unwrap() vfs.FS { return fs.FS }

func (fs guardFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.g.do(func() (err error) {
		f, err = fs.FS.Create(name, category)
		return err
	})
	return fs.file(name, f, err)
}

func (fs guardFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	var f vfs.File
	err := fs.g.do(func() (err error) {
		f, err = fs.FS.OpenReadWrite(name, category, opts...)
		return err
	})
	return fs.file(name, f, err)
}

// ReuseForWrite is a rename and an open, held separately: retrying the
// whole after the rename succeeded would look for a name that is gone.
func (fs guardFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.g.do(func() error { return fs.FS.Rename(oldname, newname) }); err != nil {
		return nil, err
	}
	return fs.OpenReadWrite(newname, category)
}

func (fs guardFS) Link(oldname, newname string) error {
	return fs.g.do(func() error { return fs.FS.Link(oldname, newname) })
}

func (fs guardFS) Rename(oldname, newname string) error {
	return fs.g.do(func() error { return fs.FS.Rename(oldname, newname) })
}

func (fs guardFS) MkdirAll(dir string, perm os.FileMode) error {
	return fs.g.do(func() error { return fs.FS.MkdirAll(dir, perm) })
}

func (fs guardFS) file(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		return nil, err
	}
	return guardFile{File: f, g: fs.g, wal: strings.HasSuffix(name, ".log")}, nil
}

// guardFile holds a file's refused writes. Reads, syncs and Close pass
// through (see diskGuard on syncs); Preallocate too, since Pebble ignores
// its errors. The errors a write-ahead log (wal) passes to Pebble are
// recorded: see walFailure.
type guardFile struct {
	vfs.File
	g   *diskGuard
	wal bool
}

func (f guardFile) failed(err error) error {
	if err != nil && f.wal {
		f.g.walFailed.CompareAndSwap(nil, &err)
	}
	return err
}

func (f guardFile) Sync() error { return f.failed(f.File.Sync()) }

func (f guardFile) SyncData() error { return f.failed(f.File.SyncData()) }

func (f guardFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.failed(err)
}

// Write resumes a short write where it stopped, so that the bytes of the
// file are exactly those of one successful write.
func (f guardFile) Write(p []byte) (int, error) {
	n := 0
	err := f.g.do(func() error {
		m, err := f.File.Write(p[n:])
		n += m
		return err
	})
	return n, f.failed(err)
}

func (f guardFile) WriteAt(p []byte, off int64) (int, error) {
	n := 0
	err := f.g.do(func() error {
		m, err := f.File.WriteAt(p[n:], off+int64(n))
		n += m
		return err
	})
	return n, f.failed(err)
}
