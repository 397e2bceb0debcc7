package mergequeue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/merge/mergeengine"
	"github.com/floe-catalog/floe/versionstore"
)

// maxBuilds bounds how often one batch's candidate is built again because
// its target moved under it (a commit that bypassed the queue) before the
// batch gives up and its requests are queued again.
const maxBuilds = 8

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
		var checks sync.WaitGroup
		// The candidate's files are synced once, before it lands, not
		// one by one as each member's merge writes them.
		var files mergeengine.DeferredSync
		members, err := q.build(ctx, &checks, &files, target, cand, head, ids, vals)
		// The candidate's files are synced while the last members'
		// checks run (a failed check makes that sync needless, not
		// wrong); the landing below waits for both.
		synced := make(chan error, 1)
		go func() { synced <- files.Sync(ctx) }()
		// Every member's checks run while the members after it are
		// merged; their results are read only once all have ended.
		checks.Wait()
		syncErr := <-synced
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
		// Nothing durable names the candidate's files until the target
		// moves to it: they are made durable first.
		if err := syncErr; err != nil {
			q.dropCandidate(ctx, cand)
			q.requeue(context.WithoutCancel(ctx), ids, "the candidate's files could not be synced ("+err.Error()+"); queued again")
			return fmt.Errorf("sync the files of candidate %s: %w", cand, err)
		}
		err = q.land(ctx, target, head, members, vals)
		q.dropCandidate(ctx, cand)
		switch {
		case err == nil:
			// The next batch need not wait for the sources' branch
			// changes: Process (and the worker, before it sleeps or
			// stops) waits for them.
			q.worker(target).tidying.Start(func() { q.hygiene(ctx, target, members) })
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
