package mergequeue

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/versionstore"
)

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

// validate starts the validator on member m's candidate commit, in the
// background under checks: build calls it as soon as it made m's commit,
// so the members' checks run in parallel with each other and with the
// merges of the members after m. runBatch waits for checks before it
// reads any result (m.val).
//
// Invariant: a result is about exactly the commit it names (Candidate,
// built on TargetHead), which the members after m do not change (they
// only add commits on top of it); it is never carried over to another:
// runBatch builds and validates again whenever the candidate changes, and
// drops the results of a build that did not finish.
func (q *Queue) validate(ctx context.Context, checks *sync.WaitGroup, target, cand string, head versionstore.Hash, m *member) {
	r, err := q.Get(m.id)
	if err != nil {
		m.val = &apidoc.MergeValidation{Candidate: m.commit.String(), TargetHead: head.String(), At: q.clock(), Error: err.Error()}
		return
	}
	src, _ := versionstore.ParseHash(r.SourceHash)
	c := Candidate{
		RequestID: r.ID, Target: target, TargetHead: head, Commit: m.commit, CandidateRef: cand,
		SourceRef: r.SourceRef, SourceHash: src, Principal: r.Principal, RequiredChecks: r.RequiredChecks, Tables: m.keys,
		Approved: r.Approved,
	}
	checks.Go(func() { m.val = q.validateOne(ctx, c) })
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
