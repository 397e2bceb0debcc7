package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Run holds the lease for fn's whole run, as one garbage collection or one
// expiry sweep across replicas needs: it acquires it (or returns ErrHeld at
// once), renews it every ttl/3, and cancels fn's context if a renewal
// fails, so that fn stops before another replica can take over. current
// returns the latest holding (for Fence). It releases the lease when fn
// returns.
func (l *Leases) Run(ctx context.Context, name, holder string, ttl time.Duration, fn func(ctx context.Context, current func() *Lease) error) error {
	lease, err := l.Acquire(ctx, name, holder, ttl)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	current := func() *Lease {
		mu.Lock()
		defer mu.Unlock()
		return lease
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
				next, err := l.Renew(runCtx, current(), ttl)
				if err != nil {
					cancel(fmt.Errorf("lease %q: renewal failed: %w", name, err))
					return
				}
				mu.Lock()
				lease = next
				mu.Unlock()
			}
		}
	}()
	err = fn(runCtx, current)
	cancel(nil)
	<-renewed
	if cause := context.Cause(runCtx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	return errors.Join(err, l.Release(context.WithoutCancel(ctx), current()))
}
