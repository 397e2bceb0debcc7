package mergequeue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floe-catalog/floe/internal/apidoc"
)

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
