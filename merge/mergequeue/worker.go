package mergequeue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/floe-catalog/floe/internal/inorder"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/lease"
)

// worker is one target branch's committer in this process. The requests
// themselves are the Queue's (q.reqs, under q.mu); the worker owns what
// processing its target needs besides them: the lock that lets one batch
// of the target run at a time, the wake-up a submit or an approval sends,
// this replica's holding of the target's lease (over a shared store), and
// the target's head as the worker last saw it, which tells the queue's own
// moves from commits that bypassed it.
//
// Invariants the batch code relies on:
//   - A batch of the target runs only with w.mu held (Process): a request
//     of the target found validating with w.mu held is no batch's of this
//     replica (adopt queues such requests again).
//   - With leases, a batch starts only while w.holding is set (adopt), and
//     its landing write is made inside the holding's fence (land): a
//     holder deposed meanwhile writes nothing.
//   - w.known is the head the target had after the queue's last landing
//     or look (checkBypass); any other commit since reached the target
//     without the queue.
//
// Lock order: q.mu, then q.workersMu, then w.state; w.mu is taken before
// any of them and held across a whole batch.
type worker struct {
	target string
	// mu serializes the processing of the target.
	mu sync.Mutex
	// wake, buffered, wakes the worker's loop (serve) if it sleeps.
	wake chan struct{}
	// tidying runs the landed batches' hygiene (hygiene.go), one after
	// another, while the next batch is built.
	tidying inorder.Chain

	// state guards the fields below.
	state sync.Mutex
	// holding is this replica's holding of the target's lease; nil
	// without leases or while another replica holds it.
	holding *lease.Holding
	// known is the target's head the worker last saw, if seen.
	known versionstore.Hash
	seen  bool
	// bypassed counts bypass commits since start, for the report.
	bypassed int
}

// worker returns target's worker, made on first use.
func (q *Queue) worker(target string) *worker {
	q.workersMu.Lock()
	defer q.workersMu.Unlock()
	w := q.workers[target]
	if w == nil {
		w = &worker{target: target, wake: make(chan struct{}, 1)}
		q.workers[target] = w
	}
	return w
}

// held is w's holding of the target's lease, nil if none.
func (w *worker) held() *lease.Holding {
	w.state.Lock()
	defer w.state.Unlock()
	return w.holding
}

func (w *worker) hold(h *lease.Holding) {
	w.state.Lock()
	w.holding = h
	w.state.Unlock()
}

// saw records head as the target's head the queue knows, returning the
// one it knew before (ok false if none).
func (w *worker) saw(head versionstore.Hash) (prev versionstore.Hash, ok bool) {
	w.state.Lock()
	defer w.state.Unlock()
	prev, ok = w.known, w.seen
	w.known, w.seen = head, true
	return prev, ok
}

// addBypassed counts n more bypass commits.
func (w *worker) addBypassed(n int) {
	w.state.Lock()
	w.bypassed += n
	w.state.Unlock()
}

// bypassCounts is the bypass commits counted per target, nil if none.
func (q *Queue) bypassCounts() map[string]int {
	q.workersMu.Lock()
	defer q.workersMu.Unlock()
	var out map[string]int
	for t, w := range q.workers {
		w.state.Lock()
		n := w.bypassed
		w.state.Unlock()
		if n > 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[t] = n
		}
	}
	return out
}

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
		w := q.worker(target)
		wg.Go(func() { q.work(ctx, w) })
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
			q.worker(t).wakeUp()
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

// wakeUp wakes w's loop if it sleeps.
func (w *worker) wakeUp() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// work is w's loop. With leases it serves only while this replica holds
// the target's lease: it tries to acquire it every LeaseTTL/3, and stops
// serving as soon as the holding ends.
func (q *Queue) work(ctx context.Context, w *worker) {
	if q.leases == nil {
		q.serve(ctx, w)
		return
	}
	retry := time.NewTicker(q.leaseTTL / 3)
	defer retry.Stop()
	for ctx.Err() == nil {
		h, err := q.leases.Hold(ctx, LeaseName(w.target), q.holder, q.leaseTTL)
		switch {
		case err == nil:
			q.lead(ctx, h, w)
		case !errors.Is(err, lease.ErrHeld) && ctx.Err() == nil:
			q.logger.WarnContext(ctx, "merge queue: cannot acquire the target's lease", "target", w.target, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-retry.C:
		}
	}
}

// lead serves w's target while h holds its lease, then releases it (or,
// in a test playing a crash, abandons it to expire).
func (q *Queue) lead(ctx context.Context, h *lease.Holding, w *worker) {
	target := w.target
	l := h.Current()
	q.logger.InfoContext(ctx, "merge queue: this replica is the target's committer", "target", target, "holder", l.Holder, "epoch", l.Epoch)
	w.hold(h)
	// Bypass commits are counted from here on: what the previous
	// committer landed is not one.
	if ref, err := q.store.GetRef(target); err == nil {
		w.saw(ref.Head)
	}
	q.serve(h.Context(), w)
	w.hold(nil)
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
	return q.worker(target).held()
}

// errNotHolder: with leases, a batch is processed only under the target's
// lease.
var errNotHolder = errors.New("this replica does not hold the target's merge-queue lease")

// serve processes w's batches while there are any, and otherwise sleeps
// until woken or the poll interval passes.
func (q *Queue) serve(ctx context.Context, w *worker) {
	t := time.NewTicker(q.poll)
	defer t.Stop()
	defer w.tidying.Wait()
	for ctx.Err() == nil {
		progressed, err := q.process(ctx, w)
		if err != nil && ctx.Err() == nil {
			q.logger.ErrorContext(ctx, "merge queue: processing failed; retrying", "target", w.target, "err", err)
		}
		if progressed && err == nil {
			continue
		}
		w.tidying.Wait()
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-t.C:
		}
	}
}

// Process runs one batch of target's queue to its end: it takes the next
// requests, builds and validates their candidate, and lands it or fails
// them, and applies the landed requests' source rules (hygiene). It
// reports whether there was anything to do. Tests call it directly; Run's
// workers call process, whose hygiene overlaps their next batch.
func (q *Queue) Process(ctx context.Context, target string) (bool, error) {
	w := q.worker(target)
	defer w.tidying.Wait()
	return q.process(ctx, w)
}

// process is Process without waiting for the batch's hygiene.
func (q *Queue) process(ctx context.Context, w *worker) (bool, error) {
	target := w.target
	w.mu.Lock()
	defer w.mu.Unlock()
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
