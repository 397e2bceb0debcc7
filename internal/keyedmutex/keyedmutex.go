package keyedmutex

import (
	"context"
	"slices"
	"sync"
)

// Mutex is a table of mutexes by key. The zero value is ready to use; a
// Mutex must not be copied after first use.
//
// Entries exist only while someone holds or waits for them, so the table
// does not grow with the number of keys ever locked.
type Mutex struct {
	mu   sync.Mutex
	held map[string]*entry
}

// entry is one key's lock: a token in a channel of capacity one, so a
// waiter can give up when its context ends (a sync.Mutex cannot), and
// waiters are served in arrival order. users counts holders and waiters,
// guarded by Mutex.mu; the entry is deleted when it drops to zero.
type entry struct {
	token chan struct{}
	users int
}

// Lock takes the locks of keys, in sorted order with duplicates dropped,
// so that callers locking overlapping sets of keys cannot deadlock. It
// waits no longer than ctx; on error no lock is held and ctx's error is
// returned. On success the caller must call unlock, which releases them
// all; calling it again does nothing.
func (m *Mutex) Lock(ctx context.Context, keys []string) (unlock func(), err error) {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	entries := make([]*entry, len(keys))
	m.mu.Lock()
	if m.held == nil {
		m.held = map[string]*entry{}
	}
	for i, k := range keys {
		e := m.held[k]
		if e == nil {
			e = &entry{token: make(chan struct{}, 1)}
			m.held[k] = e
		}
		e.users++
		entries[i] = e
	}
	m.mu.Unlock()

	release := func(acquired int) {
		for _, e := range entries[:acquired] {
			<-e.token
		}
		m.mu.Lock()
		for i, e := range entries {
			if e.users--; e.users == 0 {
				delete(m.held, keys[i])
			}
		}
		m.mu.Unlock()
	}
	for i, e := range entries {
		select {
		case e.token <- struct{}{}:
		case <-ctx.Done():
			release(i)
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	return func() { once.Do(func() { release(len(entries)) }) }, nil
}

// Len is the number of keys locked or waited for.
func (m *Mutex) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.held)
}
