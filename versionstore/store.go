package versionstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// DefaultBranch is the branch every store starts with.
const DefaultBranch = "main"

// Options configure a Store.
type Options struct {
	Logger *slog.Logger
	// CacheBytes bounds the decoded-object cache; 0 means 128 MiB.
	CacheBytes int64
	// Now is the clock for commit and reference-log times; nil is
	// time.Now. Tests set it to make histories reproducible.
	Now func() time.Time
	// MaxGroup bounds how many queued writes one durable batch carries;
	// 0 means 256.
	MaxGroup int
	// TracerProvider traces every write as a span of the caller's trace,
	// with the group commit's stages below it: queue wait, the round that
	// applies it in memory, the durable (fsynced) batch. nil records
	// nothing.
	TracerProvider trace.TracerProvider
	// ScratchRefPrefixes name references whose writes are acknowledged
	// before they are durable (backend.Batch.Deferred): a crash may lose
	// such a write, but never once a later durable write has returned, so
	// a durable ref moved to a scratch ref's commit holds everything that
	// commit names. The merge queue's candidate branches are scratch: the
	// queue builds each member's merge on them, a crash drops them anyway,
	// and the landing that names their commits is durable.
	ScratchRefPrefixes []string
}

// Store is the version store. All methods are safe for concurrent use.
type Store struct {
	be       backend.Backend
	logger   *slog.Logger
	now      func() time.Time
	cache    *objectCache
	trees    *treeRegistry // unpersisted intermediate trees; see intermediate.go
	refs     *refMirror
	maxGroup int
	tracer   trace.Tracer // see tracing.go
	scratch  []string     // Options.ScratchRefPrefixes
	// shared is set when other processes write the backend too
	// (backend.Shared): refs is then only the committers' working copy,
	// and every read of a reference goes to the backend; see sharedRefs.
	shared bool
	// multi reads many objects in one round trip, and locker holds a ref
	// against other replicas; each set on a shared backend that can (see
	// prefetch.go, and lockedRound in committer.go).
	multi  backend.ObjectsGetter
	locker backend.RefLocker

	queuesMu sync.Mutex
	queues   map[string]*refQueue

	closeMu sync.RWMutex // held shared by every write in flight
	closed  atomic.Bool

	stats Stats
}

// Stats are cumulative counters, exported as metrics by the server.
type Stats struct {
	Commits        atomic.Uint64 // commits made durable
	Batches        atomic.Uint64 // durable batches written
	Conflicts      atomic.Uint64 // writes refused with a ConflictError
	Rebases        atomic.Uint64 // commits applied onto a head that moved since their expected hash
	BackendRetries atomic.Uint64 // batches retried after the backend saw a concurrent ref change
	TreesRebuilt   atomic.Uint64 // intermediate trees rebuilt from their commits (see intermediate.go)
	LockedRounds   atomic.Uint64 // rounds built after waiting for the ref's row lock, other replicas contending (lockedRound)
	// UnavailableWrites counts writes refused because the storage could
	// not take them (a full disk, a database down): nothing was written.
	UnavailableWrites atomic.Uint64
	// UnknownOutcomes counts writes whose outcome the storage could not
	// confirm: they may have happened.
	UnknownOutcomes atomic.Uint64

	writable func() error // the store's Writable, for the gauge
}

// Writable reports whether the store's storage takes writes now; see
// Store.Writable.
func (st *Stats) Writable() bool { return st.writable == nil || st.writable() == nil }

// Open opens a store over be, creating the default branch on first use.
// The store owns be and closes it in Close.
func Open(ctx context.Context, be backend.Backend, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 128 << 20
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxGroup <= 0 {
		opts.MaxGroup = 256
	}
	s := &Store{
		be:       be,
		logger:   opts.Logger,
		now:      func() time.Time { return opts.Now().UTC().Truncate(time.Microsecond) },
		cache:    newObjectCache(opts.CacheBytes),
		trees:    newTreeRegistry(),
		maxGroup: opts.MaxGroup,
		scratch:  slices.Clone(opts.ScratchRefPrefixes),
		queues:   map[string]*refQueue{},
		tracer:   tracerOf(opts.TracerProvider),
	}
	s.stats.writable = s.Writable
	if sh, ok := be.(backend.Shared); ok && sh.Shared() {
		s.shared = true
		s.multi, _ = be.(backend.ObjectsGetter)
		s.locker, _ = be.(backend.RefLocker)
	}
	refs, err := s.loadRefs(ctx)
	if err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		// A fresh store; main can never be deleted, so no refs at all
		// means nothing was ever initialised.
		r := (&Ref{Name: DefaultBranch, Type: Branch, Head: NoAncestor, Created: s.now()}).withRaw()
		entry := encodeRefLog(&RefLogEntry{Ref: r.Name, RefType: Branch, Op: RefLogCreate, To: NoAncestor, Principal: "floe", Time: r.Created})
		err := be.Apply(ctx, backend.Batch{
			Refs: []backend.RefUpdate{{Name: r.Name, New: r.raw}},
			Log:  [][]byte{entry},
		})
		switch {
		case errors.Is(err, backend.ErrRefConflict) && s.shared:
			// Another replica initialised the shared store first.
			if refs, err = s.loadRefs(ctx); err != nil {
				return nil, err
			}
		case err != nil:
			return nil, fmt.Errorf("initialise default branch: %w", err)
		default:
			refs = []*Ref{r}
		}
	}
	s.refs = newRefMirror(refs)
	if s.refs.get(DefaultBranch) == nil {
		return nil, fmt.Errorf("%w: default branch %q is missing", ErrCorrupt, DefaultBranch)
	}
	return s, nil
}

func (s *Store) loadRefs(ctx context.Context) ([]*Ref, error) {
	stored, err := s.be.ListRefs(ctx)
	if err != nil {
		return nil, fmt.Errorf("load references: %w", err)
	}
	refs := make([]*Ref, 0, len(stored))
	for _, sr := range stored {
		r, err := decodeRef(sr.Value)
		if err != nil {
			return nil, err
		}
		if r.Name != sr.Name {
			return nil, fmt.Errorf("%w: reference stored as %q is named %q", ErrCorrupt, sr.Name, r.Name)
		}
		refs = append(refs, r)
	}
	return refs, nil
}

// Close waits for writes in flight, then closes the backend.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return ErrClosed
	}
	s.closeMu.Lock() // waits for in-flight writes
	defer s.closeMu.Unlock()
	return s.be.Close()
}

// Check is a cheap readiness probe: the store is open and the default
// branch's head commit is readable.
func (s *Store) Check(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	r, err := s.getRef(ctx, DefaultBranch)
	if err != nil {
		return fmt.Errorf("default branch %q: %w", DefaultBranch, err)
	}
	if _, err := s.commit(ctx, r.Head); err != nil {
		return fmt.Errorf("read head of %q: %w", DefaultBranch, err)
	}
	if err := s.Writable(); err != nil {
		return fmt.Errorf("writes: %w", err)
	}
	return nil
}

// Writable returns nil unless the backend knows its storage does not take
// writes now (backend.Writability); then an error wrapping ErrUnavailable
// that says why. Reads may still be served.
func (s *Store) Writable() error {
	if w, ok := s.be.(backend.Writability); ok {
		return w.Writable()
	}
	return nil
}

// Stats returns the store's counters.
func (s *Store) Stats() *Stats { return &s.stats }

// GetRef returns a reference by name.
func (s *Store) GetRef(name string) (*Ref, error) {
	return s.getRef(context.Background(), name)
}

func (s *Store) getRef(ctx context.Context, name string) (*Ref, error) {
	if s.shared {
		return s.readSharedRef(ctx, name)
	}
	if r := s.refs.get(name); r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("%q: %w", name, ErrReferenceNotFound)
}

// ListRefs returns every reference, ordered by name.
func (s *Store) ListRefs() []*Ref {
	if s.shared {
		return s.listSharedRefs()
	}
	return s.refs.list()
}

// ReadCommit returns one commit. NoAncestor reads as an empty root.
func (s *Store) ReadCommit(ctx context.Context, h Hash) (*Commit, error) {
	c, err := s.commit(ctx, h)
	if err != nil {
		return nil, err
	}
	return c.clone(), nil
}

// GetContent returns the content stored under key at a commit.
func (s *Store) GetContent(ctx context.Context, at Hash, key ContentKey) (*Content, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	c, err := s.commit(ctx, at)
	if err != nil {
		return nil, err
	}
	src, err := s.treeSource(ctx, c, s)
	if err != nil {
		return nil, err
	}
	v, ok, err := lookup(ctx, src, c.Tree, key.Encode())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%q at %s: %w", key.String(), at, ErrContentNotFound)
	}
	ct, err := s.content(ctx, v)
	if err != nil {
		return nil, err
	}
	return ct.Clone(), nil
}

// GetContents returns the contents of the keys present at a commit; absent
// keys are left out, as Nessie does.
func (s *Store) GetContents(ctx context.Context, at Hash, keys []ContentKey) (map[string]*Content, error) {
	c, err := s.commit(ctx, at)
	if err != nil {
		return nil, err
	}
	src, err := s.treeSource(ctx, c, s)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Content, len(keys))
	for _, k := range keys {
		if err := k.Validate(); err != nil {
			return nil, err
		}
		v, ok, err := lookup(ctx, src, c.Tree, k.Encode())
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		ct, err := s.content(ctx, v)
		if err != nil {
			return nil, err
		}
		out[string(k.Encode())] = ct.Clone()
	}
	return out, nil
}

// beginWrite takes the shared close lock; callers release it with
// s.closeMu.RUnlock().
func (s *Store) beginWrite() error {
	s.closeMu.RLock()
	if s.closed.Load() {
		s.closeMu.RUnlock()
		return ErrClosed
	}
	return nil
}
