package mergequeue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/merge/mergeengine"
	"github.com/floe-catalog/floe/versionstore"
)

// PropRequest is the commit property naming the merge request a merge
// commit of the queue carries.
const PropRequest = "floe.queue.request"

// PropLeaseEpoch is the commit property of a queue's merge commit, over a
// shared store, naming the epoch of the lease its committer held.
const PropLeaseEpoch = "floe.queue.lease-epoch"

// build merges each request of ids, in order, onto the candidate branch,
// classifying it first against the candidate's head (which holds the
// requests before it: a request overlapping one of them is classified
// again on top of it, not failed). A structural request goes to review; a
// request the engine refuses fails; the others are the members, each
// validated (validate, under checks) from the moment its commit exists.
//
// Invariants: every merge names the candidate's head it expects
// (ExpectedTarget), so each member's commit is the previous member's (or
// head) plus that member's changes, and the last member's commit holds the
// whole batch; only the candidate branch moves here, never the target. A
// request that cannot be a member leaves the batch with a final or review
// state of its own, or back in the queue after a storage fault; an error
// returned is about the build, not any request, and the caller queues the
// batch again. The merges write their files under files
// (mergeengine.WithDeferredSync): the caller syncs them before anything
// durable names the candidate.
func (q *Queue) build(ctx context.Context, checks *sync.WaitGroup, files *mergeengine.DeferredSync, target, cand string, head versionstore.Hash, ids []string, vals map[string][]apidoc.MergeValidation) ([]*member, error) {
	candHead := head
	var members []*member
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err // shutting down: nothing here is the request's fault
		}
		r, err := q.Get(id)
		if err != nil || r.State != StateValidating {
			continue // cancelled meanwhile
		}
		src, err := versionstore.ParseHash(r.SourceHash)
		if err != nil {
			q.finish(ctx, id, vals, StateFailed, "invalid", "source hash: "+err.Error())
			continue
		}
		changes, _, err := q.SourceChanges(ctx, candHead, src, r.Tables)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			q.finish(ctx, id, vals, StateFailed, "conflict", err.Error())
			continue
		}
		if len(changes) == 0 {
			q.finish(ctx, id, vals, StateFailed, "nothing-to-merge", "nothing to merge: "+target+" already holds every change of the source")
			continue
		}
		m := &member{id: id}
		review, err := q.classifyChanges(ctx, candHead, changes, m)
		if err != nil {
			return nil, err
		}
		if review != "" && !r.Approved {
			q.toReview(ctx, id, m, review)
			continue
		}
		req := versionstore.MergeRequest{
			Target: cand, ExpectedTarget: candHead, From: src, FromRef: r.SourceRef, Committer: q.principal,
			Meta: versionstore.CommitMeta{Message: mergeMessage(r), Properties: map[string]string{PropRequest: r.ID}},
		}
		if h := q.holding(target); h != nil {
			req.Meta.Properties[PropLeaseEpoch] = strconv.FormatInt(h.Current().Epoch, 10)
		}
		if len(r.Tables) > 0 {
			req.DefaultMode = versionstore.MergeDrop
			for _, d := range changes {
				req.KeyModes = append(req.KeyModes, versionstore.KeyMergeMode{Key: d.Key, Behavior: versionstore.MergeNormal})
			}
		}
		mctx := mergeengine.WithDeferredSync(ctx, files)
		res, err := q.merger.MergeTables(mctx, req)
		if res != nil {
			m.engineClasses(res.Tables)
		}
		if fe, ok := errors.AsType[*mergeengine.FaultError](err); ok && ctx.Err() == nil {
			q.retryAfterFault(ctx, id, vals, target, strings.ReplaceAll(fe.Error(), cand, target))
			continue
		}
		switch {
		case err != nil:
			code := "conflict"
			if re, ok := errors.AsType[*mergeengine.RefusedError](err); ok {
				// A table the engine classified structural (both sides
				// changed its structure, an incompatible change, a
				// diverged history) fails like any refusal, approved or
				// not: no approval makes the merge exist, and the queue
				// never lands anything but the engine's merge (never the
				// source's table whole). The request keeps the refused
				// tables' classes.
				code = "refused"
				m.engineClasses(re.Tables)
				q.classified(ctx, id, m)
			} else if errors.Is(err, versionstore.ErrInvalid) {
				// The store refuses the merge as asked: it never will
				// succeed, so it fails alone instead of being retried
				// ahead of every later request.
				code = "invalid"
			} else if _, ok := errors.AsType[*versionstore.ConflictError](err); !ok {
				return nil, fmt.Errorf("merge %s onto candidate %s: %w", id, cand, err)
			}
			// The engine's reasons name the branch it merged into, the
			// queue's candidate: to the requester that is the target.
			why := strings.ReplaceAll(err.Error(), cand, target)
			q.finish(ctx, id, vals, StateFailed, code, "merge onto "+target+" at "+candHead.String()+" refused: "+why)
			continue
		case res == nil || !res.WasApplied:
			q.finish(ctx, id, vals, StateFailed, "nothing-to-merge", "nothing to merge: "+target+" already holds every change of the source")
			continue
		}
		// The member's files are synced in the background while the
		// next members are merged; the sync before the landing then has
		// little left to do (a failed one leaves its files to it).
		files.SyncLater(ctx)
		candHead = res.ResultantHash
		m.commit = candHead
		for _, d := range changes {
			m.keys = append(m.keys, d.Key)
		}
		members = append(members, m)
		q.validate(ctx, checks, target, cand, head, m)
	}
	return members, nil
}

func mergeMessage(r *Request) string {
	msg := fmt.Sprintf("merge request %s: merge %s into %s", r.ID, r.Source, r.Target)
	if r.Message != "" {
		msg += "\n\n" + r.Message
	}
	return msg
}

// classRank orders classifications from the lightest.
var classRank = map[string]int{ClassFastForward: 0, ClassCherryPick: 1, ClassRebase: 2, ClassStructural: 3}

// classifyChanges classifies each table a request changes, against the
// candidate's head, as far as that needs no file read, fills m's
// classification, and returns why the request needs a reviewer's
// approval ("" if it does not): the source dropped or replaced a table,
// or (unless the rules say schemaChanges "merge") changed a table's
// schema, partition spec or sort order. Structure changes are read from
// the ids of the source's table against the merge base's
// (classify.StructureChangedIDs: the seed's "compare the schema id, not
// just the summary"), so one is caught even when the target never
// changed the table (a fast-forward, which the merge engine does not
// classify) and its metadata is unreadable. A structure change is not in
// itself a class: a change on one side merges (the engine carries it) and
// a table the target changed too is classified by the merge engine,
// which reads both sides (engineClasses); until then it counts as a
// cherry-pick.
func (q *Queue) classifyChanges(ctx context.Context, candHead versionstore.Hash, changes []versionstore.DiffEntry, m *member) (string, error) {
	var keys []versionstore.ContentKey
	for _, d := range changes {
		if (d.To != nil && d.To.Type == versionstore.IcebergTable) || (d.From != nil && d.From.Type == versionstore.IcebergTable) {
			keys = append(keys, d.Key)
		}
	}
	targets, err := q.store.GetContents(ctx, candHead, keys)
	if err != nil {
		return "", fmt.Errorf("read the target's tables: %w", err)
	}
	var review []string
	for _, d := range changes {
		if !slices.ContainsFunc(keys, func(k versionstore.ContentKey) bool { return slices.Equal(k, d.Key) }) {
			continue
		}
		name := d.Key.String()
		t := apidoc.MergeRequestTable{Table: name, Class: ClassFastForward, Reason: "only the source changed the table"}
		if tgt := targets[string(d.Key.Encode())]; !tgt.Equal(d.From) && !tgt.Equal(d.To) {
			t.Class, t.Reason = ClassCherryPick, "both sides changed the table"
		}
		if why := q.needsReview(d.From, d.To); why != "" {
			t.Reason += "; " + why
			review = append(review, name+": "+why)
		}
		m.tables = append(m.tables, t)
	}
	m.rank()
	return strings.Join(review, "; "), nil
}

// needsReview says why the source's change of a table needs a reviewer's
// approval ("" if it does not).
func (q *Queue) needsReview(base, source *versionstore.Content) string {
	if base == nil || base.Type != versionstore.IcebergTable {
		return "" // created on the source
	}
	if source == nil {
		return "the source dropped the table"
	}
	why := classify.StructureChangedIDs(base, source)
	if why == "" || (q.rules.SchemaChanges == SchemaChangesMerge && base.UUID == source.UUID) {
		return ""
	}
	return why
}

// engineClasses takes the merge engine's classification of the tables
// both sides changed.
func (m *member) engineClasses(outcomes []mergeengine.TableOutcome) {
	for _, o := range outcomes {
		if o.Classification == nil {
			continue
		}
		name := o.Key.String()
		i := slices.IndexFunc(m.tables, func(t apidoc.MergeRequestTable) bool { return t.Table == name })
		t := apidoc.MergeRequestTable{Table: name, Class: queueClass(o.Classification), Reason: o.Classification.Reason}
		if i < 0 {
			m.tables = append(m.tables, t)
		} else {
			m.tables[i] = t
		}
	}
	m.rank()
}

// rank sets m's classification, the heaviest of its tables'.
func (m *member) rank() {
	m.class = ClassFastForward
	for _, t := range m.tables {
		if classRank[t.Class] > classRank[m.class] {
			m.class = t.Class
		}
	}
}

// queueClass names a table's classification as the queue reports it.
func queueClass(t *classify.Table) string {
	switch t.Class {
	case classify.Disjoint, classify.PartitionOverlap:
		return ClassCherryPick
	case classify.FileConflict:
		return ClassRebase
	case classify.Structural:
		return ClassStructural
	}
	return ClassFastForward
}

// toReview sends a request whose change needs approval to review.
func (q *Queue) toReview(ctx context.Context, id string, m *member, why string) {
	_, err := q.change(context.WithoutCancel(ctx), id, func(r *Request) error {
		if r.State != StateValidating {
			return errRequestChanged
		}
		r.Classification, r.TableClasses = m.class, m.tables
		return q.transition(r, StateReview, "", "needs review: "+why, q.principal, "")
	})
	if err != nil && !errors.Is(err, errRequestChanged) {
		q.logger.WarnContext(ctx, "merge queue: cannot route a request to review", "id", id, "err", err)
	}
}

// classified records m's classification on its request.
func (q *Queue) classified(ctx context.Context, id string, m *member) {
	_, err := q.change(context.WithoutCancel(ctx), id, func(r *Request) error {
		if r.State != StateValidating {
			return errRequestChanged
		}
		r.Classification, r.TableClasses = m.class, m.tables
		return nil
	})
	if err != nil && !errors.Is(err, errRequestChanged) {
		q.logger.WarnContext(ctx, "merge queue: cannot record a request's classification", "id", id, "err", err)
	}
}
