package lease

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// clock is a settable test clock, shared by the store and the leases, as
// replicas' clocks are assumed to agree.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func open(t *testing.T) (*versionstore.Store, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	be, err := pebblebackend.Open(t.TempDir(), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := versionstore.Open(t.Context(), be, versionstore.Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, c
}

func TestAcquireRenewExpireRelease(t *testing.T) {
	s, c := open(t)
	ctx := t.Context()
	a, b := New(s, c.now), New(s, c.now) // two replicas
	la, err := a.Acquire(ctx, "queue/main", "replica-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "queue/main", "replica-b", time.Minute); !errors.Is(err, ErrHeld) {
		t.Fatalf("acquire of a held lease: %v, want ErrHeld", err)
	}
	c.advance(40 * time.Second)
	if la, err = a.Renew(ctx, la, time.Minute); err != nil {
		t.Fatal(err)
	}
	c.advance(40 * time.Second) // past the first expiry, within the renewed one
	if _, err := b.Acquire(ctx, "queue/main", "replica-b", time.Minute); !errors.Is(err, ErrHeld) {
		t.Fatalf("acquire of a renewed lease: %v, want ErrHeld", err)
	}
	c.advance(time.Minute) // a stops renewing: expired
	lb, err := b.Acquire(ctx, "queue/main", "replica-b", time.Minute)
	if err != nil {
		t.Fatalf("acquire of an expired lease: %v", err)
	}
	if lb.Epoch <= la.Epoch {
		t.Fatalf("new holder's epoch %d is not above %d", lb.Epoch, la.Epoch)
	}
	if _, err := a.Renew(ctx, la, time.Minute); !errors.Is(err, ErrLost) {
		t.Fatalf("renewal by the deposed holder: %v, want ErrLost", err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatalf("release by the deposed holder: %v", err)
	}
	if _, err := a.Acquire(ctx, "queue/main", "replica-a", time.Minute); !errors.Is(err, ErrHeld) {
		t.Fatalf("the deposed holder's release ended the new holding: %v", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx, "queue/main", "replica-a", time.Minute); err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
}

// TestFence: a commit carrying the deposed holder's fence is refused, one
// carrying the live holder's lands.
func TestFence(t *testing.T) {
	s, c := open(t)
	ctx := t.Context()
	a, b := New(s, c.now), New(s, c.now)
	la, err := a.Acquire(ctx, "queue/main", "replica-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(fence *versionstore.Record, name string) error {
		r, err := s.GetRef("main")
		if err != nil {
			return err
		}
		_, err = s.Commit(ctx, versionstore.CommitRequest{Branch: "main", Expected: r.Head, Record: fence,
			Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{name}, Content: &versionstore.Content{Type: versionstore.Namespace}}}})
		return err
	}
	if err := commit(a.Fence(la), "ns1"); err != nil {
		t.Fatalf("fenced commit by the holder: %v", err)
	}
	if la, err = a.Renew(ctx, la, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := commit(a.Fence(la), "ns2"); err != nil {
		t.Fatalf("fenced commit after a renewal: %v", err)
	}
	c.advance(2 * time.Minute)
	if _, err := b.Acquire(ctx, "queue/main", "replica-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := commit(a.Fence(la), "ns3"); !errors.Is(err, versionstore.ErrRecordConflict) {
		t.Fatalf("the deposed holder's late commit: %v, want ErrRecordConflict", err)
	}
}

// TestRunOneAtATime: replicas racing to run a job under one lease: exactly
// one runs it, the others get ErrHeld.
func TestRunOneAtATime(t *testing.T) {
	s, c := open(t)
	ctx := t.Context()
	var running, ran atomic.Int32
	var wg sync.WaitGroup
	release := make(chan struct{})
	held := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			err := New(s, c.now).Run(ctx, "gc", string(rune('a'+i)), time.Minute, func(ctx context.Context, _ func() *Lease) error {
				if running.Add(1) != 1 {
					t.Error("two runs at once")
				}
				ran.Add(1)
				<-release
				running.Add(-1)
				return nil
			})
			held <- err
		})
	}
	// Every replica but the runner returns ErrHeld; then the runner is let go.
	for range 7 {
		if err := <-held; !errors.Is(err, ErrHeld) {
			t.Fatalf("a replica that did not run: %v, want ErrHeld", err)
		}
	}
	close(release)
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatalf("the runner: %v", err)
	}
	if ran.Load() != 1 {
		t.Fatalf("%d runs, want 1", ran.Load())
	}
	// Released: the next run gets it.
	if err := New(s, c.now).Run(ctx, "gc", "z", time.Minute, func(context.Context, func() *Lease) error { return nil }); err != nil {
		t.Fatalf("run after the first released: %v", err)
	}
}

// TestHoldFencedAndStop: a holding's fenced writes land while it is
// held; a stopped holding is not released (another holder waits for its
// expiry), and its late fenced write is refused and ends its context.
func TestHoldFencedAndStop(t *testing.T) {
	s, c := open(t)
	ctx := t.Context()
	a, b := New(s, c.now), New(s, c.now)
	h, err := a.Hold(ctx, "queue/main", "replica-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string) func(fence *versionstore.Record) error {
		return func(fence *versionstore.Record) error {
			return s.PutRecord(ctx, *fence)
		}
	}
	if err := h.Fenced(put("one")); err != nil {
		t.Fatalf("fenced write by the holder: %v", err)
	}
	h.Stop()
	if _, err := b.Acquire(ctx, "queue/main", "replica-b", time.Minute); !errors.Is(err, ErrHeld) {
		t.Fatalf("acquire of a stopped, unexpired holding: %v, want ErrHeld", err)
	}
	c.advance(2 * time.Minute)
	if _, err := b.Acquire(ctx, "queue/main", "replica-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Fenced(put("late")); !errors.Is(err, versionstore.ErrRecordConflict) {
		t.Fatalf("the deposed holder's fenced write: %v, want ErrRecordConflict", err)
	}
	if !errors.Is(context.Cause(h.Context()), ErrLost) && h.Context().Err() == nil {
		t.Fatalf("the deposed holding's context did not end")
	}
}
