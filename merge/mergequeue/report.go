package mergequeue

import (
	"slices"
	"sort"
	"time"

	"github.com/floe-catalog/floe/internal/apidoc"
)

// Report summarizes the requests enqueued since a time, per request class
// (the source's branch-prefix class): how many, how they classified, the
// median wait (enqueue to the worker first taking it) and merge time
// (first take to landing) of those merged, and the failures by reason:
// the seed's "day in the merge queue" table.
func (q *Queue) Report(since time.Time) *Report {
	now := q.clock()
	rep := &Report{Since: since.UTC(), Until: now, Classes: []apidoc.MergeQueueReportClass{}, States: map[string]int{},
		Pending: []apidoc.MergeQueueReportTarget{}}
	type acc struct {
		line        apidoc.MergeQueueReportClass
		waits, runs []float64
	}
	classes := map[string]*acc{}
	pending := map[string]*apidoc.MergeQueueReportTarget{}
	q.mu.RLock()
	for _, e := range q.reqs {
		r := e.req
		switch r.State {
		case StateQueued, StateValidating, StateReview:
			p := pending[r.Target]
			if p == nil {
				p = &apidoc.MergeQueueReportTarget{Target: r.Target}
				pending[r.Target] = p
			}
			if r.State == StateReview {
				p.Review++
			} else {
				p.Queued++
			}
		}
		if r.EnqueuedAt.Before(since) {
			continue
		}
		rep.States[r.State]++
		a := classes[r.Class]
		if a == nil {
			a = &acc{line: apidoc.MergeQueueReportClass{Class: r.Class, Classification: map[string]int{}, FailureReasons: map[string]int{}}}
			classes[r.Class] = a
		}
		a.line.Count++
		if r.Classification != "" {
			a.line.Classification[r.Classification]++
		}
		if r.Batched {
			a.line.Batched++
		}
		if r.StartedAt != nil {
			a.waits = append(a.waits, r.StartedAt.Sub(r.EnqueuedAt).Seconds())
		}
		switch r.State {
		case StateMerged:
			if r.StartedAt != nil && r.EndedAt != nil {
				a.runs = append(a.runs, r.EndedAt.Sub(*r.StartedAt).Seconds())
			}
		case StateFailed:
			a.line.Failures++
			a.line.FailureReasons[r.ReasonCode]++
		case StateReview:
			a.line.Review++
		case StateCancelled:
			a.line.Cancelled++
		case StateRejected:
			a.line.Rejected++
		}
	}
	q.mu.RUnlock()
	rep.Bypass = q.bypassCounts()
	for _, a := range classes {
		a.line.MedianWaitSeconds, a.line.MedianMergeSeconds = median(a.waits), median(a.runs)
		rep.Classes = append(rep.Classes, a.line)
	}
	slices.SortFunc(rep.Classes, func(a, b apidoc.MergeQueueReportClass) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		if a.Class < b.Class {
			return -1
		}
		return 1
	})
	for _, p := range pending {
		rep.Pending = append(rep.Pending, *p)
	}
	sort.Slice(rep.Pending, func(i, j int) bool { return rep.Pending[i].Target < rep.Pending[j].Target })
	return rep
}

// median of xs; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}
