package pebblebackend

import (
	"context"
	"sync"
)

// refLocks is a table of per-reference (and per-record) mutexes. Apply holds
// the locks of the refs it updates and the records it checks or writes from
// the compare until the batch is durable and the mirror updated, which is what makes the compare-and-swap atomic: Pebble has no
// transactions, so nothing else stops two writers from both passing the
// compare. Batches on different refs hold different locks and can therefore
// be in their fsync at the same time, sharing Pebble's group commit.
//
// Entries exist only while someone holds or waits for them, so the table
// does not grow with the number of refs ever written.
type refLocks struct {
	mu    sync.Mutex
	locks map[string]*refLock
}

type refLock struct {
	// token has capacity 1; holding the lock means having sent into it.
	// A channel rather than a sync.Mutex so waiting honours the context.
	token chan struct{}
	users int // holders plus waiters; guarded by refLocks.mu
}

func (l *refLocks) init() { l.locks = make(map[string]*refLock) }

// acquire locks every name in order. names must be sorted and distinct: a
// single global order is what rules out deadlock between batches that share
// several refs. On success the caller must call the returned release.
func (l *refLocks) acquire(ctx context.Context, names []string) (release func(), err error) {
	held := make([]*refLock, 0, len(names))
	releaseHeld := func() {
		for i, rl := range held {
			<-rl.token
			l.unref(names[i], rl)
		}
	}
	for _, name := range names {
		rl := l.ref(name)
		select {
		case rl.token <- struct{}{}:
			held = append(held, rl)
		case <-ctx.Done():
			l.unref(name, rl)
			releaseHeld()
			return nil, ctx.Err()
		}
	}
	return releaseHeld, nil
}

func (l *refLocks) ref(name string) *refLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	rl, ok := l.locks[name]
	if !ok {
		rl = &refLock{token: make(chan struct{}, 1)}
		l.locks[name] = rl
	}
	rl.users++
	return rl
}

func (l *refLocks) unref(name string, rl *refLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rl.users--
	if rl.users == 0 {
		delete(l.locks, name)
	}
}
