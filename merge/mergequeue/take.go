package mergequeue

import (
	"context"
	"fmt"
	"slices"
	"time"
)

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
