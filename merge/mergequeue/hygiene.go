package mergequeue

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/floe-catalog/floe/versionstore"
)

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

// hygiene applies the source rules to landed requests: drop the source
// branch (if it still points at what was merged), tag the landed commit.
// It runs after the landing, in the background while the worker builds
// the next batch (worker.tidying), so a crash in between leaves a branch
// to drop by hand (or by its retention); the request is merged either
// way. The members' reference changes run concurrently (each its own
// reference, so the store commits them together) and their notes land in
// one write.
//
// Invariant: hygiene never changes a request's state; it only appends to
// its Hygiene notes, and a failure is a note, never a failed request.
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
