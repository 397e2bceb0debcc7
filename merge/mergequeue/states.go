package mergequeue

import (
	"fmt"

	"github.com/floe-catalog/floe/internal/apidoc"
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
