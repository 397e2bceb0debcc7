package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/floe-catalog/floe/versionstore"
)

// Errors callers branch on.
var (
	// ErrHeld reports a lease another holder holds and has not let expire.
	ErrHeld = errors.New("lease is held by another holder")
	// ErrLost reports a lease that is no longer the caller's: it expired
	// and was taken, or was released.
	ErrLost = errors.New("lease lost")
)

// recordPrefix keeps leases apart from other records.
const recordPrefix = "lease/"

// Lease is one holding of a named lease.
type Lease struct {
	Name   string
	Holder string
	// Epoch identifies the holding and orders holders: it is the holder's
	// clock at acquisition in microseconds, and a new holder can only
	// acquire once the previous holding expired, at least a TTL later, so
	// epochs rise as long as replicas' clocks agree to within a TTL. (An
	// epoch kept in the record would be lost when the record expires.)
	Epoch   int64
	Expires time.Time

	raw []byte // the stored record value: holder and epoch
}

// stored is a lease's record value; its expiry is the record's.
type stored struct {
	Holder string `json:"holder"`
	Epoch  int64  `json:"epoch"`
}

// Leases hands out leases kept in one store.
type Leases struct {
	store *versionstore.Store
	now   func() time.Time
}

// New returns leases over store; now is the clock (nil: time.Now). Replicas'
// clocks must agree to well within a lease's TTL.
func New(store *versionstore.Store, now func() time.Time) *Leases {
	if now == nil {
		now = time.Now
	}
	return &Leases{store: store, now: func() time.Time { return now().UTC().Truncate(time.Microsecond) }}
}

// read returns the live holding of the lease, or nil.
func (l *Leases) read(ctx context.Context, name string) (*Lease, error) {
	r, err := l.store.GetRecord(ctx, recordPrefix+name)
	if errors.Is(err, versionstore.ErrRecordNotFound) {
		return nil, nil // never held, released, or expired
	}
	if err != nil {
		return nil, fmt.Errorf("read lease %q: %w", name, err)
	}
	var st stored
	if err := json.Unmarshal(r.Value, &st); err != nil {
		return nil, fmt.Errorf("lease %q holds %q: %w", name, r.Value, err)
	}
	return &Lease{Name: name, Holder: st.Holder, Epoch: st.Epoch, Expires: r.Expires, raw: r.Value}, nil
}

// write stores a holding until expires, if the lease's record still holds
// prev (nil: no live holding).
func (l *Leases) write(ctx context.Context, lease *Lease, prev []byte) error {
	cond := &versionstore.RecordCondition{Exists: prev != nil, Value: prev}
	return l.store.PutRecord(ctx, versionstore.Record{Key: recordPrefix + lease.Name, Value: lease.raw, Expires: lease.Expires, If: cond})
}

// Acquire takes the lease for holder for ttl when nobody holds it (never
// held, released or expired), or renews it when holder already holds it.
// Otherwise it fails with an error wrapping ErrHeld. Two replicas acquiring
// at once are decided by the record's compare-and-swap: one wins, the
// other gets ErrHeld.
func (l *Leases) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (*Lease, error) {
	if name == "" || holder == "" || ttl <= 0 {
		return nil, fmt.Errorf("lease: a name, a holder and a positive ttl are needed")
	}
	cur, err := l.read(ctx, name)
	if err != nil {
		return nil, err
	}
	switch {
	case cur != nil && cur.Holder == holder:
		return l.Renew(ctx, cur, ttl)
	case cur != nil:
		return nil, fmt.Errorf("lease %q: %w: %s until %s", name, ErrHeld, cur.Holder, cur.Expires.Format(time.RFC3339))
	}
	now := l.now()
	lease := &Lease{Name: name, Holder: holder, Epoch: now.UnixMicro(), Expires: now.Add(ttl)}
	if lease.raw, err = json.Marshal(stored{Holder: holder, Epoch: lease.Epoch}); err != nil {
		return nil, err
	}
	err = l.write(ctx, lease, nil)
	if errors.Is(err, versionstore.ErrRecordConflict) {
		return nil, fmt.Errorf("lease %q: %w: taken concurrently", name, ErrHeld)
	}
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// Renew extends a holding by ttl from now. It fails with an error wrapping
// ErrLost if the holding ended (expired, released, or another holder's).
func (l *Leases) Renew(ctx context.Context, lease *Lease, ttl time.Duration) (*Lease, error) {
	next := *lease
	next.Expires = l.now().Add(ttl)
	err := l.write(ctx, &next, lease.raw)
	if errors.Is(err, versionstore.ErrRecordConflict) {
		return nil, fmt.Errorf("lease %q epoch %d: %w", lease.Name, lease.Epoch, ErrLost)
	}
	if err != nil {
		return nil, err
	}
	return &next, nil
}

// Release ends a holding now; releasing one that already ended does
// nothing.
func (l *Leases) Release(ctx context.Context, lease *Lease) error {
	ended := *lease
	ended.Expires = l.now() // an expired record reads as absent
	err := l.write(ctx, &ended, lease.raw)
	if errors.Is(err, versionstore.ErrRecordConflict) {
		return nil
	}
	return err
}

// Fence is a record to carry in a commit, merge or transplant made under
// the lease (their Record field): it rewrites the lease's record as it is,
// on condition that the holding is still live, so the commit is refused
// (ErrRecordConflict) once the holding expired or another holder took the
// lease. Fence the latest Lease (Renew's), or the write would shorten the
// holding to an older expiry. A commit carries one record, so a writer that
// needs its own record too must keep the lease's state in it.
func (l *Leases) Fence(lease *Lease) *versionstore.Record {
	return &versionstore.Record{
		Key: recordPrefix + lease.Name, Value: lease.raw, Expires: lease.Expires,
		If: &versionstore.RecordCondition{Exists: true, Value: lease.raw},
	}
}

// Holding is a lease held and renewed in the background, every ttl/3,
// until it is released, stopped or lost. Its Context ends when the
// holding ends; Fenced serializes a fenced write with the renewals, so a
// write never carries an expiry older than the record holds (which would
// shorten the holding) and a renewal never changes the record between a
// fenced write's read of it and the write (which would refuse the write).
type Holding struct {
	leases *Leases
	ttl    time.Duration
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}

	mu    sync.Mutex // held across a renewal or a fenced write
	lease *Lease
}

// Hold acquires the lease (or returns ErrHeld at once) and keeps renewing
// it until Release or Stop, or until a renewal finds it lost (ErrLost), or
// until transient renewal failures have left less than one renewal
// interval of it: then its Context ends, before another holder can take
// the lease, as far as clocks agree.
func (l *Leases) Hold(ctx context.Context, name, holder string, ttl time.Duration) (*Holding, error) {
	lease, err := l.Acquire(ctx, name, holder, ttl)
	if err != nil {
		return nil, err
	}
	h := &Holding{leases: l, ttl: ttl, lease: lease, done: make(chan struct{})}
	h.ctx, h.cancel = context.WithCancelCause(ctx)
	go h.renew()
	return h, nil
}

func (h *Holding) renew() {
	defer close(h.done)
	every := h.ttl / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		next, err := h.leases.Renew(h.ctx, h.lease, h.ttl)
		if err == nil {
			h.lease = next
		}
		expires := h.lease.Expires
		h.mu.Unlock()
		switch {
		case err == nil:
		case errors.Is(err, ErrLost), !h.leases.now().Add(every).Before(expires):
			h.cancel(fmt.Errorf("lease %q: renewal failed: %w", h.lease.Name, err))
			return
		}
		// A transient failure (the store unreachable): the holding is
		// still live; the next tick tries again.
	}
}

// Context ends when the holding ends; its cause says why.
func (h *Holding) Context() context.Context { return h.ctx }

// Current is the latest holding.
func (h *Holding) Current() *Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease
}

// Fenced runs write with the fence of the latest holding, renewals held
// off meanwhile. A write the fence refused fails with ErrRecordConflict;
// the holding is then lost and its Context ends.
func (h *Holding) Fenced(write func(fence *versionstore.Record) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	err := write(h.leases.Fence(h.lease))
	if errors.Is(err, versionstore.ErrRecordConflict) {
		// The write's own records may have failed instead: look.
		if cur, rerr := h.leases.read(context.WithoutCancel(h.ctx), h.lease.Name); rerr == nil && (cur == nil || cur.Holder != h.lease.Holder || cur.Epoch != h.lease.Epoch) {
			h.cancel(fmt.Errorf("lease %q epoch %d: a fenced write was refused: %w", h.lease.Name, h.lease.Epoch, ErrLost))
		}
	}
	return err
}

// Stop stops renewing without releasing: the lease stays held until its
// expiry, as a crashed holder leaves it. Tests use it to play a crash.
func (h *Holding) Stop() {
	h.cancel(errors.New("holding stopped"))
	<-h.done
}

// Release stops renewing and ends the holding now; releasing one that
// already ended does nothing.
func (h *Holding) Release(ctx context.Context) error {
	h.cancel(nil)
	<-h.done
	return h.leases.Release(ctx, h.Current())
}

// Run holds the lease for fn's whole run, as one garbage collection or one
// expiry sweep across replicas needs: it acquires it (or returns ErrHeld at
// once), renews it every ttl/3, and cancels fn's context if a renewal
// fails, so that fn stops before another replica can take over. current
// returns the latest holding (for Fence). It releases the lease when fn
// returns.
func (l *Leases) Run(ctx context.Context, name, holder string, ttl time.Duration, fn func(ctx context.Context, current func() *Lease) error) error {
	h, err := l.Hold(ctx, name, holder, ttl)
	if err != nil {
		return err
	}
	err = fn(h.ctx, h.Current)
	if cause := context.Cause(h.ctx); err == nil && cause != nil && ctx.Err() == nil {
		err = cause
	}
	return errors.Join(err, h.Release(context.WithoutCancel(ctx)))
}

// Lead makes holder one of several candidates to lead name until ctx
// ends: whenever nobody holds the lease it tries to acquire it (at once,
// then every ttl/3), and while it holds it runs fn with the holding's
// context, which ends when the holding is lost. A scheduler that must run
// on one replica at a time (a garbage collection, an expiry sweep) runs
// as fn. The lease is released when ctx ends or fn returns. A dead
// holder's lease is taken over within ttl plus ttl/3.
func (l *Leases) Lead(ctx context.Context, name, holder string, ttl time.Duration, logger *slog.Logger, fn func(ctx context.Context)) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	retry := time.NewTicker(ttl / 3)
	defer retry.Stop()
	for ctx.Err() == nil {
		h, err := l.Hold(ctx, name, holder, ttl)
		switch {
		case err == nil:
			logger.InfoContext(ctx, "lease: leading", "lease", name, "holder", holder, "epoch", h.Current().Epoch)
			fn(h.Context())
			if cause := context.Cause(h.Context()); ctx.Err() == nil && cause != nil {
				logger.WarnContext(ctx, "lease: no longer leading", "lease", name, "holder", holder, "cause", cause)
			}
			if err := h.Release(context.WithoutCancel(ctx)); err != nil {
				logger.WarnContext(ctx, "lease: cannot release; it expires by itself", "lease", name, "err", err)
			}
		case !errors.Is(err, ErrHeld) && ctx.Err() == nil:
			logger.WarnContext(ctx, "lease: cannot acquire", "lease", name, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-retry.C:
		}
	}
}
