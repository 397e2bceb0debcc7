package pebblebackend

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/floe-catalog/floe/internal/keyedmutex"
	"github.com/floe-catalog/floe/versionstore/backend"
)

var _ backend.Backend = (*Backend)(nil)

// Backend is a backend.Backend over one Pebble database. All methods are safe
// for concurrent use.
type Backend struct {
	// db is the open database. A reopen (recover.go) replaces it under
	// life held exclusively; it is nil while a reopen has closed the old
	// database and could not open the new one yet.
	db   *pebble.DB
	dir  string
	sync bool

	opts   Options
	fs     vfs.FS // the file system under the guard
	logger *slog.Logger
	plog   pebbleLogger
	guard  *diskGuard

	// closing is closed by Close; it stops the reopen loop.
	closing   chan struct{}
	closeOnce sync.Once
	// reopening is set while the reopen loop runs, so one runs at a time.
	reopening atomic.Bool
	// wedged is set when Pebble panicked inside a commit: its commit
	// pipeline then holds its lock for good, so the database can neither
	// take writes nor be closed, and only a restart recovers.
	wedged atomic.Pointer[error]
	// reopens counts the databases reopened after a failed write.
	reopens atomic.Uint64

	// life guards db against Close: every method holds it shared for its
	// whole duration, Close holds it exclusively, so Close waits for
	// in-flight calls and no call ever reaches a closed Pebble (which would
	// panic).
	life   sync.RWMutex
	closed bool // guarded by life

	// locks holds a mutex per reference and per record, named by its Pebble
	// key. Apply holds the locks of the refs it updates and the records it
	// checks or writes from the compare until the batch is durable and the
	// mirror updated, which is what makes the compare-and-swap atomic: Pebble
	// has no transactions, so nothing else stops two writers from both
	// passing the compare. Batches on different refs hold different locks and
	// can therefore be in their fsync at the same time, sharing Pebble's group
	// commit.
	locks keyedmutex.Mutex

	// refsMu guards refs, the in-memory mirror of every reference. Invariant:
	// refs holds exactly the durable reference values. Apply updates an entry
	// only after its batch is synced and while holding that ref's lock, so a
	// compare-and-swap reads the mirror instead of disk, and GetRef never
	// shows a value a crash could take back.
	refsMu sync.RWMutex
	refs   map[string][]byte

	// seqMu orders log appends; see commit in apply.go. It is held only while
	// a batch is handed to Pebble's commit pipeline, never across an fsync.
	seqMu   sync.Mutex
	nextSeq uint64 // guarded by seqMu; the seq the next log record gets

	// durableSeq is the highest log seq known to be durable. ReadLog shows
	// nothing above it. Because the WAL is synced as a prefix, every record
	// at or below it is durable too.
	durableSeq atomic.Uint64

	// failed is set when a WAL write or sync fails after its batch became
	// visible in Pebble. The mirror and Pebble may then disagree, and
	// Pebble's log writer keeps the error, so every later Apply is refused
	// until the reopen loop (recover.go) has reopened the database; reads
	// keep working.
	failed atomic.Pointer[error]
}

// enter admits a call unless the backend is closed. A nil error must be
// paired with leave.
func (b *Backend) enter(op string) error {
	b.life.RLock()
	if b.closed {
		b.life.RUnlock()
		return fmt.Errorf("pebblebackend: %s on %s: %w", op, b.dir, backend.ErrClosed)
	}
	if b.db == nil {
		b.life.RUnlock()
		return fmt.Errorf("pebblebackend: %s on %s: %w: the store is being reopened after a failed write", op, b.dir, backend.ErrUnavailable)
	}
	return nil
}

// Writable returns nil while the backend can make writes durable, and
// otherwise an error wrapping backend.ErrUnavailable that says why: the
// disk refuses writes (full, or the directory unwritable), or a write
// failed and the database is being reopened. Apply refuses batches, and
// writes nothing, while it is not nil.
func (b *Backend) Writable() error {
	if wedged := b.wedged.Load(); wedged != nil {
		return fmt.Errorf("%w: the store cannot take writes until floe is restarted: %w", backend.ErrUnavailable, *wedged)
	}
	if failed := b.failed.Load(); failed != nil {
		return fmt.Errorf("%w: a write could not be made durable, the store is reopened once the disk takes writes: %w", backend.ErrUnavailable, *failed)
	}
	if err := b.guard.refusing(); err != nil {
		return fmt.Errorf("%w: %w", backend.ErrUnavailable, err)
	}
	return nil
}

// FaultStats are the backend's counts of storage faults, for metrics.
type FaultStats struct {
	// DiskRefusals counts the times the disk started refusing writes.
	DiskRefusals uint64
	// Reopens counts the database reopened after a failed write.
	Reopens uint64
}

// Faults returns the backend's fault counts.
func (b *Backend) Faults() FaultStats {
	return FaultStats{DiskRefusals: b.guard.episodes.Load(), Reopens: b.reopens.Load()}
}

func (b *Backend) leave() { b.life.RUnlock() }

// Close waits for in-flight calls to finish, then closes the database. Calls
// made after Close, including a second Close, return backend.ErrClosed.
//
// While the disk refuses writes Close does not wait for the database to
// close: that waits for the writes the guard holds, which is until the disk
// takes them. It returns an error saying so instead, and the process can
// exit: every acknowledged write is in the synced WAL and is replayed at
// the next Open, as after a crash. (If the disk takes writes again before
// the process ends, the database closes by itself.)
func (b *Backend) Close() error {
	b.closeOnce.Do(func() { close(b.closing) })
	if wedged := b.wedged.Load(); wedged != nil {
		return fmt.Errorf("pebblebackend: close %s: left open, Pebble failed inside a commit: %w; every acknowledged write is in the synced WAL and is replayed when the store is opened next", b.dir, *wedged)
	}
	done := make(chan error, 1)
	go func() { done <- b.close() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := b.guard.refusing(); err != nil {
			return fmt.Errorf("pebblebackend: close %s: left open, %w; every acknowledged write is in the synced WAL and is replayed when the store is opened next", b.dir, err)
		}
		select {
		case err := <-done:
			return err
		case <-tick.C:
		}
	}
}

// close waits for calls in flight, then closes the database.
func (b *Backend) close() error {
	b.life.Lock()
	defer b.life.Unlock()
	if b.closed {
		return fmt.Errorf("pebblebackend: close %s: %w", b.dir, backend.ErrClosed)
	}
	b.closed = true
	if b.db == nil {
		return nil // a reopen closed it and could not open it again
	}
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("pebblebackend: close %s: %w", b.dir, err)
	}
	return nil
}
