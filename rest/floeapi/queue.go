package floeapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/housekeeping/refretention"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/versionstore"
)

// The merge queue's actions. queue.submit is decided like a merge into the
// target (the default bundle treats it as one: Ref is the source, Target
// the target, Contents the keys the source changed); queue.approve
// decides who may approve, reject, or cancel another principal's request
// (the default bundle: groups admins and reviewers).
const (
	ActionQueueSubmit  policy.Action = "queue.submit"
	ActionQueueApprove policy.Action = "queue.approve"
)

func (a *API) queueRoutes() []route {
	return []route{
		{http.MethodPost, "/merge-requests", a.submitMergeRequest},
		{http.MethodGet, "/merge-requests", a.listMergeRequests},
		// Before /merge-requests/{id}: ids start with "mr-".
		{http.MethodGet, "/merge-requests/report", a.mergeQueueReport},
		{http.MethodGet, "/merge-requests/{id}", a.getMergeRequest},
		{http.MethodPost, "/merge-requests/{id}/cancel", a.cancelMergeRequest},
		{http.MethodPost, "/merge-requests/{id}/approve", a.approveMergeRequest},
		{http.MethodPost, "/merge-requests/{id}/reject", a.rejectMergeRequest},
	}
}

// submitBody is the body of POST /merge-requests.
type submitBody struct {
	Source         string   `json:"source"`
	Target         string   `json:"target"`
	Tables         []string `json:"tables,omitempty"`
	Priority       int      `json:"priority,omitempty"`
	RequiredChecks []string `json:"requiredChecks,omitempty"`
	IdempotencyKey string   `json:"idempotencyKey,omitempty"`
	Message        string   `json:"message,omitempty"`
}

// queueError maps the queue's errors to the API's model.
func queueError(err error) error {
	switch {
	case errors.Is(err, mergequeue.ErrNotFound):
		return &apiError{status: http.StatusNotFound, code: CodeNotFound, msg: err.Error(), err: err}
	case errors.Is(err, mergequeue.ErrState), errors.Is(err, mergequeue.ErrIdempotencyMismatch):
		return &apiError{status: http.StatusConflict, code: CodeConflict, msg: err.Error(), err: err}
	}
	return err
}

// submitMergeRequest is POST /merge-requests: 201 with the new request,
// or 200 with the first one when the idempotency key was used before.
func (a *API) submitMergeRequest(r *http.Request) (any, error) {
	if a.queue == nil {
		return nil, notConfigured("the merge queue")
	}
	var body submitBody
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	if body.Source == "" || body.Target == "" {
		return nil, badRequest("source and target are required")
	}
	if key := r.Header.Get("Idempotency-Key"); key != "" && body.IdempotencyKey == "" {
		body.IdempotencyKey = key
	}
	ctx := r.Context()
	if a.guard.Enabled() {
		src, err := a.store.Resolve(ctx, body.Source)
		if err != nil {
			return nil, err
		}
		target, err := a.store.GetRef(body.Target)
		if err != nil {
			return nil, err
		}
		changes, _, err := a.queue.SourceChanges(ctx, target.Head, src.Hash, body.Tables)
		if err != nil {
			return nil, queueError(err)
		}
		tgt := authz.Branch(body.Target)
		in := policy.Input{Action: ActionQueueSubmit, Ref: authz.RefOf(src), Target: &tgt, Contents: diffContents(changes)}
		if err := a.guard.Check(r, in); err != nil {
			return nil, err
		}
	}
	req, created, err := a.queue.Submit(ctx, mergequeue.SubmitRequest{
		Source: body.Source, Target: body.Target, Tables: body.Tables, Priority: body.Priority, RequiredChecks: body.RequiredChecks,
		IdempotencyKey: body.IdempotencyKey, Message: body.Message, Principal: a.principal(r),
	})
	if err != nil {
		return nil, queueError(err)
	}
	if created {
		return &reply{status: http.StatusCreated, body: req}, nil
	}
	return req, nil
}

// diffContents describes the keys a source changed for the policy.
func diffContents(changes []versionstore.DiffEntry) []policy.Content {
	checked := make([]versionstore.CheckedChange, 0, len(changes))
	for _, d := range changes {
		c := versionstore.CheckedChange{Key: d.Key, Before: d.From, After: d.To, Kind: versionstore.OpPut}
		if d.To == nil {
			c.Kind = versionstore.OpDelete
		}
		checked = append(checked, c)
	}
	return authz.Changes(checked)
}

// MergeRequestList is the answer of GET /merge-requests.
type MergeRequestList struct {
	Requests []*mergequeue.Request `json:"requests"`
}

func (a *API) listMergeRequests(r *http.Request) (any, error) {
	if a.queue == nil {
		return nil, notConfigured("the merge queue")
	}
	q := r.URL.Query()
	f := mergequeue.Filter{State: q.Get("state"), Target: q.Get("target"), SourcePrefix: q.Get("sourcePrefix")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, badRequest("limit %q: want a non-negative integer", s)
		}
		f.Limit = n
	}
	if s := q.Get("since"); s != "" {
		since, err := parseSince(s)
		if err != nil {
			return nil, err
		}
		f.Since = since
	}
	if err := a.guard.Read(r, policy.Ref{Type: policy.RefDetached}); err != nil {
		return nil, err
	}
	reqs, err := a.queue.ListCurrent(r.Context(), f)
	if err != nil {
		return nil, queueError(err)
	}
	if reqs == nil {
		reqs = []*mergequeue.Request{}
	}
	return MergeRequestList{Requests: reqs}, nil
}

// parseSince reads a time (RFC 3339) or a duration back from now (24h,
// 7d).
func parseSince(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := refretention.ParseDuration(s)
	if err != nil {
		return time.Time{}, badRequest("since %q: want an RFC 3339 time or a duration (24h, 7d)", s)
	}
	return time.Now().Add(-d), nil
}

func (a *API) mergeRequest(r *http.Request) (*mergequeue.Request, error) {
	if a.queue == nil {
		return nil, notConfigured("the merge queue")
	}
	req, err := a.queue.GetCurrent(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		return nil, queueError(err)
	}
	return req, nil
}

func (a *API) getMergeRequest(r *http.Request) (any, error) {
	req, err := a.mergeRequest(r)
	if err != nil {
		return nil, err
	}
	if err := a.guard.Read(r, authz.Branch(req.Target)); err != nil {
		return nil, err
	}
	return req, nil
}

// reasonBody is the optional body of cancel, approve and reject.
type reasonBody struct {
	Reason string `json:"reason,omitempty"`
}

func (a *API) reason(r *http.Request) (string, error) {
	if r.ContentLength == 0 {
		return "", nil
	}
	var b reasonBody
	if err := decode(r, &b); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.Reason), nil
}

// mayReview asks the policy whether the caller may approve requests into
// target.
func (a *API) mayReview(r *http.Request, target string) error {
	tgt := authz.Branch(target)
	return a.guard.Check(r, policy.Input{Action: ActionQueueApprove, Ref: tgt, Target: &tgt})
}

// cancelMergeRequest: the submitter may cancel their own request; anyone
// else needs what approving needs.
func (a *API) cancelMergeRequest(r *http.Request) (any, error) {
	req, err := a.mergeRequest(r)
	if err != nil {
		return nil, err
	}
	why, err := a.reason(r)
	if err != nil {
		return nil, err
	}
	who := a.principal(r)
	if who != req.Principal {
		if err := a.mayReview(r, req.Target); err != nil {
			return nil, err
		}
	}
	out, err := a.queue.Cancel(r.Context(), req.ID, who, why)
	return out, queueError(err)
}

func (a *API) approveMergeRequest(r *http.Request) (any, error) {
	return a.review(r, a.queue.Approve)
}

func (a *API) rejectMergeRequest(r *http.Request) (any, error) {
	return a.review(r, a.queue.Reject)
}

func (a *API) review(r *http.Request, do func(ctx context.Context, id, principal, reason string) (*mergequeue.Request, error)) (any, error) {
	req, err := a.mergeRequest(r)
	if err != nil {
		return nil, err
	}
	why, err := a.reason(r)
	if err != nil {
		return nil, err
	}
	if err := a.mayReview(r, req.Target); err != nil {
		return nil, err
	}
	out, err := do(r.Context(), req.ID, a.principal(r), why)
	if err != nil {
		return nil, queueError(err)
	}
	return out, nil
}

// mergeQueueReport is GET /merge-requests/report?since=24h.
func (a *API) mergeQueueReport(r *http.Request) (any, error) {
	if a.queue == nil {
		return nil, notConfigured("the merge queue")
	}
	since := time.Now().Add(-24 * time.Hour)
	if s := r.URL.Query().Get("since"); s != "" {
		var err error
		if since, err = parseSince(s); err != nil {
			return nil, err
		}
	}
	if err := a.guard.Read(r, policy.Ref{Type: policy.RefDetached}); err != nil {
		return nil, err
	}
	rep, err := a.queue.ReportCurrent(r.Context(), since)
	if err != nil {
		return nil, queueError(err)
	}
	return rep, nil
}
