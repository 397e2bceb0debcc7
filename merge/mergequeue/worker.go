package mergequeue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/floe-catalog/floe/versionstore/lease"
)

// Run runs one worker per target branch with work, and one per protected
// branch (which watches for bypass commits), until ctx ends.
func (q *Queue) Run(ctx context.Context) {
	var wg sync.WaitGroup
	started := map[string]bool{}
	start := func(target string) {
		if started[target] {
			return
		}
		started[target] = true
		wg.Go(func() { q.work(ctx, target) })
	}
	for _, b := range q.rules.Protected {
		start(b)
	}
	tick := time.NewTicker(q.poll)
	defer tick.Stop()
	for {
		for _, t := range q.targets() {
			start(t)
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case t := <-q.kick:
			start(t)
			q.wakeWorker(t)
		case <-tick.C:
			if q.leases != nil {
				// Requests submitted to other replicas, and what their
				// committers did: every replica's view is at most one
				// poll old, and its workers learn of new targets.
				if err := q.refresh(ctx); err != nil && ctx.Err() == nil {
					q.logger.WarnContext(ctx, "merge queue: cannot read the requests", "err", err)
				}
			}
		}
	}
}

// targets are the targets of requests not yet final.
func (q *Queue) targets() []string {
	q.mu.RLock()
	defer q.mu.RUnlock()
	seen := map[string]bool{}
	var out []string
	for _, e := range q.reqs {
		if !Final(e.req.State) && !seen[e.req.Target] {
			seen[e.req.Target] = true
			out = append(out, e.req.Target)
		}
	}
	return out
}

// wakeWorker wakes target's worker if it sleeps.
func (q *Queue) wakeWorker(target string) {
	q.workersMu.Lock()
	ch := q.wakeChan(target)
	q.workersMu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
}

// wakeChan returns target's wake channel; q.workersMu must be held.
func (q *Queue) wakeChan(target string) chan struct{} {
	if q.wakes == nil {
		q.wakes = map[string]chan struct{}{}
	}
	ch := q.wakes[target]
	if ch == nil {
		ch = make(chan struct{}, 1)
		q.wakes[target] = ch
	}
	return ch
}

// work is target's worker. With leases it serves only while this replica
// holds the target's lease: it tries to acquire it every LeaseTTL/3, and
// stops serving as soon as the holding ends.
func (q *Queue) work(ctx context.Context, target string) {
	if q.leases == nil {
		q.serve(ctx, target)
		return
	}
	retry := time.NewTicker(q.leaseTTL / 3)
	defer retry.Stop()
	for ctx.Err() == nil {
		h, err := q.leases.Hold(ctx, LeaseName(target), q.holder, q.leaseTTL)
		switch {
		case err == nil:
			q.lead(ctx, h, target)
		case !errors.Is(err, lease.ErrHeld) && ctx.Err() == nil:
			q.logger.WarnContext(ctx, "merge queue: cannot acquire the target's lease", "target", target, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-retry.C:
		}
	}
}

// lead serves target while h holds its lease, then releases it (or, in a
// test playing a crash, abandons it to expire).
func (q *Queue) lead(ctx context.Context, h *lease.Holding, target string) {
	l := h.Current()
	q.logger.InfoContext(ctx, "merge queue: this replica is the target's committer", "target", target, "holder", l.Holder, "epoch", l.Epoch)
	q.holdMu.Lock()
	q.holdings[target] = h
	q.holdMu.Unlock()
	// Bypass commits are counted from here on: what the previous
	// committer landed is not one.
	if ref, err := q.store.GetRef(target); err == nil {
		q.mu.Lock()
		q.known[target] = ref.Head
		q.mu.Unlock()
	}
	q.serve(h.Context(), target)
	q.holdMu.Lock()
	delete(q.holdings, target)
	q.holdMu.Unlock()
	cause := context.Cause(h.Context())
	if q.crashed && ctx.Err() != nil {
		h.Stop()
		return
	}
	if err := h.Release(context.WithoutCancel(ctx)); err != nil {
		q.logger.WarnContext(ctx, "merge queue: cannot release the target's lease; it expires by itself", "target", target, "err", err)
	}
	if ctx.Err() == nil {
		q.logger.WarnContext(ctx, "merge queue: this replica is no longer the target's committer", "target", target, "epoch", l.Epoch, "cause", cause)
	}
}

// holding is this replica's holding of target's lease; nil without
// leases or when another replica holds it.
func (q *Queue) holding(target string) *lease.Holding {
	q.holdMu.Lock()
	defer q.holdMu.Unlock()
	return q.holdings[target]
}

// errNotHolder: with leases, a batch is processed only under the target's
// lease.
var errNotHolder = errors.New("this replica does not hold the target's merge-queue lease")

// serve processes target's batches while there are any, and otherwise
// sleeps until woken or the poll interval passes.
func (q *Queue) serve(ctx context.Context, target string) {
	q.workersMu.Lock()
	wake := q.wakeChan(target)
	q.workersMu.Unlock()
	t := time.NewTicker(q.poll)
	defer t.Stop()
	for ctx.Err() == nil {
		progressed, err := q.Process(ctx, target)
		if err != nil && ctx.Err() == nil {
			q.logger.ErrorContext(ctx, "merge queue: processing failed; retrying", "target", target, "err", err)
		}
		if progressed && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-t.C:
		}
	}
}

// targetLock serializes the processing of one target.
func (q *Queue) targetLock(target string) *sync.Mutex {
	q.workersMu.Lock()
	defer q.workersMu.Unlock()
	m := q.workers[target]
	if m == nil {
		m = &sync.Mutex{}
		q.workers[target] = m
	}
	return m
}

// Process runs one batch of target's queue to its end: it takes the next
// requests, builds and validates their candidate, and lands it or fails
// them. It reports whether there was anything to do. Tests call it
// directly; Run calls it from each target's worker.
func (q *Queue) Process(ctx context.Context, target string) (bool, error) {
	lock := q.targetLock(target)
	lock.Lock()
	defer lock.Unlock()
	if q.leases != nil {
		if err := q.adopt(ctx, target); err != nil {
			return false, err
		}
	}
	q.checkBypass(ctx, target)
	q.sweepCandidates(ctx, target)
	ids, err := q.take(ctx, target)
	if err != nil {
		// Those already marked validating go back: nothing was built.
		q.requeue(context.WithoutCancel(ctx), ids, "the worker could not take the batch ("+err.Error()+"); queued again")
		return false, err
	}
	if len(ids) == 0 {
		return false, nil
	}
	return true, q.runBatch(ctx, target, ids)
}

// adopt readies a batch under target's lease: it reads the requests
// again (other replicas' submissions and changes) and queues again the
// requests of target left validating, which no batch of this replica is
// building (it runs under the target's lock): a previous holder's, dead
// or deposed. Their candidates never landed (a landing writes their final
// state), and a deposed holder's late landing is refused by its fence.
func (q *Queue) adopt(ctx context.Context, target string) error {
	if q.holding(target) == nil {
		return errNotHolder
	}
	if err := q.refresh(ctx); err != nil {
		return err
	}
	var orphans []string
	q.mu.RLock()
	for id, e := range q.reqs {
		if e.req.Target == target && e.req.State == StateValidating {
			orphans = append(orphans, id)
		}
	}
	q.mu.RUnlock()
	if len(orphans) > 0 {
		q.logger.InfoContext(ctx, "merge queue: queueing again requests a previous committer left validating", "target", target, "requests", len(orphans))
		q.requeue(ctx, orphans, "the replica validating it stopped or lost the merge-queue lease; its candidate never landed, so it is queued again")
	}
	return nil
}
