package inorder

import (
	"slices"
	"sync"
	"testing"
)

// TestChainRunsInOrder: functions run one at a time in the order started,
// and Wait, called from many goroutines while more are started, returns
// only after everything started before it.
func TestChainRunsInOrder(t *testing.T) {
	var c Chain
	c.Wait() // nothing started: returns at once
	var (
		mu      sync.Mutex
		ran     []int
		running int
	)
	const n = 200
	var waiters sync.WaitGroup
	for i := range n {
		c.Start(func() {
			mu.Lock()
			running++
			if running != 1 {
				t.Errorf("function %d ran beside another", i)
			}
			ran = append(ran, i)
			running--
			mu.Unlock()
		})
		if i%20 == 0 {
			waiters.Go(func() {
				c.Wait()
				mu.Lock()
				defer mu.Unlock()
				if len(ran) < i+1 {
					t.Errorf("Wait after starting function %d returned after only %d ran", i, len(ran))
				}
			})
		}
	}
	c.Wait()
	waiters.Wait()
	if !slices.IsSorted(ran) || len(ran) != n {
		t.Fatalf("ran %d functions, in order %v; want %d in order", len(ran), slices.IsSorted(ran), n)
	}
}
