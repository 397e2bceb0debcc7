package icebergrest

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// tableLocks serializes table commits per (branch, table) within the
// process. Without it, concurrent writers to one hot table each validate,
// write and sync a metadata file before the store refuses all but one;
// the losers delete their files, back off and retry, and the unlucky ones
// retry for seconds. Holding a table's lock from reading the head to the
// end of the store commit lets the next writer see the new head at once:
// its requirements then fail fast (409, no file written) or it commits on
// its first try.
//
// The lock is an optimization, not what keeps commits correct: the store
// still refuses a commit whose tables moved under it (a merge, a rename or
// drop, which take no lock, or another process sharing the store), and
// commitTables still retries on that.
type tableLocks struct {
	mu   sync.Mutex
	held map[string]*tableLock
}

// tableLock is one key's lock: a token in a channel of capacity one, so a
// waiter can give up when its request ends, and waiters are served in
// arrival order. refs counts holders and waiters; the entry is deleted when
// it drops to zero, so the map holds only keys in use.
type tableLock struct {
	token chan struct{}
	refs  int
}

func newTableLocks() *tableLocks { return &tableLocks{held: map[string]*tableLock{}} }

// tableLockKey names a table on a branch. Content keys are unique within a
// branch, whichever warehouse names the branch.
func tableLockKey(branch string, id identifier) string {
	return branch + "\x00" + strings.Join(id.key(), "\x1f")
}

// lock takes the locks of keys, in sorted order so that transactions over
// overlapping sets of tables cannot deadlock. It waits no longer than ctx;
// on error no lock is held. unlock releases them all.
func (t *tableLocks) lock(ctx context.Context, keys []string) (unlock func(), err error) {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	locks := make([]*tableLock, len(keys))
	t.mu.Lock()
	for i, k := range keys {
		l := t.held[k]
		if l == nil {
			l = &tableLock{token: make(chan struct{}, 1)}
			t.held[k] = l
		}
		l.refs++
		locks[i] = l
	}
	t.mu.Unlock()

	release := func(acquired int) {
		for _, l := range locks[:acquired] {
			<-l.token
		}
		t.mu.Lock()
		for i, l := range locks {
			if l.refs--; l.refs == 0 {
				delete(t.held, keys[i])
			}
		}
		t.mu.Unlock()
	}
	for i, l := range locks {
		select {
		case l.token <- struct{}{}:
		case <-ctx.Done():
			release(i)
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	return func() { once.Do(func() { release(len(locks)) }) }, nil
}

// size is the number of keys locked or waited for.
func (t *tableLocks) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.held)
}
