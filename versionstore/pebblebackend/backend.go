package pebblebackend

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/floe-catalog/floe/internal/keyedmutex"
	"github.com/floe-catalog/floe/versionstore/backend"
)

var _ backend.Backend = (*Backend)(nil)

// Backend is a backend.Backend over one Pebble database. All methods are safe
// for concurrent use.
type Backend struct {
	db   *pebble.DB
	dir  string
	sync bool

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

	// failed is set when a WAL sync fails after its batch became visible in
	// Pebble. The mirror and Pebble may then disagree, so every later Apply
	// is refused; reads keep working.
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
	return nil
}

func (b *Backend) leave() { b.life.RUnlock() }

// Close waits for in-flight calls to finish, then closes the database. Calls
// made after Close, including a second Close, return backend.ErrClosed.
func (b *Backend) Close() error {
	b.life.Lock()
	defer b.life.Unlock()
	if b.closed {
		return fmt.Errorf("pebblebackend: close %s: %w", b.dir, backend.ErrClosed)
	}
	b.closed = true
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("pebblebackend: close %s: %w", b.dir, err)
	}
	return nil
}
