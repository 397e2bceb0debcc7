package keyedmutex_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/internal/keyedmutex"
)

func TestLockSerializes(t *testing.T) {
	var m keyedmutex.Mutex
	var inside, total atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				unlock, err := m.Lock(t.Context(), []string{"main\x00ns\x1ft"})
				if err != nil {
					t.Error(err)
					return
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d holders of one key's lock", n)
				}
				total.Add(1)
				inside.Add(-1)
				unlock()
			}
		})
	}
	wg.Wait()
	if total.Load() != 16*50 {
		t.Fatalf("%d critical sections, want %d", total.Load(), 16*50)
	}
	if n := m.Len(); n != 0 {
		t.Fatalf("%d keys left in the table after every holder unlocked", n)
	}
}

// TestLockOrder takes overlapping sets of keys named in opposite orders
// (and one key twice) from many goroutines: sorting the keys must keep
// them from deadlocking.
func TestLockOrder(t *testing.T) {
	var m keyedmutex.Mutex
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sets := [][]string{{"a", "b"}, {"b", "a"}, {"c", "b", "a"}, {"a", "c"}, {"b", "b"}}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			for range 200 {
				unlock, err := m.Lock(ctx, sets[(i+rand.IntN(len(sets)))%len(sets)])
				if err != nil {
					t.Errorf("lock: %v (deadlock?)", err)
					return
				}
				unlock()
			}
		})
	}
	wg.Wait()
	if n := m.Len(); n != 0 {
		t.Fatalf("%d keys left in the table", n)
	}
}

// TestLockHonoursContext waits for a held key until the context ends: the
// wait gives up with the context's error, releases the free key it took
// first, and leaves only the held key in the table.
func TestLockHonoursContext(t *testing.T) {
	var m keyedmutex.Mutex
	unlock, err := m.Lock(t.Context(), []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		// "0" is free and sorts first: it must be released again when the
		// wait for "a" gives up.
		_, err := m.Lock(ctx, []string{"a", "0"})
		done <- err
	}()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("a held lock was taken twice, or the wait ended with %v, not context.Canceled", err)
	}
	if n := m.Len(); n != 1 {
		t.Fatalf("%d keys in the table after a cancelled wait, want 1", n)
	}
	unlock()
	unlock() // idempotent
	if n := m.Len(); n != 0 {
		t.Fatalf("%d keys in the table after unlock", n)
	}
	unlock0, err := m.Lock(t.Context(), []string{"0", "a"})
	if err != nil {
		t.Fatalf("locks not free after a cancelled wait: %v", err)
	}
	unlock0()
}

// TestLockDoesNotModifyKeys checks the caller's slice keeps its order.
func TestLockDoesNotModifyKeys(t *testing.T) {
	var m keyedmutex.Mutex
	keys := []string{"b", "a", "b"}
	unlock, err := m.Lock(t.Context(), keys)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if keys[0] != "b" || keys[1] != "a" || keys[2] != "b" {
		t.Fatalf("keys reordered to %q", keys)
	}
	if n := m.Len(); n != 2 {
		t.Fatalf("%d keys in the table, want 2", n)
	}
}
