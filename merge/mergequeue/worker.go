package mergequeue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/merge/mergeengine"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/lease"
)

// PropRequest is the commit property naming the merge request a merge
// commit of the queue carries.
const PropRequest = "floe.queue.request"

// PropLeaseEpoch is the commit property of a queue's merge commit, over a
// shared store, naming the epoch of the lease its committer held.
const PropLeaseEpoch = "floe.queue.lease-epoch"

// maxBuilds bounds how often one batch's candidate is built again because
// its target moved under it (a commit that bypassed the queue) before the
// batch gives up and its requests are queued again.
const maxBuilds = 8

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

// aged reports whether r has waited long enough to be admitted alone.
func (q *Queue) aged(r *Request, now time.Time) bool {
	return now.Sub(r.EnqueuedAt) >= q.rules.ageLimit()
}

// order is the order the worker takes queued requests in: requests past
// the age limit first (by arrival), then by priority, then by arrival.
func (q *Queue) order(now time.Time) func(a, b *Request) int {
	return func(a, b *Request) int {
		if aa, ab := q.aged(a, now), q.aged(b, now); aa != ab {
			if aa {
				return -1
			}
			return 1
		} else if !aa && a.Priority != b.Priority {
			if a.Priority > b.Priority {
				return -1
			}
			return 1
		}
		return compareSeq(a, b)
	}
}

// take picks the next batch of target and marks its requests validating.
// A batch is the first request in order, alone if it waited past the age
// limit or its rule forbids batching, else followed by the next requests
// in order while they may be batched, up to MaxBatch.
func (q *Queue) take(ctx context.Context, target string) ([]string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock()
	var queued []*Request
	for _, e := range q.reqs {
		if e.req.Target == target && e.req.State == StateQueued && (e.req.RetryAt == nil || !now.Before(*e.req.RetryAt)) {
			queued = append(queued, e.req)
		}
	}
	if len(queued) == 0 {
		return nil, nil
	}
	slices.SortFunc(queued, q.order(now))
	batch := queued[:1]
	first, _ := q.rules.ruleFor(queued[0].SourceRef)
	if first.Batch && !q.aged(queued[0], now) {
		for _, r := range queued[1:] {
			rule, _ := q.rules.ruleFor(r.SourceRef)
			if len(batch) >= q.rules.maxBatch() || !rule.Batch || q.aged(r, now) {
				break
			}
			batch = append(batch, r)
		}
	}
	// The batch is taken in one durable write: all of it, or, if another
	// replica changed a request meanwhile, none (taken again next round).
	es := make([]*entry, 0, len(batch))
	nexts := make([]*Request, 0, len(batch))
	firstTake := make([]bool, 0, len(batch))
	for _, r := range batch {
		e := q.reqs[r.ID]
		next := cloneRequest(e.req)
		next.RetryAt = nil
		firstTake = append(firstTake, next.StartedAt == nil)
		if next.StartedAt == nil {
			next.StartedAt = &now
		}
		why := "taken by the worker"
		if len(batch) > 1 {
			why = fmt.Sprintf("taken by the worker in a batch of %d", len(batch))
		} else if q.aged(r, now) {
			why = "taken by the worker alone: it waited past the age limit"
		}
		if err := q.transition(next, StateValidating, "", why, q.principal, ""); err != nil {
			return nil, err
		}
		es, nexts = append(es, e), append(nexts, next)
	}
	if err := q.persistAll(ctx, es, nexts); err != nil {
		return nil, err
	}
	ids := make([]string, len(nexts))
	for i, next := range nexts {
		ids[i] = next.ID
		if firstTake[i] {
			// The wait ends here, once, whatever rebuilds or fault
			// retries follow.
			q.metrics.wait.WithLabelValues(next.Class).Observe(now.Sub(next.EnqueuedAt).Seconds())
		}
	}
	return ids, nil
}

// member is a request merged onto a candidate.
type member struct {
	id     string
	commit versionstore.Hash // the candidate after its merge
	class  string
	tables []apidoc.MergeRequestTable
	keys   []versionstore.ContentKey
	val    *apidoc.MergeValidation
}

// errRequestChanged: a request of the batch changed (was cancelled) while
// its candidate was built.
var errRequestChanged = errors.New("a request of the batch changed")

// runBatch builds, validates and lands the batch ids, rebuilding it when
// the target moves or a member fails, until it lands or no member is left.
func (q *Queue) runBatch(ctx context.Context, target string, ids []string) error {
	vals := map[string][]apidoc.MergeValidation{}
	for build := 1; len(ids) > 0; build++ {
		if ctx.Err() != nil {
			// The lease was lost (or floe stops): the next holder
			// builds these again.
			q.requeue(context.WithoutCancel(ctx), ids, "the worker stopped ("+context.Cause(ctx).Error()+"); queued again")
			return ctx.Err()
		}
		if build > maxBuilds {
			q.requeue(ctx, ids, fmt.Sprintf("the target kept moving while the candidate was built (%d builds); queued again", maxBuilds))
			return nil
		}
		ref, err := q.store.GetRef(target)
		if err != nil || ref.Type != versionstore.Branch {
			q.failAll(ctx, ids, vals, "target-gone", fmt.Sprintf("target branch %s is gone", target))
			return nil
		}
		head := ref.Head
		// Unique per build, so a candidate a failed delete left behind
		// never blocks the next.
		cand := fmt.Sprintf("%s%s/%s-%d-%s", CandidatePrefix, target, ids[0], build, uuid.NewString()[:8])
		if _, err := q.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: cand, Type: versionstore.Branch, Target: head, Principal: q.principal}); err != nil {
			q.dropCandidate(ctx, cand) // in case it was created all the same
			q.requeue(context.WithoutCancel(ctx), ids, "the candidate branch could not be created ("+err.Error()+"); queued again")
			return fmt.Errorf("create candidate branch %s: %w", cand, err)
		}
		members, err := q.build(ctx, target, cand, head, ids, vals)
		if err != nil {
			q.dropCandidate(ctx, cand)
			q.requeue(context.WithoutCancel(ctx), ids, "the candidate could not be built ("+err.Error()+"); queued again")
			return err
		}
		ids = ids[:0:0]
		for _, m := range members {
			ids = append(ids, m.id)
		}
		if len(members) == 0 {
			q.dropCandidate(ctx, cand)
			return nil
		}
		q.validate(ctx, target, cand, head, members)
		if ctx.Err() != nil {
			// Shutting down: the checks were cut short, which says
			// nothing about the requests.
			q.dropCandidate(ctx, cand)
			q.requeue(context.WithoutCancel(ctx), ids, "floe stopped while the candidate was validated; queued again")
			return ctx.Err()
		}
		// Results are judged in queue order. The first member that
		// fails, fails; the members after it were validated on
		// candidates that hold its changes, so whatever their results
		// say is not about them: the batch is built again without the
		// failed member and they are validated again, on new
		// candidates. A result is never reused for another candidate.
		failed := slices.IndexFunc(members, func(m *member) bool { return !m.val.Passed })
		for _, m := range members {
			vals[m.id] = append(vals[m.id], *m.val)
		}
		if failed >= 0 {
			m := members[failed]
			q.finish(ctx, m.id, vals, StateFailed, "check-failed", "validation failed on candidate "+m.commit.String()+": "+failedChecks(m.val))
			q.dropCandidate(ctx, cand)
			q.metrics.rebuilds.WithLabelValues(target, "check-failed").Inc()
			ids = slices.Delete(slices.Clone(ids), failed, failed+1)
			continue
		}
		err = q.land(ctx, target, head, members, vals)
		q.dropCandidate(ctx, cand)
		switch {
		case err == nil:
			q.hygiene(ctx, target, members)
			return nil
		case errors.Is(err, versionstore.ErrReferenceConflict):
			q.checkBypass(ctx, target)
			q.metrics.rebuilds.WithLabelValues(target, "target-moved").Inc()
			q.logger.InfoContext(ctx, "merge queue: the target moved while the candidate was validated; building it again", "target", target)
		case errors.Is(err, versionstore.ErrRecordConflict), errors.Is(err, errRequestChanged):
			q.metrics.rebuilds.WithLabelValues(target, "request-changed").Inc()
			ids = q.stillValidating(ids)
		default:
			// The store failed: nothing landed. Queue them again so the
			// next round (or, if the store is gone, the restart) retries.
			q.requeue(context.WithoutCancel(ctx), ids, "the candidate could not be landed ("+err.Error()+"); queued again")
			return err
		}
	}
	return nil
}

// stillValidating keeps the ids whose requests are still validating.
func (q *Queue) stillValidating(ids []string) []string {
	q.mu.RLock()
	defer q.mu.RUnlock()
	var out []string
	for _, id := range ids {
		if e := q.reqs[id]; e != nil && e.req.State == StateValidating {
			out = append(out, id)
		}
	}
	return out
}

// sweepCandidates deletes target's candidate branches. It runs under the
// target's lock, when no batch of it is in flight, so any it finds was
// left behind (a delete that failed).
func (q *Queue) sweepCandidates(ctx context.Context, target string) {
	prefix := CandidatePrefix + target + "/"
	for _, r := range q.store.ListRefs() {
		// The rest of a candidate's name is one segment; a longer one
		// belongs to a target under this one (main/x).
		if rest, ok := strings.CutPrefix(r.Name, prefix); ok && !strings.Contains(rest, "/") && r.Type == versionstore.Branch {
			q.logger.WarnContext(ctx, "merge queue: deleting a candidate branch left behind", "ref", r.Name)
			q.dropCandidate(ctx, r.Name)
		}
	}
}

// dropCandidate deletes a candidate branch.
func (q *Queue) dropCandidate(ctx context.Context, cand string) {
	r, err := q.store.GetRef(cand)
	if errors.Is(err, versionstore.ErrReferenceNotFound) {
		return
	}
	if err != nil {
		q.logger.WarnContext(ctx, "merge queue: cannot read a candidate branch to delete it", "ref", cand, "err", err)
		return
	}
	if err := q.store.DeleteRef(context.WithoutCancel(ctx), versionstore.DeleteRefRequest{Name: cand, Expected: r.Head, Principal: q.principal}); err != nil {
		q.logger.WarnContext(ctx, "merge queue: cannot delete a candidate branch", "ref", cand, "err", err)
	}
}

func failedChecks(v *apidoc.MergeValidation) string {
	if v.Error != "" {
		return v.Error
	}
	var parts []string
	for _, r := range v.Results {
		if !r.Passed {
			parts = append(parts, r.Name+": "+r.Reason)
		}
	}
	return strings.Join(parts, "; ")
}

// build merges each request of ids, in order, onto the candidate branch,
// classifying it first against the candidate's head (which holds the
// requests before it: a request overlapping one of them is classified
// again on top of it, not failed). A structural request goes to review; a
// request the engine refuses fails; the others are the members.
func (q *Queue) build(ctx context.Context, target, cand string, head versionstore.Hash, ids []string, vals map[string][]apidoc.MergeValidation) ([]*member, error) {
	candHead := head
	var members []*member
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err // shutting down: nothing here is the request's fault
		}
		r, err := q.Get(id)
		if err != nil || r.State != StateValidating {
			continue // cancelled meanwhile
		}
		src, err := versionstore.ParseHash(r.SourceHash)
		if err != nil {
			q.finish(ctx, id, vals, StateFailed, "invalid", "source hash: "+err.Error())
			continue
		}
		changes, _, err := q.SourceChanges(ctx, candHead, src, r.Tables)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			q.finish(ctx, id, vals, StateFailed, "conflict", err.Error())
			continue
		}
		if len(changes) == 0 {
			q.finish(ctx, id, vals, StateFailed, "nothing-to-merge", "nothing to merge: "+target+" already holds every change of the source")
			continue
		}
		m := &member{id: id}
		review, err := q.classifyChanges(ctx, candHead, changes, m)
		if err != nil {
			return nil, err
		}
		if review != "" && !r.Approved {
			q.toReview(ctx, id, m, review)
			continue
		}
		req := versionstore.MergeRequest{
			Target: cand, ExpectedTarget: candHead, From: src, FromRef: r.SourceRef, Committer: q.principal,
			Meta: versionstore.CommitMeta{Message: mergeMessage(r), Properties: map[string]string{PropRequest: r.ID}},
		}
		if h := q.holding(target); h != nil {
			req.Meta.Properties[PropLeaseEpoch] = strconv.FormatInt(h.Current().Epoch, 10)
		}
		if len(r.Tables) > 0 {
			req.DefaultMode = versionstore.MergeDrop
			for _, d := range changes {
				req.KeyModes = append(req.KeyModes, versionstore.KeyMergeMode{Key: d.Key, Behavior: versionstore.MergeNormal})
			}
		}
		res, err := q.merger.MergeTables(ctx, req)
		if res != nil {
			m.engineClasses(res.Tables)
		}
		if fe, ok := errors.AsType[*mergeengine.FaultError](err); ok && ctx.Err() == nil {
			q.retryAfterFault(ctx, id, vals, target, strings.ReplaceAll(fe.Error(), cand, target))
			continue
		}
		switch {
		case err != nil:
			code := "conflict"
			if re, ok := errors.AsType[*mergeengine.RefusedError](err); ok {
				// A table the engine classified structural (both sides
				// changed its structure, an incompatible change, a
				// diverged history) fails like any refusal, approved or
				// not: no approval makes the merge exist, and the queue
				// never lands anything but the engine's merge (never the
				// source's table whole). The request keeps the refused
				// tables' classes.
				code = "refused"
				m.engineClasses(re.Tables)
				q.classified(ctx, id, m)
			} else if errors.Is(err, versionstore.ErrInvalid) {
				// The store refuses the merge as asked: it never will
				// succeed, so it fails alone instead of being retried
				// ahead of every later request.
				code = "invalid"
			} else if _, ok := errors.AsType[*versionstore.ConflictError](err); !ok {
				return nil, fmt.Errorf("merge %s onto candidate %s: %w", id, cand, err)
			}
			// The engine's reasons name the branch it merged into, the
			// queue's candidate: to the requester that is the target.
			why := strings.ReplaceAll(err.Error(), cand, target)
			q.finish(ctx, id, vals, StateFailed, code, "merge onto "+target+" at "+candHead.String()+" refused: "+why)
			continue
		case res == nil || !res.WasApplied:
			q.finish(ctx, id, vals, StateFailed, "nothing-to-merge", "nothing to merge: "+target+" already holds every change of the source")
			continue
		}
		candHead = res.ResultantHash
		m.commit = candHead
		for _, d := range changes {
			m.keys = append(m.keys, d.Key)
		}
		members = append(members, m)
	}
	return members, nil
}

func mergeMessage(r *Request) string {
	msg := fmt.Sprintf("merge request %s: merge %s into %s", r.ID, r.Source, r.Target)
	if r.Message != "" {
		msg += "\n\n" + r.Message
	}
	return msg
}

// classRank orders classifications from the lightest.
var classRank = map[string]int{ClassFastForward: 0, ClassCherryPick: 1, ClassRebase: 2, ClassStructural: 3}

// classifyChanges classifies each table a request changes, against the
// candidate's head, as far as that needs no file read, fills m's
// classification, and returns why the request needs a reviewer's
// approval ("" if it does not): the source dropped or replaced a table,
// or (unless the rules say schemaChanges "merge") changed a table's
// schema, partition spec or sort order. Structure changes are read from
// the ids of the source's table against the merge base's
// (classify.StructureChangedIDs: the seed's "compare the schema id, not
// just the summary"), so one is caught even when the target never
// changed the table (a fast-forward, which the merge engine does not
// classify) and its metadata is unreadable. A structure change is not in
// itself a class: a change on one side merges (the engine carries it) and
// a table the target changed too is classified by the merge engine,
// which reads both sides (engineClasses); until then it counts as a
// cherry-pick.
func (q *Queue) classifyChanges(ctx context.Context, candHead versionstore.Hash, changes []versionstore.DiffEntry, m *member) (string, error) {
	var keys []versionstore.ContentKey
	for _, d := range changes {
		if (d.To != nil && d.To.Type == versionstore.IcebergTable) || (d.From != nil && d.From.Type == versionstore.IcebergTable) {
			keys = append(keys, d.Key)
		}
	}
	targets, err := q.store.GetContents(ctx, candHead, keys)
	if err != nil {
		return "", fmt.Errorf("read the target's tables: %w", err)
	}
	var review []string
	for _, d := range changes {
		if !slices.ContainsFunc(keys, func(k versionstore.ContentKey) bool { return slices.Equal(k, d.Key) }) {
			continue
		}
		name := d.Key.String()
		t := apidoc.MergeRequestTable{Table: name, Class: ClassFastForward, Reason: "only the source changed the table"}
		if tgt := targets[string(d.Key.Encode())]; !tgt.Equal(d.From) && !tgt.Equal(d.To) {
			t.Class, t.Reason = ClassCherryPick, "both sides changed the table"
		}
		if why := q.needsReview(d.From, d.To); why != "" {
			t.Reason += "; " + why
			review = append(review, name+": "+why)
		}
		m.tables = append(m.tables, t)
	}
	m.rank()
	return strings.Join(review, "; "), nil
}

// needsReview says why the source's change of a table needs a reviewer's
// approval ("" if it does not).
func (q *Queue) needsReview(base, source *versionstore.Content) string {
	if base == nil || base.Type != versionstore.IcebergTable {
		return "" // created on the source
	}
	if source == nil {
		return "the source dropped the table"
	}
	why := classify.StructureChangedIDs(base, source)
	if why == "" || (q.rules.SchemaChanges == SchemaChangesMerge && base.UUID == source.UUID) {
		return ""
	}
	return why
}

// engineClasses takes the merge engine's classification of the tables
// both sides changed.
func (m *member) engineClasses(outcomes []mergeengine.TableOutcome) {
	for _, o := range outcomes {
		if o.Classification == nil {
			continue
		}
		name := o.Key.String()
		i := slices.IndexFunc(m.tables, func(t apidoc.MergeRequestTable) bool { return t.Table == name })
		t := apidoc.MergeRequestTable{Table: name, Class: queueClass(o.Classification), Reason: o.Classification.Reason}
		if i < 0 {
			m.tables = append(m.tables, t)
		} else {
			m.tables[i] = t
		}
	}
	m.rank()
}

// rank sets m's classification, the heaviest of its tables'.
func (m *member) rank() {
	m.class = ClassFastForward
	for _, t := range m.tables {
		if classRank[t.Class] > classRank[m.class] {
			m.class = t.Class
		}
	}
}

// queueClass names a table's classification as the queue reports it.
func queueClass(t *classify.Table) string {
	switch t.Class {
	case classify.Disjoint, classify.PartitionOverlap:
		return ClassCherryPick
	case classify.FileConflict:
		return ClassRebase
	case classify.Structural:
		return ClassStructural
	}
	return ClassFastForward
}

// toReview sends a request whose change needs approval to review.
func (q *Queue) toReview(ctx context.Context, id string, m *member, why string) {
	_, err := q.change(context.WithoutCancel(ctx), id, func(r *Request) error {
		if r.State != StateValidating {
			return errRequestChanged
		}
		r.Classification, r.TableClasses = m.class, m.tables
		return q.transition(r, StateReview, "", "needs review: "+why, q.principal, "")
	})
	if err != nil && !errors.Is(err, errRequestChanged) {
		q.logger.WarnContext(ctx, "merge queue: cannot route a request to review", "id", id, "err", err)
	}
}

// classified records m's classification on its request.
func (q *Queue) classified(ctx context.Context, id string, m *member) {
	_, err := q.change(context.WithoutCancel(ctx), id, func(r *Request) error {
		if r.State != StateValidating {
			return errRequestChanged
		}
		r.Classification, r.TableClasses = m.class, m.tables
		return nil
	})
	if err != nil && !errors.Is(err, errRequestChanged) {
		q.logger.WarnContext(ctx, "merge queue: cannot record a request's classification", "id", id, "err", err)
	}
}

// finish ends a request of the batch outside a landing. The verdict is
// recorded even if floe is stopping (ctx ended): it was reached, and
// cancellations never reach here as verdicts.
func (q *Queue) finish(ctx context.Context, id string, vals map[string][]apidoc.MergeValidation, state, code, reason string) {
	_, err := q.change(context.WithoutCancel(ctx), id, func(r *Request) error {
		if r.State != StateValidating {
			return errRequestChanged
		}
		r.Validations = append(r.Validations, vals[id]...)
		return q.transition(r, state, code, reason, q.principal, "")
	})
	delete(vals, id)
	if err != nil && !errors.Is(err, errRequestChanged) {
		q.logger.WarnContext(ctx, "merge queue: cannot record a request's end", "id", id, "state", state, "err", err)
	}
}

// failAll fails every request of ids.
func (q *Queue) failAll(ctx context.Context, ids []string, vals map[string][]apidoc.MergeValidation, code, reason string) {
	for _, id := range ids {
		q.finish(ctx, id, vals, StateFailed, code, reason)
	}
}

// retryAfterFault queues request id again after its merge hit a storage
// fault, to be taken once its backoff has passed, or fails it (reason
// code "fault") at the queue's bound. A fault says nothing about the
// request, so unlike a refusal it does not end it; it does not hold back
// the requests behind it either, whose tables may be fine.
func (q *Queue) retryAfterFault(ctx context.Context, id string, vals map[string][]apidoc.MergeValidation, target, why string) {
	q.metrics.faults.WithLabelValues(target).Inc()
	r, err := q.change(context.WithoutCancel(ctx), id, func(r *Request) error {
		if r.State != StateValidating {
			return errRequestChanged
		}
		r.Validations = append(r.Validations, vals[id]...)
		r.Faults++
		if r.Faults >= q.faultRetries {
			return q.transition(r, StateFailed, "fault", fmt.Sprintf("storage fault %d of %d, no more retries: %s", r.Faults, q.faultRetries, why), q.principal, "")
		}
		at := q.clock().Add(q.backoff(r.Faults))
		r.RetryAt = &at
		return q.transition(r, StateQueued, "", fmt.Sprintf("storage fault %d of %d, retried from %s: %s", r.Faults, q.faultRetries, at.Format(time.RFC3339), why), q.principal, "")
	})
	delete(vals, id)
	if err != nil {
		if !errors.Is(err, errRequestChanged) {
			q.logger.WarnContext(ctx, "merge queue: cannot record a storage fault", "id", id, "err", err)
		}
		return
	}
	q.logger.WarnContext(ctx, "merge queue: a request's merge hit a storage fault", "id", id, "target", target,
		"faults", r.Faults, "state", r.State, "err", why)
}

// backoff is the wait after a request's nth storage fault.
func (q *Queue) backoff(n int) time.Duration {
	d := q.faultBackoff
	for i := 1; i < n && d < MaxFaultBackoff; i++ {
		d *= 2
	}
	return min(d, MaxFaultBackoff)
}

// requeue puts validating requests back in the queue.
func (q *Queue) requeue(ctx context.Context, ids []string, reason string) {
	for _, id := range ids {
		_, _ = q.change(ctx, id, func(r *Request) error {
			if r.State != StateValidating {
				return errRequestChanged
			}
			return q.transition(r, StateQueued, "", reason, q.principal, "")
		})
	}
}

// validate runs the validator on every member's candidate, in parallel.
func (q *Queue) validate(ctx context.Context, target, cand string, head versionstore.Hash, members []*member) {
	var wg sync.WaitGroup
	for _, m := range members {
		r, err := q.Get(m.id)
		if err != nil {
			m.val = &apidoc.MergeValidation{Candidate: m.commit.String(), TargetHead: head.String(), At: q.clock(), Error: err.Error()}
			continue
		}
		src, _ := versionstore.ParseHash(r.SourceHash)
		c := Candidate{
			RequestID: r.ID, Target: target, TargetHead: head, Commit: m.commit, CandidateRef: cand,
			SourceRef: r.SourceRef, SourceHash: src, Principal: r.Principal, RequiredChecks: r.RequiredChecks, Tables: m.keys,
			Approved: r.Approved,
		}
		wg.Go(func() { m.val = q.validateOne(ctx, c) })
	}
	wg.Wait()
}

// validateOne validates one candidate: every result must pass and every
// required check must have reported.
func (q *Queue) validateOne(ctx context.Context, c Candidate) *apidoc.MergeValidation {
	v := &apidoc.MergeValidation{Candidate: c.Commit.String(), TargetHead: c.TargetHead.String(), At: q.clock(), Results: []apidoc.MergeCheckResult{}}
	if q.validator != nil {
		res, err := q.validator.Validate(ctx, c)
		if err != nil {
			v.Error = "validation error: " + err.Error()
			return v
		}
		v.Results = append(v.Results, res...)
	}
	v.Passed = true
	for _, r := range v.Results {
		v.Passed = v.Passed && r.Passed
	}
	for _, name := range c.RequiredChecks {
		if !slices.ContainsFunc(v.Results, func(r apidoc.MergeCheckResult) bool { return r.Name == name }) {
			v.Results = append(v.Results, apidoc.MergeCheckResult{Name: name, Reason: "required check did not report"})
			v.Passed = false
		}
	}
	return v
}

// land moves target from head to the last member's candidate commit by
// compare-and-swap, with every member's record, now merged, in the same
// durable write: a request is merged exactly when its target moved.
func (q *Queue) land(ctx context.Context, target string, head versionstore.Hash, members []*member, vals map[string][]apidoc.MergeValidation) error {
	final := members[len(members)-1].commit
	q.mu.Lock()
	defer q.mu.Unlock()
	recs := make([]versionstore.Record, 0, len(members))
	nexts := make([]*Request, 0, len(members))
	for _, m := range members {
		e := q.reqs[m.id]
		if e == nil || e.req.State != StateValidating {
			return errRequestChanged
		}
		next := cloneRequest(e.req)
		next.Validations = append(next.Validations, vals[m.id]...)
		next.Classification, next.TableClasses = m.class, m.tables
		next.Batched = len(members) > 1
		next.LandedCommit, next.LandedOnto = m.commit.String(), head.String()
		why := fmt.Sprintf("merged: %s moved from %s to %s", target, head, final)
		if len(members) > 1 {
			why += fmt.Sprintf(" with a batch of %d", len(members))
		}
		if err := q.transition(next, StateMerged, "", why, q.principal, m.commit.String()); err != nil {
			return err
		}
		recs = append(recs, versionstore.Record{Key: recordKey(m.id), Value: encodeRequest(next),
			If: &versionstore.RecordCondition{Exists: true, Value: e.raw}})
		nexts = append(nexts, next)
	}
	assign := versionstore.AssignRefRequest{Name: target, Type: versionstore.Branch, Expected: head, Target: final,
		Principal: q.principal, Records: recs}
	write := func() error {
		if q.beforeLand != nil {
			q.beforeLand(target)
		}
		_, err := q.store.AssignRef(ctx, assign)
		if q.afterLand != nil {
			q.afterLand(target, err)
		}
		return err
	}
	var err error
	if q.leases == nil {
		err = write()
	} else if h := q.holding(target); h == nil {
		err = errNotHolder
	} else {
		// The fence rides in the same durable write: a holder whose
		// lease was taken over writes nothing.
		err = h.Fenced(func(fence *versionstore.Record) error {
			assign.Records = append(recs[:len(recs):len(recs)], *fence)
			return write()
		})
	}
	if err != nil {
		if errors.Is(err, versionstore.ErrRecordConflict) {
			for _, m := range members {
				q.reload(ctx, q.reqs[m.id])
			}
		}
		return fmt.Errorf("land %d request(s) on %s: %w", len(members), target, err)
	}
	for i, m := range members {
		q.applied(q.reqs[m.id], nexts[i], recs[i].Value)
		delete(vals, m.id)
	}
	q.known[target] = final
	q.metrics.batches.Observe(float64(len(members)))
	return nil
}

// hygiene applies the source rules to landed requests: drop the source
// branch (if it still points at what was merged), tag the landed commit.
// It runs after the landing, so a crash in between leaves a branch to
// drop by hand (or by its retention); the request is merged either way.
// The members' reference changes run concurrently (each its own
// reference, so the store commits them together) and their notes land in
// one write: the next batch waits for neither one write per member.
func (q *Queue) hygiene(ctx context.Context, target string, members []*member) {
	notes := make([][]string, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		r, err := q.Get(m.id)
		if err != nil || r.SourceRef == "" {
			continue
		}
		wg.Go(func() { notes[i] = q.tidySource(ctx, target, r, m.commit) })
	}
	wg.Wait()

	q.mu.Lock()
	defer q.mu.Unlock()
	var es []*entry
	var nexts []*Request
	for i, m := range members {
		e := q.reqs[m.id]
		if len(notes[i]) == 0 || e == nil {
			continue
		}
		next := cloneRequest(e.req)
		next.Hygiene = append(next.Hygiene, notes[i]...)
		es, nexts = append(es, e), append(nexts, next)
	}
	if err := q.persistAll(ctx, es, nexts); err != nil {
		q.logger.WarnContext(ctx, "merge queue: cannot record branch hygiene", "requests", len(es), "err", err)
	}
}

// tidySource applies r's source rule once r landed as commit: it tags the
// commit and drops the source branch as the rule says, and returns what
// it did, for the request's record.
func (q *Queue) tidySource(ctx context.Context, target string, r *Request, commit versionstore.Hash) []string {
	rule, _ := q.rules.ruleFor(r.SourceRef)
	var notes []string
	if rule.Tag != "" {
		name := tagName(rule.Tag, r.SourceRef, r.ID)
		_, err := q.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: name, Type: versionstore.Tag, Target: commit, Principal: q.principal})
		if err != nil {
			notes = append(notes, "tag "+name+" not created: "+err.Error())
		} else {
			notes = append(notes, "tagged "+name)
		}
	}
	if rule.DropAfterMerge && r.SourceRef != target && !q.rules.protected(r.SourceRef) {
		src, _ := versionstore.ParseHash(r.SourceHash)
		err := q.store.DeleteRef(ctx, versionstore.DeleteRefRequest{Name: r.SourceRef, Type: versionstore.Branch, Expected: src, Principal: q.principal})
		switch {
		case err == nil:
			notes = append(notes, "dropped source branch "+r.SourceRef)
		case errors.Is(err, versionstore.ErrReferenceConflict):
			notes = append(notes, "kept source branch "+r.SourceRef+": it moved since the request was made")
		default:
			notes = append(notes, "source branch "+r.SourceRef+" not dropped: "+err.Error())
		}
	}
	return notes
}

// checkBypass looks at a protected target's head: if it moved since the
// queue last saw it, every commit in between reached it by another path
// than the queue. They are counted and logged (the seed's "alert on
// direct commits to main").
func (q *Queue) checkBypass(ctx context.Context, target string) {
	if !q.rules.protected(target) {
		return
	}
	ref, err := q.store.GetRef(target)
	if err != nil {
		return
	}
	q.mu.Lock()
	known, ok := q.known[target]
	q.known[target] = ref.Head
	q.mu.Unlock()
	if !ok || known == ref.Head {
		return
	}
	n := 0
	for h := ref.Head; h != known && h != versionstore.NoAncestor && n < 10000; n++ {
		c, err := q.store.ReadCommit(ctx, h)
		if err != nil {
			break
		}
		h = c.Parent()
	}
	n = max(n, 1)
	q.mu.Lock()
	q.bypassed[target] += n
	q.mu.Unlock()
	q.metrics.bypass.WithLabelValues(target).Add(float64(n))
	q.logger.WarnContext(ctx, "merge queue: commits reached a queue-managed branch without the queue", "target", target,
		"commits", n, "from", known.String(), "to", ref.Head.String())
}
