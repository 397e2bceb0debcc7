package inorder

import "sync"

// Chain runs functions in the background one after another, in the order
// Start was called. The zero value is ready to use; a Chain must not be
// copied after first use.
//
// Invariant: a function starts only once the one started before it
// returned, and Wait returns only once every function started before it
// (in the order of Start calls) returned.
type Chain struct {
	mu   sync.Mutex
	last chan struct{} // closed when the last started function returned
}

// Start runs fn in the background after every function started before.
func (c *Chain) Start(fn func()) {
	done := make(chan struct{})
	c.mu.Lock()
	prev := c.last
	c.last = done
	c.mu.Unlock()
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		fn()
	}()
}

// Wait returns once every function started before it returned.
func (c *Chain) Wait() {
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	if last != nil {
		<-last
	}
}
