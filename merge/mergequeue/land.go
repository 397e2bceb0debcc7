package mergequeue

import (
	"context"
	"errors"
	"fmt"

	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/versionstore"
)

// land moves target from head to the last member's candidate commit by
// compare-and-swap, with every member's record, now merged, in the same
// durable write: a request is merged exactly when its target moved.
//
// Invariants: the write expects the head the candidate was built on and
// each member's record as the worker read it, so a bypass commit or a
// cancel meanwhile makes it write nothing (ErrReferenceConflict,
// ErrRecordConflict); with leases it also carries the lease's fence, so a
// deposed committer writes nothing. Memory takes the new records only
// after the write is durable.
func (q *Queue) land(ctx context.Context, target string, head versionstore.Hash, members []*member, vals map[string][]apidoc.MergeValidation) error {
	final := members[len(members)-1].commit
	q.mu.Lock()
	defer q.mu.Unlock()
	recs := make([]versionstore.Record, 0, len(members))
	nexts := make([]*Request, 0, len(members))
	events := make([]versionstore.LogEvent, 0, len(members))
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
		// The change feed's queue.changed, in the same write (states.go).
		ev, _, err := stateEvent(e.req, next)
		if err != nil {
			return err
		}
		events = append(events, ev)
	}
	assign := versionstore.AssignRefRequest{Name: target, Type: versionstore.Branch, Expected: head, Target: final,
		Principal: q.principal, Records: recs, Events: events}
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
	q.worker(target).saw(final)
	q.metrics.batches.Observe(float64(len(members)))
	return nil
}
