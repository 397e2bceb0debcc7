package mergequeue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/merge/mergeengine"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/lease"
)

// Errors callers branch on.
var (
	// ErrNotFound: no request has that id.
	ErrNotFound = errors.New("merge request not found")
	// ErrState: the request's state does not allow the operation (a
	// cancel of a merged request, an approval of one not in review).
	ErrState = errors.New("merge request state does not allow this")
	// ErrIdempotencyMismatch: the idempotency key was used before for a
	// different request.
	ErrIdempotencyMismatch = errors.New("idempotency key already used for a different merge request")
)

// Merger merges a source into a branch through the merge engine
// (*mergeengine.Engine).
type Merger interface {
	MergeTables(ctx context.Context, req versionstore.MergeRequest) (*mergeengine.Result, error)
}

// Options configure a Queue.
type Options struct {
	Store  *versionstore.Store
	Merger Merger
	// Validator judges each candidate; nil passes every candidate that
	// has no required check (a request with one then fails: nothing
	// reported it).
	Validator Validator
	Rules     Rules
	// Principal is the committer of the queue's merges and moves; ""
	// is "floe-queue".
	Principal string
	Logger    *slog.Logger
	Metrics   prometheus.Registerer
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Poll is how often an idle worker looks at its branch (bypass
	// commits, requests of another replica); 0 is 5 seconds.
	Poll time.Duration
	// FaultRetries bounds the storage faults (mergeengine.FaultError) of
	// one request: its merge is retried after each, and the
	// FaultRetries-th fails it with reason code "fault"; 0 is
	// DefaultFaultRetries. FaultBackoff is the wait after
	// the first, doubled after each next up to MaxFaultBackoff; 0 is
	// DefaultFaultBackoff.
	FaultRetries int
	FaultBackoff time.Duration

	// Leases, when set, make the queue one of several replicas over a
	// shared store (backend.Shared): a target's worker runs only while
	// this replica holds the lease LeaseName(target), every landing
	// write carries the lease's fence, and requests are read from the
	// store before each batch and every Poll (see README.md, "Several
	// replicas"). nil (one process, Pebble): no lease, no extra reads.
	Leases *lease.Leases
	// Holder names this replica in the leases; required with Leases.
	Holder string
	// LeaseTTL is how long a lease outlives its holder's last renewal;
	// 0 is DefaultLeaseTTL. A dead holder's targets are taken over
	// within LeaseTTL plus LeaseTTL/3 (the renewal and retry interval).
	LeaseTTL time.Duration
}

// The defaults of Options.FaultRetries and FaultBackoff, and the longest
// wait between two attempts: a request retried from the first fault to the
// last waits about half an hour in all, long enough to ride out a full
// disk or a permission fixed by hand, short enough that a warehouse that
// stays broken fails the request with its cause.
const (
	DefaultFaultRetries = 12
	DefaultFaultBackoff = 2 * time.Second
	MaxFaultBackoff     = 5 * time.Minute
)

// DefaultLeaseTTL is the lease TTL of Options.LeaseTTL 0.
const DefaultLeaseTTL = 10 * time.Second

// LeaseName is the name of the lease whose holder is target's committer.
func LeaseName(target string) string { return "mergequeue/" + target }

// Queue is the merge queue. Its methods are safe for concurrent use;
// requests of one target are processed by one worker at a time.
type Queue struct {
	store     *versionstore.Store
	merger    Merger
	validator Validator
	rules     Rules
	principal string
	logger    *slog.Logger
	metrics   *metrics
	now       func() time.Time
	poll      time.Duration
	// faultRetries and faultBackoff: Options.FaultRetries and
	// FaultBackoff.
	faultRetries int
	faultBackoff time.Duration

	// mu guards reqs and seq. Every write of an existing request's
	// record happens under it, with a compare-and-swap on the bytes reqs
	// holds, so memory and store agree. A new request's record is created
	// outside it (Submit) and enters reqs only if a refresh did not put
	// it there first.
	mu   sync.RWMutex
	reqs map[string]*entry
	seq  uint64

	// workers are the targets' workers (worker.go), made on first use;
	// kick tells Run of a target with a new request.
	workersMu sync.Mutex
	workers   map[string]*worker
	kick      chan string

	// With leases (Options.Leases): each worker holds its target's lease
	// while it is the target's committer.
	leases   *lease.Leases
	holder   string
	leaseTTL time.Duration

	// Test hooks (export_test.go): beforeLand runs just before a
	// landing write, inside its fence; crashed makes a stopping worker
	// abandon its lease instead of releasing it, as a killed process.
	beforeLand func(target string)
	afterLand  func(target string, err error)
	crashed    bool
}

// entry is one request as stored: the decoded value and its exact bytes.
type entry struct {
	req *Request
	raw []byte
}

// New opens the queue over the requests stored in o.Store. Requests found
// validating (floe stopped while their candidate was built or checked)
// are queued again, and candidate branches left behind are deleted: a
// request lands only with the write that moves its target and records it
// merged, so such a request has not landed.
func New(ctx context.Context, o Options) (*Queue, error) {
	if o.Store == nil || o.Merger == nil {
		return nil, errors.New("merge queue: a store and a merger are required")
	}
	if err := o.Rules.Validate(); err != nil {
		return nil, fmt.Errorf("merge queue rules: %w", err)
	}
	m, err := newMetrics(o.Metrics)
	if err != nil {
		return nil, err
	}
	q := &Queue{
		store: o.Store, merger: o.Merger, validator: o.Validator, rules: o.Rules,
		principal: o.Principal, logger: o.Logger, metrics: m, now: o.Now, poll: o.Poll,
		faultRetries: o.FaultRetries, faultBackoff: o.FaultBackoff,
		reqs: map[string]*entry{}, workers: map[string]*worker{}, kick: make(chan string, 256),
		leases: o.Leases, holder: o.Holder, leaseTTL: o.LeaseTTL,
	}
	if q.leases != nil && q.holder == "" {
		return nil, errors.New("merge queue: leases need a holder name")
	}
	if q.leaseTTL <= 0 {
		q.leaseTTL = DefaultLeaseTTL
	}
	if q.principal == "" {
		q.principal = "floe-queue"
	}
	if q.logger == nil {
		q.logger = slog.New(slog.DiscardHandler)
	}
	if q.now == nil {
		q.now = time.Now
	}
	if q.poll <= 0 {
		q.poll = 5 * time.Second
	}
	if q.faultRetries <= 0 {
		q.faultRetries = DefaultFaultRetries
	}
	if q.faultBackoff <= 0 {
		q.faultBackoff = DefaultFaultBackoff
	}
	if err := q.load(ctx); err != nil {
		return nil, err
	}
	if q.leases != nil {
		// Another replica may be building candidates and validating
		// requests now: its leftovers are the next lease holder's to
		// clean (adopt, sweepCandidates).
		return q, nil
	}
	for _, r := range q.store.ListRefs() {
		if strings.HasPrefix(r.Name, CandidatePrefix) && r.Type == versionstore.Branch {
			if err := q.store.DeleteRef(ctx, versionstore.DeleteRefRequest{Name: r.Name, Expected: r.Head, Principal: q.principal}); err != nil {
				q.logger.WarnContext(ctx, "merge queue: cannot delete a candidate branch left behind", "ref", r.Name, "err", err)
			}
		}
	}
	for _, b := range q.rules.Protected {
		if r, err := q.store.GetRef(b); err == nil {
			q.worker(b).saw(r.Head)
		}
	}
	return q, nil
}

func (q *Queue) clock() time.Time { return q.now().UTC().Truncate(time.Microsecond) }

// load reads every request record.
func (q *Queue) load(ctx context.Context) error {
	after := ""
	for {
		recs, next, err := q.store.ScanRecords(ctx, recordPrefix, after, 512)
		if err != nil {
			return fmt.Errorf("merge queue: load requests: %w", err)
		}
		for _, rec := range recs {
			r, err := decodeRequest(rec.Value)
			if err != nil {
				q.logger.WarnContext(ctx, "merge queue: skipping an unreadable request record", "key", rec.Key, "err", err)
				continue
			}
			q.reqs[r.ID] = &entry{req: r, raw: rec.Value}
			q.seq = max(q.seq, r.Seq)
		}
		if next == "" {
			break
		}
		after = next
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.reqs {
		if e.req.State != StateValidating || q.leases != nil {
			continue
		}
		next := cloneRequest(e.req)
		if err := q.transition(next, StateQueued, "", "floe restarted while the request was being validated; its candidate never landed, so it is queued again", q.principal, ""); err != nil {
			return fmt.Errorf("merge queue: requeue %s: %w", e.req.ID, err)
		}
		if err := q.persist(ctx, e, next); err != nil {
			return fmt.Errorf("merge queue: requeue %s: %w", e.req.ID, err)
		}
	}
	q.updateDepth()
	return nil
}

// refresh reads every request record again and takes what other
// replicas wrote: requests submitted to them, and changes they made. Only
// with leases; a record that differs from memory is read once more under
// q.mu, so a write of this replica made after the scan read is not undone.
func (q *Queue) refresh(ctx context.Context) error {
	var changed []string
	after := ""
	for {
		recs, next, err := q.store.ScanRecords(ctx, recordPrefix, after, 512)
		if err != nil {
			return fmt.Errorf("merge queue: read requests: %w", err)
		}
		q.mu.RLock()
		for _, rec := range recs {
			id := strings.TrimPrefix(rec.Key, recordPrefix)
			if e := q.reqs[id]; e == nil || !bytes.Equal(e.raw, rec.Value) {
				changed = append(changed, id)
			}
		}
		q.mu.RUnlock()
		if next == "" {
			break
		}
		after = next
	}
	if len(changed) == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, id := range changed {
		rec, err := q.store.GetRecord(ctx, recordKey(id))
		if err != nil {
			continue // expired or unreadable: keep what memory holds
		}
		r, err := decodeRequest(rec.Value)
		if err != nil {
			continue
		}
		if e := q.reqs[id]; e != nil {
			e.req, e.raw = r, rec.Value
		} else {
			q.reqs[id] = &entry{req: r, raw: rec.Value}
		}
		q.seq = max(q.seq, r.Seq)
	}
	q.updateDepth()
	return nil
}

// persist writes next as e's new value, by compare-and-swap on the bytes
// e holds. q.mu must be held. On a conflict (another replica, or a bug)
// e is reloaded from the store.
func (q *Queue) persist(ctx context.Context, e *entry, next *Request) error {
	raw := encodeRequest(next)
	err := q.writeRecords(ctx, []versionstore.Record{{Key: recordKey(next.ID), Value: raw,
		If: &versionstore.RecordCondition{Exists: true, Value: e.raw}}}, []*Request{e.req}, []*Request{next})
	if errors.Is(err, versionstore.ErrRecordConflict) {
		q.reload(ctx, e)
	}
	if err != nil {
		return fmt.Errorf("store merge request %s: %w", next.ID, err)
	}
	q.applied(e, next, raw)
	return nil
}

// persistAll stores the requests' next values in one durable write, each
// conditional on its record still holding what e holds: all or none.
// On a conflict every request of the write is read again (persist).
func (q *Queue) persistAll(ctx context.Context, es []*entry, nexts []*Request) error {
	recs := make([]versionstore.Record, len(es))
	raws := make([][]byte, len(es))
	prevs := make([]*Request, len(es))
	for i, e := range es {
		raws[i] = encodeRequest(nexts[i])
		recs[i] = versionstore.Record{Key: recordKey(nexts[i].ID), Value: raws[i],
			If: &versionstore.RecordCondition{Exists: true, Value: e.raw}}
		prevs[i] = e.req
	}
	err := q.writeRecords(ctx, recs, prevs, nexts)
	if errors.Is(err, versionstore.ErrRecordConflict) {
		for _, e := range es {
			q.reload(ctx, e)
		}
	}
	if err != nil {
		return fmt.Errorf("store %d merge request(s): %w", len(es), err)
	}
	for i, e := range es {
		q.applied(e, nexts[i], raws[i])
	}
	return nil
}

// applied makes next e's value in memory once it is durable.
func (q *Queue) applied(e *entry, next *Request, raw []byte) {
	prev := e.req
	e.req, e.raw = next, raw
	if Final(next.State) && !Final(prev.State) {
		reason := next.ReasonCode
		if next.State == StateMerged {
			reason = ""
		}
		q.metrics.outcomes.WithLabelValues(next.Class, next.State, reason).Inc()
		if next.State == StateMerged && next.StartedAt != nil {
			q.metrics.merge.WithLabelValues(next.Class).Observe(next.EndedAt.Sub(*next.StartedAt).Seconds())
		}
	}
	q.updateDepth()
}

// reload reads e's record again after a failed compare-and-swap.
func (q *Queue) reload(ctx context.Context, e *entry) {
	rec, err := q.store.GetRecord(ctx, recordKey(e.req.ID))
	if err != nil {
		q.logger.WarnContext(ctx, "merge queue: cannot reload a request", "id", e.req.ID, "err", err)
		return
	}
	if r, err := decodeRequest(rec.Value); err == nil {
		e.req, e.raw = r, rec.Value
	}
}

// updateDepth sets the depth gauges. q.mu must be held.
func (q *Queue) updateDepth() {
	type k struct{ target, state string }
	n := map[k]int{}
	for _, e := range q.reqs {
		switch e.req.State {
		case StateQueued, StateValidating, StateReview:
			n[k{e.req.Target, e.req.State}]++
		}
	}
	q.metrics.depth.Reset()
	for key, v := range n {
		q.metrics.depth.WithLabelValues(key.target, key.state).Set(float64(v))
	}
}

// Submit enqueues a merge request. With an idempotency key already used by
// the same principal it returns the first request (created false), or
// ErrIdempotencyMismatch if that one merges something else.
func (q *Queue) Submit(ctx context.Context, s SubmitRequest) (*Request, bool, error) {
	if s.Source == "" || s.Target == "" {
		return nil, false, fmt.Errorf("%w: source and target are required", versionstore.ErrInvalid)
	}
	if strings.HasPrefix(s.Target, CandidatePrefix) {
		return nil, false, fmt.Errorf("%w: %s branches are the merge queue's own", versionstore.ErrInvalid, CandidatePrefix)
	}
	id := requestID(s.Principal, s.IdempotencyKey)
	if s.IdempotencyKey != "" {
		// A retried submit finds its request even after the source
		// branch was merged and dropped.
		q.mu.RLock()
		var (
			r   *Request
			err error
		)
		e, ok := q.reqs[id]
		if ok {
			r, err = resubmitted(e.req, s)
		}
		q.mu.RUnlock()
		if ok {
			return r, false, err
		}
	}
	target, err := q.store.GetRef(s.Target)
	if err != nil {
		return nil, false, err
	}
	if target.Type != versionstore.Branch {
		return nil, false, fmt.Errorf("%w: target %s is a tag: merges land on branches", versionstore.ErrInvalid, s.Target)
	}
	src, err := q.store.Resolve(ctx, s.Source)
	if err != nil {
		return nil, false, err
	}
	for _, t := range s.Tables {
		if _, err := parseTable(t); err != nil {
			return nil, false, err
		}
	}
	srcRef := ""
	if src.Ref != nil {
		srcRef = src.Ref.Name
		if srcRef == s.Target {
			return nil, false, fmt.Errorf("%w: a branch cannot be merged into itself", versionstore.ErrInvalid)
		}
	}
	rule, class := q.rules.ruleFor(srcRef)
	checks := slices.Clone(s.RequiredChecks)
	for _, c := range rule.RequiredChecks {
		if !slices.Contains(checks, c) {
			checks = append(checks, c)
		}
	}
	q.mu.Lock()
	if e, ok := q.reqs[id]; ok {
		r, err := resubmitted(e.req, s)
		q.mu.Unlock()
		return r, false, err
	}
	q.seq++
	seq := q.seq
	q.mu.Unlock()
	r := &Request{
		ID: id, Seq: seq, Target: s.Target, Source: s.Source, SourceRef: srcRef, SourceHash: src.Hash.String(),
		Tables: slices.Clone(s.Tables), Priority: s.Priority, RequiredChecks: checks, IdempotencyKey: s.IdempotencyKey,
		Message: s.Message, Principal: s.Principal, Class: class, EnqueuedAt: q.clock(),
	}
	if err := q.transition(r, StateQueued, "", "enqueued", s.Principal, ""); err != nil {
		return nil, false, err
	}
	// The new record is created outside q.mu: it is a create (the record
	// must not exist), which no other write of this request can race, so
	// pipelines submitting at once share the store's group commit instead
	// of queueing behind one another's fsync, and the worker's reads of
	// the queue do not wait for them either.
	raw := encodeRequest(r)
	err = q.writeRecords(ctx, []versionstore.Record{{Key: recordKey(id), Value: raw, If: &versionstore.RecordCondition{Exists: false}}}, []*Request{nil}, []*Request{r})
	if errors.Is(err, versionstore.ErrRecordConflict) {
		// The same idempotency key, submitted at the same time here or to
		// another replica, was written first: answer with that request.
		if rec, gerr := q.store.GetRecord(ctx, recordKey(id)); gerr == nil {
			if first, derr := decodeRequest(rec.Value); derr == nil {
				q.mu.Lock()
				if _, ok := q.reqs[id]; !ok {
					q.reqs[id] = &entry{req: first, raw: rec.Value}
					q.seq = max(q.seq, first.Seq)
					q.updateDepth()
				}
				q.mu.Unlock()
				r, err := resubmitted(first, s)
				return r, false, err
			}
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("store merge request %s: %w", id, err)
	}
	q.mu.Lock()
	// A refresh (leases) may have read the record meanwhile, and the
	// worker taken it since: what memory holds then is as new or newer.
	if _, ok := q.reqs[id]; !ok {
		q.reqs[id] = &entry{req: r, raw: raw}
		q.updateDepth()
	}
	q.mu.Unlock()
	q.notify(s.Target)
	return cloneRequest(r), true, nil
}

// resubmitted answers a submit whose idempotency key names first, a
// request already made (in this replica's memory, or written by another
// replica first): a copy of first if the submit asks for the same merge,
// else ErrIdempotencyMismatch. The one idempotency check of Submit.
func resubmitted(first *Request, s SubmitRequest) (*Request, error) {
	if first.Target != s.Target || first.Source != s.Source || !slices.Equal(first.Tables, s.Tables) {
		return nil, fmt.Errorf("%w: key %q names request %s (%s into %s)", ErrIdempotencyMismatch, s.IdempotencyKey, first.ID, first.Source, first.Target)
	}
	return cloneRequest(first), nil
}

// notify wakes the worker of target.
func (q *Queue) notify(target string) {
	select {
	case q.kick <- target:
	default: // the workers poll anyway
	}
}

// Get returns one request.
func (q *Queue) Get(id string) (*Request, error) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	e, ok := q.reqs[id]
	if !ok {
		return nil, fmt.Errorf("%q: %w", id, ErrNotFound)
	}
	return cloneRequest(e.req), nil
}

// Filter selects requests for List; zero fields select everything.
type Filter struct {
	State        string
	Target       string
	SourcePrefix string
	// Since, if set, keeps requests enqueued at or after it.
	Since time.Time
	Limit int
}

// List returns the requests the filter selects, in arrival order.
func (q *Queue) List(f Filter) []*Request {
	q.mu.RLock()
	defer q.mu.RUnlock()
	var out []*Request
	for _, e := range q.reqs {
		r := e.req
		if (f.State != "" && r.State != f.State) || (f.Target != "" && r.Target != f.Target) ||
			(f.SourcePrefix != "" && !strings.HasPrefix(r.SourceRef, f.SourcePrefix) && !strings.HasPrefix(r.Source, f.SourcePrefix)) ||
			(!f.Since.IsZero() && r.EnqueuedAt.Before(f.Since)) {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Request) int { return compareSeq(a, b) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	for i, r := range out {
		out[i] = cloneRequest(r)
	}
	return out
}

func compareSeq(a, b *Request) int {
	switch {
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return strings.Compare(a.ID, b.ID)
}

// Cancel cancels a request that has not reached a final state. A request
// being validated is cancelled too: its record changes, so the worker's
// landing write, which expects the record it read, fails and the batch is
// built again without it.
func (q *Queue) Cancel(ctx context.Context, id, principal, reason string) (*Request, error) {
	if reason == "" {
		reason = "cancelled by " + principal
	}
	return q.changeAny(ctx, id, func(r *Request) error {
		if Final(r.State) {
			return fmt.Errorf("%w: request %s is %s", ErrState, id, r.State)
		}
		return q.transition(r, StateCancelled, "cancelled", reason, principal, "")
	})
}

// Approve approves a request in review: it is queued again, at its
// arrival position, and its structural change is merged when its turn
// comes (if the merge engine can: a table changed on both sides is still
// refused).
func (q *Queue) Approve(ctx context.Context, id, principal, reason string) (*Request, error) {
	if reason == "" {
		reason = "approved by " + principal
	}
	r, err := q.changeAny(ctx, id, func(r *Request) error {
		if r.State != StateReview {
			return fmt.Errorf("%w: request %s is %s, not in review", ErrState, id, r.State)
		}
		r.Approved = true
		return q.transition(r, StateQueued, "", reason, principal, "")
	})
	if err == nil {
		q.notify(r.Target)
	}
	return r, err
}

// Reject rejects a request in review.
func (q *Queue) Reject(ctx context.Context, id, principal, reason string) (*Request, error) {
	if reason == "" {
		reason = "rejected by " + principal
	}
	return q.changeAny(ctx, id, func(r *Request) error {
		if r.State != StateReview {
			return fmt.Errorf("%w: request %s is %s, not in review", ErrState, id, r.State)
		}
		return q.transition(r, StateRejected, "rejected", reason, principal, "")
	})
}

// change applies fn to a copy of request id and stores it; it fails if
// the record changed meanwhile (a worker's changes are judged on what it
// read).
func (q *Queue) change(ctx context.Context, id string, fn func(*Request) error) (*Request, error) {
	return q.changeOf(ctx, id, fn, false)
}

// changeAny is change for a principal's action (cancel, approve,
// reject): with leases, a record another replica changed meanwhile is
// read again and fn judges it again.
func (q *Queue) changeAny(ctx context.Context, id string, fn func(*Request) error) (*Request, error) {
	return q.changeOf(ctx, id, fn, q.leases != nil)
}

func (q *Queue) changeOf(ctx context.Context, id string, fn func(*Request) error, retry bool) (*Request, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, err := q.entryLocked(ctx, id)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		next := cloneRequest(e.req)
		if err := fn(next); err != nil {
			return nil, err
		}
		err := q.persist(ctx, e, next)
		if errors.Is(err, versionstore.ErrRecordConflict) && retry && attempt < 3 {
			// Another replica changed it (persist reloaded it): judge
			// the change again on what it holds now.
			continue
		}
		if err != nil {
			return nil, err
		}
		return cloneRequest(next), nil
	}
}

// SourceChanges lists what a merge of source into a branch at head would
// bring: the keys that differ between their merge base and source,
// restricted to tables if given.
func (q *Queue) SourceChanges(ctx context.Context, head, source versionstore.Hash, tables []string) ([]versionstore.DiffEntry, versionstore.Hash, error) {
	base, err := q.store.MergeBase(ctx, head, source)
	if err != nil {
		return nil, versionstore.Hash{}, fmt.Errorf("merge base of %s and %s: %w", head, source, err)
	}
	want := map[string]bool{}
	for _, t := range tables {
		k, err := parseTable(t)
		if err != nil {
			return nil, base, err
		}
		want[string(k.Encode())] = true
	}
	var out []versionstore.DiffEntry
	token := ""
	for {
		page, next, err := q.store.Diff(ctx, base, source, versionstore.DiffOptions{PageToken: token, Limit: 1000})
		if err != nil {
			return nil, base, fmt.Errorf("diff %s..%s: %w", base, source, err)
		}
		for _, d := range page {
			if len(want) == 0 || want[string(d.Key.Encode())] {
				out = append(out, d)
			}
		}
		if next == "" {
			return out, base, nil
		}
		token = next
	}
}
