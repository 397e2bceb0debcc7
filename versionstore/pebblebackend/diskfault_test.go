package pebblebackend

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// faults is an errorfs.Injector whose rule the test switches on and off:
// the real disk under Pebble's errorfs, failing on demand.
type faults struct {
	rule   atomic.Pointer[func(errorfs.Op) error]
	hitWAL atomic.Bool // an error was injected on a WAL file
}

func (f *faults) MaybeError(op errorfs.Op) error {
	r := f.rule.Load()
	if r == nil {
		return nil
	}
	err := (*r)(op)
	if err != nil && strings.HasSuffix(op.Path, ".log") {
		f.hitWAL.Store(true)
	}
	return err
}

func (f *faults) String() string { return "test faults" }

func (f *faults) set(rule func(errorfs.Op) error) { f.rule.Store(&rule) }

func (f *faults) clear() { f.rule.Store(nil) }

// diskFull fails every write of file data with ENOSPC, as a full disk does.
func diskFull(op errorfs.Op) error {
	if op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt {
		return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
	}
	return nil
}

// unwritableDir fails what a directory without write permission refuses:
// creating, linking, renaming and removing its entries. Files already open
// keep taking writes.
func unwritableDir(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpCreate, errorfs.OpLink, errorfs.OpRename, errorfs.OpReuseForWrite,
		errorfs.OpMkdirAll, errorfs.OpRemove, errorfs.OpRemoveAll:
		return &os.PathError{Op: "open", Path: op.Path, Err: syscall.EACCES}
	}
	return nil
}

// walSyncFails fails the fsyncs of write-ahead logs with EIO.
func walSyncFails(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
		if strings.HasSuffix(op.Path, ".log") {
			return &os.PathError{Op: "fsync", Path: op.Path, Err: syscall.EIO}
		}
	}
	return nil
}

// ledger writes batches that each put an object and move one ref, and
// remembers what every acknowledged batch wrote.
type ledger struct {
	b    *Backend
	size int

	mu    sync.Mutex
	refs  map[string][]byte           // ref -> value of its last acknowledged batch
	acked map[backend.ObjectID][]byte // objects of acknowledged batches
	n     int
}

func newLedger(b *Backend, objectSize int) *ledger {
	return &ledger{b: b, size: objectSize, refs: map[string][]byte{}, acked: map[backend.ObjectID][]byte{}}
}

// put writes one batch on ref, expecting the ref's last acknowledged value.
func (l *ledger) put(ctx context.Context, ref string) error {
	l.mu.Lock()
	l.n++
	n := l.n
	prev := l.refs[ref]
	l.mu.Unlock()
	unit := fmt.Appendf(nil, "%s-%d;", ref, n)
	data := bytes.Repeat(unit, l.size/len(unit)+1)[:l.size]
	id := backend.ObjectID(sha256.Sum256(data))
	val := []byte(fmt.Sprintf("%s@%d", ref, n))
	err := l.b.Apply(ctx, backend.Batch{
		Objects: []backend.Object{{ID: id, Data: data}},
		Refs:    []backend.RefUpdate{{Name: ref, Expected: prev, New: val}},
		Log:     [][]byte{val},
	})
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refs[ref] = val
	l.acked[id] = data
	return nil
}

func (l *ledger) mustPut(t *testing.T, ref string) {
	t.Helper()
	if err := l.put(t.Context(), ref); err != nil {
		t.Fatalf("put on %s: %v", ref, err)
	}
}

// sync makes the ledger's idea of ref what the backend holds, after a write
// whose outcome was unknown.
func (l *ledger) sync(t *testing.T, ref string) {
	t.Helper()
	v, err := l.b.GetRef(t.Context(), ref)
	if err != nil && !errors.Is(err, backend.ErrRefNotFound) {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.refs[ref] = v
	l.mu.Unlock()
}

// check reopens the closed store in dir on the plain disk and checks every
// acknowledged write is there.
func (l *ledger) check(t *testing.T, dir string) {
	t.Helper()
	b := mustOpen(t, dir, Options{})
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	for ref, want := range l.refs {
		got, err := b.GetRef(t.Context(), ref)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("after reopening, ref %s = %q, %v; want %q", ref, got, err, want)
		}
	}
	for id, want := range l.acked {
		got, err := b.GetObject(t.Context(), id)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("after reopening, object %s: %v (%d bytes, want %d)", id, err, len(got), len(want))
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wantRefused checks err refuses a write without writing anything.
func wantRefused(t *testing.T, err error, cause string) {
	t.Helper()
	if !errors.Is(err, backend.ErrUnavailable) || errors.Is(err, backend.ErrOutcomeUnknown) {
		t.Fatalf("got %v, want a refusal wrapping ErrUnavailable and not ErrOutcomeUnknown", err)
	}
	if !strings.Contains(err.Error(), cause) {
		t.Fatalf("got %v, want the cause %q in it", err, cause)
	}
}

// TestDiskFullHoldsWritesUntilSpaceIsBack fills the disk under a busy
// store: the write in flight waits, new writes are refused as unavailable
// with the cause, reads go on, and once space is back the waiting write
// completes and new ones succeed, without reopening anything.
func TestDiskFullHoldsWritesUntilSpaceIsBack(t *testing.T) {
	var f faults
	dir := t.TempDir()
	b := mustOpen(t, dir, Options{FS: errorfs.Wrap(vfs.Default, &f)})
	l := newLedger(b, 1024)
	for range 20 {
		l.mustPut(t, "main")
	}

	f.set(diskFull)
	inflight := make(chan error, 1)
	go func() { inflight <- l.put(context.Background(), "inflight") }()
	waitFor(t, "the store to report the disk refusing writes", func() bool { return b.Writable() != nil })
	wantRefused(t, b.Writable(), "no space left on device")
	wantRefused(t, l.put(t.Context(), "main"), "no space left on device")
	if _, err := b.GetRef(t.Context(), "main"); err != nil {
		t.Fatalf("read while the disk is full: %v", err)
	}
	select {
	case err := <-inflight:
		t.Fatalf("the write in flight returned %v while the disk was full", err)
	case <-time.After(50 * time.Millisecond):
	}

	f.clear()
	if err := <-inflight; err != nil {
		t.Fatalf("the write in flight when the disk filled: %v", err)
	}
	waitFor(t, "the store to take writes", func() bool { return b.Writable() == nil })
	for range 5 {
		l.mustPut(t, "main")
	}
	if got := b.Faults(); got.DiskRefusals == 0 || got.Reopens != 0 {
		t.Errorf("faults = %+v, want disk refusals counted and no reopen", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	l.check(t, dir)
}

// TestUnwritableDirectoryDoesNotKillTheProcess makes the data directory
// unwritable while writers fill memtables, so that Pebble must create a new
// WAL: before the guard this panicked in rotateWAL and ended the process
// with "sync: unlock of unlocked mutex" (issue 32). Now the rotation waits,
// writes are refused with the cause, and all goes on once the directory is
// writable again.
func TestUnwritableDirectoryDoesNotKillTheProcess(t *testing.T) {
	var f faults
	dir := t.TempDir()
	b := mustOpen(t, dir, Options{FS: errorfs.Wrap(vfs.Default, &f)})
	l := newLedger(b, 64<<10)
	l.mustPut(t, "main")

	f.set(unwritableDir)
	// 64 KiB batches fill Pebble's first memtables (256 KiB, then twice
	// that) within a few writes, and the next write must rotate the WAL.
	stop := make(chan struct{})
	writer := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				writer <- nil
				return
			default:
			}
			if err := l.put(context.Background(), "main"); err != nil {
				writer <- err
				return
			}
		}
	}()
	waitFor(t, "the store to report the directory refusing writes", func() bool { return b.Writable() != nil })
	wantRefused(t, b.Writable(), "permission denied")
	wantRefused(t, l.put(t.Context(), "other"), "permission denied")
	if !f.hitWAL.Load() {
		t.Error("the fault never met the creation of a WAL, the path that crashed")
	}
	f.clear()
	close(stop)
	if err := <-writer; err != nil {
		wantRefused(t, err, "permission denied")
	}
	waitFor(t, "the store to take writes", func() bool { return b.Writable() == nil })
	for range 10 {
		l.mustPut(t, "main")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	l.check(t, dir)
}

// TestFailedWALSyncReopensTheStore fails a WAL fsync, which cannot be
// retried safely: that write's outcome is unknown, later writes are
// refused, and the backend reopens the database by itself once the disk
// takes writes, keeping every acknowledged write.
func TestFailedWALSyncReopensTheStore(t *testing.T) {
	var f faults
	dir := t.TempDir()
	b := mustOpen(t, dir, Options{FS: errorfs.Wrap(vfs.Default, &f)})
	l := newLedger(b, 512)
	for range 10 {
		l.mustPut(t, "main")
	}

	f.set(walSyncFails)
	err := l.put(t.Context(), "main")
	if !errors.Is(err, backend.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "input/output error") {
		t.Fatalf("write whose WAL sync failed: got %v, want ErrOutcomeUnknown with the cause", err)
	}
	wantRefused(t, l.put(t.Context(), "other"), "input/output error")
	if _, err := b.GetRef(t.Context(), "main"); err != nil {
		t.Fatalf("read after the failed sync: %v", err)
	}

	f.clear()
	waitFor(t, "the store to be reopened", func() bool { return b.Writable() == nil })
	if got := b.Faults().Reopens; got != 1 {
		t.Errorf("reopens = %d, want 1", got)
	}
	l.sync(t, "main") // the failed write may or may not have reached the disk
	for range 5 {
		l.mustPut(t, "main")
		l.mustPut(t, "other")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	l.check(t, dir)
}

// lowSpaceFS reports a nearly full disk.
type lowSpaceFS struct{ vfs.FS }

func (lowSpaceFS) GetDiskUsage(string) (vfs.DiskUsage, error) {
	return vfs.DiskUsage{AvailBytes: 3 << 20, TotalBytes: 1 << 30, UsedBytes: 1<<30 - 3<<20}, nil
}

// TestOpenFailsFastWhenTheDiskCannotWrite starts on a full disk and in an
// unwritable directory: Open fails at once with the cause instead of
// bringing up a store whose first flush hangs.
func TestOpenFailsFastWhenTheDiskCannotWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   func() vfs.FS
		want string
	}{
		{"full disk", func() vfs.FS { return lowSpaceFS{vfs.Default} }, "has 3 MiB free, and the store needs 64 MiB to start"},
		{"unwritable directory", func() vfs.FS {
			var f faults
			f.set(unwritableDir)
			return errorfs.Wrap(vfs.Default, &f)
		}, "permission denied"},
		{"no space for a page", func() vfs.FS {
			var f faults
			f.set(diskFull)
			return errorfs.Wrap(vfs.Default, &f)
		}, "no space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			start := time.Now()
			b, err := Open(dir, Options{FS: tc.fs()})
			if err == nil {
				_ = b.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Open: %v; want one line saying %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("Open took %v to fail", d)
			}
			// Nothing is left behind that a later start would trip on.
			b = mustOpen(t, dir, Options{})
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// countingHandler counts the records it is given and keeps the last.
type countingHandler struct {
	slog.Handler
	mu   sync.Mutex
	n    int
	last slog.Record
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	h.last = r
	return nil
}

// TestPebbleErrorsAreRateLimited logs one of Pebble's error formats as
// fast as its flush retry loop does: one line per interval gets through,
// carrying the number held back.
func TestPebbleErrorsAreRateLimited(t *testing.T) {
	h := &countingHandler{}
	now := time.Unix(1_700_000_000, 0)
	lim := newLogLimiter(10 * time.Second)
	lim.now = func() time.Time { return now }
	l := pebbleLogger{log: slog.New(h), limit: lim}
	for range 5000 {
		l.Errorf("background error: %s", "write 000042.sst: no space left on device")
	}
	l.Errorf("a different error: %d", 7)
	if h.n != 2 {
		t.Fatalf("%d lines logged within the interval, want 2 (one per format)", h.n)
	}
	now = now.Add(11 * time.Second)
	l.Errorf("background error: %s", "write 000043.sst: no space left on device")
	if h.n != 3 {
		t.Fatalf("%d lines logged, want 3", h.n)
	}
	var suppressed int64
	h.last.Attrs(func(a slog.Attr) bool {
		if a.Key == "suppressed_repeats" {
			suppressed = a.Value.Int64()
		}
		return true
	})
	if suppressed != 4999 {
		t.Fatalf("suppressed_repeats = %d, want 4999", suppressed)
	}
}

// TestCloseWhileTheDiskRefusesDoesNotHang: a shutdown while the disk is
// full must not wait for the disk. Close returns at once, saying the store
// was left open and why; the acknowledged writes are in the synced WAL.
// Once the disk takes writes again the held write completes and the store
// closes.
func TestCloseWhileTheDiskRefusesDoesNotHang(t *testing.T) {
	var f faults
	dir := t.TempDir()
	b := mustOpen(t, dir, Options{FS: errorfs.Wrap(vfs.Default, &f)})
	l := newLedger(b, 256)
	for range 5 {
		l.mustPut(t, "main")
	}
	f.set(diskFull)
	inflight := make(chan error, 1)
	go func() { inflight <- l.put(context.Background(), "inflight") }()
	waitFor(t, "the store to report the disk refusing writes", func() bool { return b.Writable() != nil })

	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	select {
	case err := <-closed:
		if err == nil || !strings.Contains(err.Error(), "left open") || !strings.Contains(err.Error(), "no space left on device") {
			t.Fatalf("Close while the disk is full: %v, want an error saying the store was left open, and why", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the full disk")
	}

	f.clear()
	if err := <-inflight; err != nil {
		t.Fatalf("the write in flight: %v", err)
	}
	// The first Close finishes by itself once the disk takes writes; a
	// second one waits for it.
	if err := b.Close(); err != nil && !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("Close once the disk takes writes: %v", err)
	}
	l.check(t, dir)
}
