package mergequeue

import (
	"context"
	"fmt"

	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/feedevent"
)

// The states of a request, and the only ways between them:
//
//	(submitted) ─▶ queued ─▶ validating ─▶ merged
//	                 ▲  ▲        │  │  └──▶ failed
//	                 │  └────────┘  ▼
//	                 │ requeued, review ─▶ rejected
//	                 │ fault retry │
//	                 └─────────────┘ approved
//
// A request being validated goes back to queued when its batch is built
// again without it or floe restarts (requeue, adopt), or after a storage
// fault until its retries run out (then failed); it goes to review when
// its change needs approval, to merged when its candidate lands, to
// failed when a merge or a check refuses it. Approval queues a reviewed
// request again, rejection ends it. Any state that is not final may be
// cancelled. merged, failed, cancelled and rejected are final.
const (
	StateQueued     = "queued"
	StateValidating = "validating"
	StateReview     = "review"
	StateMerged     = "merged"
	StateFailed     = "failed"
	StateCancelled  = "cancelled"
	StateRejected   = "rejected"
)

// states lists every state, in the order of the diagram.
var states = []string{StateQueued, StateValidating, StateReview, StateMerged, StateFailed, StateCancelled, StateRejected}

// Final reports whether a state is final.
func Final(state string) bool {
	switch state {
	case StateMerged, StateFailed, StateCancelled, StateRejected:
		return true
	}
	return false
}

// legal is the transition table: whether a request may go from one state
// to another. "" is a request being submitted. Every change of state goes
// through Queue.transition, which asks it.
func legal(from, to string) bool {
	if to == StateCancelled {
		return from != "" && !Final(from)
	}
	switch from {
	case "":
		return to == StateQueued
	case StateQueued:
		return to == StateValidating
	case StateValidating:
		return to == StateQueued || to == StateReview || to == StateMerged || to == StateFailed
	case StateReview:
		return to == StateQueued || to == StateRejected
	}
	return false
}

// transition moves r to state to, with its reason (and reason code, for
// a final state other than merged), in its audit trail. A move the table
// (legal) does not allow leaves r as it was and fails with ErrState.
func (q *Queue) transition(r *Request, to, code, reason, principal, candidate string) error {
	if !legal(r.State, to) {
		return fmt.Errorf("%w: request %s cannot go from %q to %q", ErrState, r.ID, r.State, to)
	}
	now := q.clock()
	r.Audit = append(r.Audit, apidoc.MergeRequestChange{At: now, From: r.State, To: to, Reason: reason, Principal: principal, Candidate: candidate})
	r.State, r.Reason, r.ReasonCode = to, reason, code
	if Final(to) {
		r.EndedAt = &now
	}
	return nil
}

// writeRecords stores recs (each request's next record) in one durable
// write and, for each request whose state changes from prevs[i] (nil: a
// new request) to nexts[i], its queue.changed event in the change feed,
// in the same write (versionstore.AppendEvents): the feed shows a change
// of state exactly when it was written, in the store's order.
func (q *Queue) writeRecords(ctx context.Context, recs []versionstore.Record, prevs, nexts []*Request) error {
	var evs []versionstore.LogEvent
	for i, next := range nexts {
		ev, ok, err := stateEvent(prevs[i], next)
		if err != nil {
			return err
		}
		if ok {
			evs = append(evs, ev)
		}
	}
	if len(evs) == 0 {
		return q.store.PutRecords(ctx, recs)
	}
	_, err := q.store.AppendEvents(ctx, evs, recs...)
	return err
}

// stateEvent is the change feed's event of a request going from prev's
// state to next's, by the principal of its last audit entry; false when
// the state did not change.
func stateEvent(prev, next *Request) (versionstore.LogEvent, bool, error) {
	from := ""
	if prev != nil {
		from = prev.State
	}
	if from == next.State {
		return versionstore.LogEvent{}, false, nil
	}
	principal := next.Principal
	if n := len(next.Audit); n > 0 {
		principal = next.Audit[n-1].Principal
	}
	ev, err := feedevent.QueueEvent(next.Target, principal, feedevent.QueueChange{
		Request: next.ID, Source: next.Source, From: from, To: next.State, Reason: next.Reason, Commit: next.LandedCommit})
	return ev, err == nil, err
}
