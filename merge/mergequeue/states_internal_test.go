package mergequeue

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestTransitionTable walks the state machine: it lists every move the
// table allows, checks it against the documented one, and requires that
// every state is reachable from a submission, that every state not final
// leads to a final one, that final states have no way out, and that
// transition refuses a move off the table without touching the request.
func TestTransitionTable(t *testing.T) {
	want := map[[2]string]bool{
		{"", StateQueued}:                 true,
		{StateQueued, StateValidating}:    true,
		{StateQueued, StateCancelled}:     true,
		{StateValidating, StateQueued}:    true,
		{StateValidating, StateReview}:    true,
		{StateValidating, StateMerged}:    true,
		{StateValidating, StateFailed}:    true,
		{StateValidating, StateCancelled}: true,
		{StateReview, StateQueued}:        true,
		{StateReview, StateRejected}:      true,
		{StateReview, StateCancelled}:     true,
	}
	from := append([]string{""}, states...)
	for _, f := range from {
		for _, to := range states {
			if got := legal(f, to); got != want[[2]string{f, to}] {
				t.Errorf("legal(%q, %q) = %v, want %v", f, to, got, !got)
			}
		}
		if legal(f, "") {
			t.Errorf("legal(%q, \"\"): nothing goes back to before its submission", f)
		}
	}

	// Reachable from a submission, by a walk of the table.
	reached := map[string]bool{"": true}
	for frontier := []string{""}; len(frontier) > 0; {
		f := frontier[0]
		frontier = frontier[1:]
		for _, to := range states {
			if legal(f, to) && !reached[to] {
				reached[to] = true
				frontier = append(frontier, to)
			}
		}
	}
	for _, s := range states {
		if !reached[s] {
			t.Errorf("state %q cannot be reached from a submission", s)
		}
		exits := slices.ContainsFunc(states, func(to string) bool { return legal(s, to) })
		if Final(s) && exits {
			t.Errorf("final state %q has a way out", s)
		}
		if !Final(s) && !legal(s, StateCancelled) {
			t.Errorf("state %q cannot be cancelled", s)
		}
	}

	q := &Queue{now: func() time.Time { return time.Unix(1, 0) }}
	r := &Request{ID: "r", State: StateMerged}
	before := *r
	if err := q.transition(r, StateQueued, "", "again", "p", ""); !errors.Is(err, ErrState) {
		t.Fatalf("merged → queued: %v, want ErrState", err)
	}
	if r.State != before.State || len(r.Audit) != 0 || r.EndedAt != nil {
		t.Fatalf("a refused move changed the request: %+v", r)
	}
	r = &Request{ID: "r", State: StateValidating}
	if err := q.transition(r, StateFailed, "refused", "no", "p", ""); err != nil {
		t.Fatal(err)
	}
	if r.State != StateFailed || r.ReasonCode != "refused" || r.EndedAt == nil || len(r.Audit) != 1 || r.Audit[0].From != StateValidating {
		t.Fatalf("validating → failed recorded as %+v", r)
	}
}
