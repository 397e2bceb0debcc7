package maintenance_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/housekeeping/maintenance"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// clock is a test clock moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var orders = maintenance.Target{Branch: "main", Table: versionstore.ContentKey{"sales", "orders"}}

// newLocks opens a store on disk with table sales.orders on main and the
// locks over it, on a test clock starting now (the store's own record
// expiry runs on the real clock; see recordGrace).
func newLocks(t *testing.T) (*maintenance.Service, *versionstore.Store, *clock, *prometheus.Registry) {
	t.Helper()
	be, err := pebblebackend.Open(t.TempDir(), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := versionstore.Open(t.Context(), be, versionstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	main, err := store.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Commit(t.Context(), versionstore.CommitRequest{Branch: "main", Expected: main.Head,
		Meta: versionstore.CommitMeta{Message: "tables"},
		Operations: []versionstore.Operation{
			{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"sales"}, Content: &versionstore.Content{Type: versionstore.Namespace}},
			{Kind: versionstore.OpPut, Key: orders.Table, Content: &versionstore.Content{Type: versionstore.IcebergTable, MetadataLocation: "file:///w/sales/orders/metadata/00000.metadata.json"}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Now()}
	reg := prometheus.NewRegistry()
	svc, err := maintenance.New(store, maintenance.Options{Now: clk.Now, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	return svc, store, clk, reg
}

func held(t *testing.T, err error) *maintenance.HeldError {
	t.Helper()
	he, ok := errors.AsType[*maintenance.HeldError](err)
	if !ok {
		t.Fatalf("got %v, want a *HeldError", err)
	}
	return he
}

func TestAcquireSkipsWhileHeldAndNamesTheHolder(t *testing.T) {
	svc, _, _, reg := newLocks(t)
	ctx := t.Context()
	lease, err := svc.Acquire(ctx, orders, maintenance.Holder{Principal: "alice", Job: "compact"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if lease.Token == "" || lease.ID != orders.ID() || lease.Holder.Principal != "alice" || !lease.Expires.Equal(lease.Acquired.Add(time.Hour)) {
		t.Fatalf("lease %+v", lease)
	}
	_, err = svc.Acquire(ctx, orders, maintenance.Holder{Principal: "bob", Job: "expire"}, 0)
	he := held(t, err)
	if he.Lock.Holder != (maintenance.Holder{Principal: "alice", Job: "compact"}) || !he.Lock.Expires.Equal(lease.Expires) {
		t.Fatalf("held by %+v, want alice's lease", he.Lock)
	}
	for _, want := range []string{"alice", `"compact"`, "sales.orders", "branch main", lease.Expires.UTC().Format(time.RFC3339)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), lease.Token) {
		t.Errorf("message %q reveals the token", err)
	}
	// The same table on another branch is another lock.
	if _, err := svc.Acquire(ctx, maintenance.Target{Branch: "dev", Table: orders.Table}, maintenance.Holder{Principal: "bob", Job: "x"}, 0); !errors.Is(err, versionstore.ErrReferenceNotFound) {
		t.Fatalf("lock on a missing branch: %v", err)
	}
	if got := counter(t, reg, "floe_maintenance_lock_skips_total"); got != 1 {
		t.Errorf("skips %v, want 1", got)
	}
	st, err := svc.Status(ctx, orders)
	if err != nil || st.Holder.Job != "compact" {
		t.Fatalf("status %+v, %v", st, err)
	}
}

func TestLeaseExpiryFreesTheLock(t *testing.T) {
	svc, _, clk, _ := newLocks(t)
	ctx := t.Context()
	first, err := svc.Acquire(ctx, orders, maintenance.Holder{Principal: "alice", Job: "crashed"}, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(10*time.Minute - time.Microsecond)
	if _, err := svc.Acquire(ctx, orders, maintenance.Holder{Principal: "bob", Job: "next"}, 0); err == nil {
		t.Fatal("acquired a lease a microsecond before the previous one expired")
	}
	clk.advance(time.Microsecond)
	if _, err := svc.Status(ctx, orders); !errors.Is(err, maintenance.ErrNotHeld) {
		t.Fatalf("status of an expired lease: %v, want ErrNotHeld", err)
	}
	if err := svc.CheckCommit(ctx, orders, "", maintenance.KindRewrite); err != nil {
		t.Fatalf("a commit under an expired lease: %v", err)
	}
	second, err := svc.Acquire(ctx, orders, maintenance.Holder{Principal: "bob", Job: "next"}, 0)
	if err != nil {
		t.Fatalf("acquire after expiry: %v", err)
	}
	// The crashed job's token neither renews nor releases bob's lease.
	held(t, func() error { _, err := svc.Renew(ctx, orders, first.Token, 0); return err }())
	held(t, svc.Release(ctx, orders, first.Token))
	if err := svc.CheckCommit(ctx, orders, first.Token, maintenance.KindExpire); err == nil {
		t.Fatal("a commit with the expired lease's token passed bob's lease")
	}
	if err := svc.CheckCommit(ctx, orders, second.Token, maintenance.KindExpire); err != nil {
		t.Fatalf("the holder's commit: %v", err)
	}
}

func TestRenewAndRelease(t *testing.T) {
	svc, _, clk, _ := newLocks(t)
	ctx := t.Context()
	lease, err := svc.Acquire(ctx, orders, maintenance.Holder{Principal: "alice", Job: "compact"}, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(9 * time.Minute)
	l, err := svc.Renew(ctx, orders, lease.Token, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Expires.Equal(clk.Now().UTC().Truncate(time.Microsecond).Add(10*time.Minute)) || !l.Acquired.Equal(lease.Acquired) {
		t.Fatalf("renewed %+v", l)
	}
	clk.advance(9 * time.Minute) // past the first expiry, within the renewed one
	if _, err := svc.Acquire(ctx, orders, maintenance.Holder{Principal: "bob", Job: "x"}, 0); err == nil {
		t.Fatal("acquired a renewed lease")
	}
	if _, err := svc.Renew(ctx, orders, "", 0); err == nil {
		t.Fatal("renewed without a token")
	}
	if err := svc.Release(ctx, orders, lease.Token); err != nil {
		t.Fatal(err)
	}
	if err := svc.Release(ctx, orders, lease.Token); !errors.Is(err, maintenance.ErrNotHeld) {
		t.Fatalf("second release: %v, want ErrNotHeld", err)
	}
	if _, err := svc.Renew(ctx, orders, lease.Token, 0); !errors.Is(err, maintenance.ErrNotHeld) {
		t.Fatalf("renew after release: %v, want ErrNotHeld", err)
	}
	if _, err := svc.Acquire(ctx, orders, maintenance.Holder{Principal: "bob", Job: "x"}, 0); err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	locks, err := svc.List(ctx, "")
	if err != nil || len(locks) != 1 || locks[0].Holder.Principal != "bob" {
		t.Fatalf("list %+v, %v", locks, err)
	}
	if locks, err := svc.List(ctx, "dev"); err != nil || len(locks) != 0 {
		t.Fatalf("list of dev %+v, %v", locks, err)
	}
}

// TestAcquireRaceHasOneWinner: acquirers racing for one free lock, and
// for one expired lease, through real store compare-and-swap: exactly one
// of them gets it each time, and the others are told who did.
func TestAcquireRaceHasOneWinner(t *testing.T) {
	svc, _, clk, reg := newLocks(t)
	ctx := t.Context()
	race := func(round int) {
		const n = 8
		var (
			wins    atomic.Int32
			winner  atomic.Value
			start   = make(chan struct{})
			wg      sync.WaitGroup
			refused = make([]*maintenance.HeldError, n)
		)
		for i := range n {
			wg.Go(func() {
				<-start
				lease, err := svc.Acquire(ctx, orders, maintenance.Holder{Principal: "p", Job: string(rune('a' + i))}, time.Minute)
				if err == nil {
					wins.Add(1)
					winner.Store(lease.Holder.Job)
					return
				}
				if he, ok := errors.AsType[*maintenance.HeldError](err); ok {
					refused[i] = he
					return
				}
				t.Errorf("round %d acquirer %d: %v", round, i, err)
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d acquirers won, want exactly 1", round, wins.Load())
		}
		for i, he := range refused {
			if he != nil && he.Lock.Holder.Job != winner.Load() {
				t.Errorf("round %d acquirer %d was told %q holds it; %q won", round, i, he.Lock.Holder.Job, winner.Load())
			}
		}
	}
	race(1)
	clk.advance(time.Minute) // the winner's lease ends: race for it again
	race(2)
	if got := counter(t, reg, "floe_maintenance_lock_acquisitions_total"); got != 2 {
		t.Errorf("acquisitions %v, want 2", got)
	}
}

func TestAcquireRefusesBadRequests(t *testing.T) {
	svc, _, _, _ := newLocks(t)
	ctx := t.Context()
	h := maintenance.Holder{Principal: "alice", Job: "j"}
	for name, tc := range map[string]struct {
		target maintenance.Target
		holder maintenance.Holder
		ttl    time.Duration
		want   error
	}{
		"no job":        {orders, maintenance.Holder{Principal: "alice"}, 0, maintenance.ErrInvalid},
		"ttl too short": {orders, h, time.Millisecond, maintenance.ErrInvalid},
		"ttl too long":  {orders, h, 25 * time.Hour, maintenance.ErrInvalid},
		"no namespace":  {maintenance.Target{Branch: "main", Table: versionstore.ContentKey{"orders"}}, h, 0, maintenance.ErrInvalid},
		"no such table": {maintenance.Target{Branch: "main", Table: versionstore.ContentKey{"sales", "nope"}}, h, 0, maintenance.ErrNotATable},
		"a namespace":   {maintenance.Target{Branch: "main", Table: versionstore.ContentKey{"sales", "orders", "x"}}, h, 0, maintenance.ErrNotATable},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := svc.Acquire(ctx, tc.target, tc.holder, tc.ttl); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := svc.StatusByID(ctx, "../x"); !errors.Is(err, maintenance.ErrInvalid) {
		t.Fatalf("status of a malformed id: %v", err)
	}
}

// counter is the value of the unlabelled counter name in reg.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
