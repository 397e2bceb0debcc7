package changefeed

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/floe-catalog/floe/versionstore"
)

// Options configure a Feed.
type Options struct {
	// Summaries, if set, fills in the snapshot summaries of table events.
	Summaries Summaries
	// PollInterval is how often a waiting read looks for new log entries;
	// 0 means 100ms. The log is polled rather than notified so that a
	// replica also sees the entries other replicas append.
	PollInterval time.Duration
	Logger       *slog.Logger
}

// Limits of one read.
const (
	// DefaultLimit and MaxLimit bound the events of one page.
	DefaultLimit = 100
	MaxLimit     = 1000
	// maxScan bounds the log entries one read looks at, so that a
	// consumer whose filter matches little still gets an answer soon,
	// with a cursor that moved on.
	maxScan = 4096
	// logBatch is how many log entries one store read returns.
	logBatch = 256
)

// ErrDraining ends waits and streams while the process shuts down.
var ErrDraining = errors.New("change feed: the server is shutting down")

// Feed reads the catalog's change feed from a version store.
type Feed struct {
	store  *versionstore.Store
	derive deriver
	poll   time.Duration

	tail tail

	drainOnce sync.Once
	drained   chan struct{}

	cache derivedCache
}

// New returns the feed of store.
func New(store *versionstore.Store, opts Options) *Feed {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 100 * time.Millisecond
	}
	f := &Feed{
		store:   store,
		derive:  deriver{store: store, summaries: opts.Summaries, logger: opts.Logger},
		poll:    opts.PollInterval,
		drained: make(chan struct{}),
	}
	f.tail.init()
	return f
}

// Query selects what a read returns.
type Query struct {
	// After is where to resume: the ID of the last event handled, or the
	// Next of the last page.
	After Cursor
	// Refs, if any, keep only events on these references.
	Refs []string
	// Types, if any, keep only events of these types.
	Types []Type
	// Limit bounds the page: 0 is DefaultLimit, at most MaxLimit.
	Limit int
	// Allow, if set, decides whether the reader may see an event; the
	// API asks the policy whether the caller may read the event's
	// reference. An error ends the read. Events it refuses are passed
	// over: the cursor moves past them.
	Allow func(context.Context, *Event) (bool, error)
}

// Page is one read's answer.
type Page struct {
	Events []Event
	// Next is where the next read resumes: past the last event returned
	// and every event passed over after it. It moves even when Events is
	// empty, past entries that had nothing for the reader.
	Next Cursor
}

// Head returns the cursor past every event that exists now: a consumer
// that wants only what happens from now on starts there.
func (f *Feed) Head(ctx context.Context) (Cursor, error) {
	seq, err := f.store.LastRefLogSeq(ctx)
	if err != nil {
		return Cursor{}, err
	}
	return afterEntry(seq), nil
}

// Read returns the events after q.After that q selects, without waiting:
// an empty page when there are none yet.
func (f *Feed) Read(ctx context.Context, q Query) (*Page, error) {
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	page := &Page{Next: q.After}
	// A cursor inside an entry re-reads that entry for the events after
	// its index.
	from := q.After.Seq
	if q.After.Index != EndOfEntry && from > 0 {
		from--
	}
	scanned := 0
	for scanned < maxScan {
		entries, err := f.store.RefLogAfter(ctx, from, logBatch)
		if err != nil {
			return nil, err
		}
		if len(entries) == 0 {
			return page, nil
		}
		for _, e := range entries {
			scanned++
			from = e.Seq
			if len(q.Refs) > 0 && !slices.Contains(q.Refs, e.Ref) {
				page.Next = afterEntry(e.Seq) // nothing here for the reader; not derived
				continue
			}
			evs, err := f.events(ctx, e)
			if err != nil {
				return nil, err
			}
			for i := range evs {
				ev := &evs[i]
				if !q.After.Before(ev.ID) {
					continue // consumed already (the cursor's own entry)
				}
				page.Next = ev.ID
				if i == len(evs)-1 {
					page.Next = afterEntry(e.Seq)
				}
				if len(q.Types) > 0 && !slices.Contains(q.Types, ev.Type) {
					continue
				}
				if q.Allow != nil {
					ok, err := q.Allow(ctx, ev)
					if err != nil {
						return nil, err
					}
					if !ok {
						continue
					}
				}
				page.Events = append(page.Events, *ev)
				if len(page.Events) == limit {
					return page, nil
				}
			}
			page.Next = afterEntry(e.Seq)
		}
	}
	return page, nil
}

// Wait is Read that, when nothing is there for the reader yet, waits for
// the log to grow and reads again, until it has events or ctx ends; then
// it returns the page it has (empty, with Next moved past what it passed
// over) and no error. ctx's end is the long poll's deadline, whenever it
// comes: a read it cuts short is an empty answer resuming where that read
// began, never an error (on a loaded store the deadline often falls in a
// read). It returns ErrDraining once Drain was called.
func (f *Feed) Wait(ctx context.Context, q Query) (*Page, error) {
	for {
		page, err := f.Read(ctx, q)
		if err != nil && ctx.Err() != nil {
			return &Page{Next: q.After}, nil
		}
		if err != nil || len(page.Events) > 0 {
			return page, err
		}
		q.After = page.Next
		switch err := f.waitBeyond(ctx, page.Next.Seq); {
		case errors.Is(err, ErrDraining):
			return page, err
		case err != nil:
			return page, nil // the caller's deadline: an empty answer
		}
	}
}

// Drain ends every wait, now and later, with ErrDraining: a server that
// is shutting down answers its long polls and closes its streams instead
// of keeping its drain waiting for them.
func (f *Feed) Drain() { f.drainOnce.Do(func() { close(f.drained) }) }

// Draining returns a channel closed by Drain.
func (f *Feed) Draining() <-chan struct{} { return f.drained }

// events returns the events of one entry, derived once for every reader
// that reads it while it is recent.
func (f *Feed) events(ctx context.Context, e *versionstore.RefLogEntry) ([]Event, error) {
	if evs, ok := f.cache.get(e.Seq); ok {
		return evs, nil
	}
	evs, err := f.derive.derive(ctx, e)
	if err != nil {
		return nil, err
	}
	f.cache.add(e.Seq, evs)
	return evs, nil
}

// waitBeyond returns once the log holds an entry after seq, or with ctx's
// error, or ErrDraining.
func (f *Feed) waitBeyond(ctx context.Context, seq uint64) error {
	last, changed, err := f.tail.enter(ctx, f)
	if err != nil {
		return err
	}
	defer f.tail.leave()
	for last <= seq {
		select {
		case <-changed:
			last, changed = f.tail.current()
		case <-ctx.Done():
			return ctx.Err()
		case <-f.drained:
			return ErrDraining
		}
	}
	return nil
}

// tail is the newest log seq the feed knows, kept by one poller goroutine
// that runs while somebody waits for the log to grow: one read of the log
// per interval however many consumers wait.
type tail struct {
	mu      sync.Mutex
	last    uint64
	changed chan struct{} // closed, and replaced, when last grows
	waiters int
	polling bool
}

func (t *tail) init() { t.changed = make(chan struct{}) }

// enter counts a waiter and returns the newest seq and the channel closed
// when it grows. Without a poller running it reads the log's tail first,
// so a waiter never sleeps on a value older than what it already read,
// and starts one.
func (t *tail) enter(ctx context.Context, f *Feed) (uint64, <-chan struct{}, error) {
	select {
	case <-f.drained:
		return 0, nil, ErrDraining
	default:
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.polling {
		last, err := f.store.LastRefLogSeq(ctx)
		if err != nil {
			return 0, nil, err
		}
		t.advance(last)
		t.polling = true
		go t.run(f)
	}
	t.waiters++
	return t.last, t.changed, nil
}

// leave uncounts a waiter.
func (t *tail) leave() {
	t.mu.Lock()
	t.waiters--
	t.mu.Unlock()
}

// current returns the newest seq and the channel closed when it grows.
func (t *tail) current() (uint64, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last, t.changed
}

// advance records a newer seq and wakes the waiters; t.mu is held.
func (t *tail) advance(last uint64) {
	if last > t.last {
		t.last = last
		close(t.changed)
		t.changed = make(chan struct{})
	}
}

// run polls the log's newest seq until a poll finds nobody waiting, or
// the feed drains.
func (t *tail) run(f *Feed) {
	ticker := time.NewTicker(f.poll)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-f.drained:
			t.mu.Lock()
			t.polling = false
			t.mu.Unlock()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*f.poll+time.Second)
		last, err := f.store.LastRefLogSeq(ctx)
		cancel()
		t.mu.Lock()
		if err == nil {
			t.advance(last)
		} else {
			f.derive.logger.Warn("change feed: reading the log's tail failed", "err", err)
		}
		if t.waiters == 0 {
			t.polling = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
}

// derivedCache keeps the events of recent entries, which every consumer
// following the head reads: derived once, not once per consumer.
type derivedCache struct {
	mu    sync.Mutex
	bySeq map[uint64][]Event
	order []uint64
}

// maxDerived bounds the entries cached.
const maxDerived = 1024

func (c *derivedCache) get(seq uint64) ([]Event, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	evs, ok := c.bySeq[seq]
	return evs, ok
}

func (c *derivedCache) add(seq uint64, evs []Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bySeq == nil {
		c.bySeq = map[uint64][]Event{}
	}
	if _, ok := c.bySeq[seq]; ok {
		return
	}
	if len(c.order) == maxDerived {
		delete(c.bySeq, c.order[0])
		c.order = c.order[1:]
	}
	c.bySeq[seq] = evs
	c.order = append(c.order, seq)
}
