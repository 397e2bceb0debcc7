package versionstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/floe-catalog/floe/internal/backoff"
	"github.com/floe-catalog/floe/versionstore/backend"
)

// Writes to one reference are serialized through that reference's queue and
// applied by a single committer goroutine, in arrival order, against the
// in-memory head. Everything the committer finds queued is applied in one
// round and made durable in one synced backend batch: that is group commit.
// Because only the committer changes its reference, the in-memory mirror
// stays exact and the backend compare-and-swap only ever fails when another
// process (a replica sharing a SQL backend) moved the reference.

// refQueue holds the writes waiting for one reference's committer.
type refQueue struct {
	pending []*writeRequest
	running bool
	// arrived wakes the committer when a request is queued while it waits
	// for a batch to become durable.
	arrived chan struct{}
	// chain remembers recent heads of the reference, which spares most
	// rebased commits a walk through history. Only the committer uses it.
	chain headChain
	// contendedUntil is set, on a shared backend that can lock refs,
	// when a round lost its compare-and-swap to another replica: until
	// then rounds wait for the ref's row lock before writing (see start),
	// rather than be sent optimistically and lose their place in the
	// database's queue for the row. Only the committer uses it.
	contendedUntil time.Time
}

// contendedFor is how long a ref stays contended after a lost
// compare-and-swap.
const contendedFor = time.Second

// headChain is a bounded set of commits the reference moved through by
// descent (commits, merges, transplants). Every member is an ancestor of
// the reference's head as long as the chain is reset whenever the
// reference jumps, or a round's changes do not become durable.
type headChain struct {
	set   map[Hash]struct{}
	order []Hash
}

// maxHeadChain bounds the remembered heads; an expected hash older than
// that falls back to a history walk.
const maxHeadChain = 4096

func (c *headChain) has(h Hash) bool {
	_, ok := c.set[h]
	return ok
}

func (c *headChain) add(h Hash) {
	if c.set == nil {
		c.set = map[Hash]struct{}{}
	}
	if _, ok := c.set[h]; ok {
		return
	}
	if len(c.order) == maxHeadChain {
		delete(c.set, c.order[0])
		c.order = c.order[1:]
	}
	c.set[h] = struct{}{}
	c.order = append(c.order, h)
}

// follow carries the chain from head from, the last durable one, to head
// to, when the log records (newest first) show the reference moved between
// them by descent alone: the heads remembered up to from are then still
// ancestors, and a rebased commit's expected hash is found here instead of
// by reading the other replicas' commits one round trip at a time. The
// heads remembered after from were added by rounds that never became
// durable, and are dropped. It reports whether it carried the chain; if
// not, the caller resets it.
func (c *headChain) follow(name string, from, to *Ref, recent []backend.LogRecord) bool {
	if from == nil || to == nil || !c.has(from.Head) {
		return false
	}
	want := to.Head
	var heads []Hash
	for _, rec := range recent {
		if want == from.Head {
			break
		}
		e, err := decodeRefLog(rec.Seq, rec.Value)
		if err != nil || e.Ref != name {
			continue
		}
		switch e.Op {
		case RefLogCommit, RefLogMerge, RefLogTransplant:
		default:
			return false
		}
		if e.To != want {
			return false
		}
		heads = append(heads, e.To)
		want = e.From
	}
	if want != from.Head {
		return false
	}
	at := slices.Index(c.order, from.Head)
	for _, h := range c.order[at+1:] {
		delete(c.set, h)
	}
	c.order = c.order[:at+1]
	for _, h := range slices.Backward(heads) {
		c.add(h)
	}
	return true
}

// reset forgets everything but head (nil: the reference does not exist).
func (c *headChain) reset(head *Ref) {
	clear(c.set)
	c.order = c.order[:0]
	if head != nil {
		c.add(head.Head)
	}
}

type writeRequest struct {
	ctx    context.Context
	apply  func(ctx context.Context, t *refTxn) (any, error)
	keys   [][]byte // tree keys apply reads, if known: see prefetch.go
	done   chan struct{}
	result any
	err    error
	// checked are the records whose previous value the write's batch
	// checks (conditional record writes), set when it is applied.
	checked []string
	// traced says ctx holds a recording span: the committer then adds
	// spans of the write's stages below it (tracing.go). queued is when
	// the write was queued, set only then.
	traced bool
	queued time.Time
}

// refTxn is one write's view of its reference inside a round: the state
// after the writes before it, plus its own changes, which the round keeps
// only if the write succeeds.
type refTxn struct {
	s    *Store
	name string
	ref  *Ref // nil: the reference does not exist
	// ov is the round's overlay; the round rolls back what the write put
	// there if the write fails.
	ov  *overlay
	log []*RefLogEntry
	// commits counts the commits this write adds.
	commits int
	// records are written with the batch, if checks hold.
	records []backend.Record
	checks  []backend.RecordCheck
	// objects are written with the batch besides the overlay's: the
	// objects of events the write appends to the log (logevent.go),
	// which are never cached.
	objects []backend.Object
	// chain holds ancestors of the current head; an expected hash found
	// there needs no history walk.
	chain *headChain
}

// addRecord writes r (if any) with the write's batch.
func (t *refTxn) addRecord(r *preparedRecord) {
	if r == nil {
		return
	}
	t.records = append(t.records, r.record)
	if r.check != nil {
		t.checks = append(t.checks, *r.check)
	}
}

// move points the reference at a new head and records why.
func (t *refTxn) move(to Hash, op RefLogOp, principal string) {
	from := t.ref.Head
	r := *t.ref
	r.Head = to
	t.ref = r.withRaw()
	t.log = append(t.log, &RefLogEntry{Ref: t.name, RefType: r.Type, Op: op, From: from, To: to, Principal: principal, Time: t.s.now()})
}

// write queues apply for the reference and waits for its outcome. The
// result is returned only once it is durable. A request is never abandoned
// half way: the caller waits even if ctx ends, since the committer may
// already have applied it (it checks ctx before it starts).
func (s *Store) write(ctx context.Context, name string, apply func(ctx context.Context, t *refTxn) (any, error)) (any, error) {
	return s.writeKeys(ctx, name, nil, apply)
}

// writeKeys is write for a request that reads keys of the head's tree,
// which a round on a shared backend prefetches (see prefetch.go).
func (s *Store) writeKeys(ctx context.Context, name string, keys [][]byte, apply func(ctx context.Context, t *refTxn) (any, error)) (any, error) {
	if err := s.beginWrite(); err != nil {
		return nil, err
	}
	defer s.closeMu.RUnlock()
	// A write the storage cannot take now is refused before it queues:
	// behind a round waiting for a full disk it would wait as long.
	if err := s.Writable(); err != nil {
		s.stats.UnavailableWrites.Add(1)
		return nil, fmt.Errorf("write on %q: %w", name, err)
	}
	ctx, span := s.startWriteSpan(ctx, name)
	defer span.End()
	req := &writeRequest{ctx: ctx, apply: apply, keys: keys, done: make(chan struct{})}
	if span.IsRecording() {
		req.traced, req.queued = true, time.Now()
	}
	s.queuesMu.Lock()
	q := s.queues[name]
	if q == nil {
		q = &refQueue{arrived: make(chan struct{}, 1)}
		s.queues[name] = q
	}
	q.pending = append(q.pending, req)
	select {
	case q.arrived <- struct{}{}:
	default:
	}
	if !q.running {
		q.running = true
		go s.runQueue(name, q)
	}
	s.queuesMu.Unlock()
	<-req.done
	endWriteSpan(span, req.err)
	return req.result, req.err
}

// runQueue is a reference's committer. It keeps one round in flight:
// while round k is being made durable, every request that arrives is
// applied in memory, on top of round k's result, to round k+1, so the CPU
// work of one round overlaps the fsync of the other and round k+1 carries
// everything that queued meanwhile. Round k+1 is written only once round k
// is durable, and is applied again on the durable head if round k failed;
// no result is handed out before its own round is durable.
func (s *Store) runQueue(name string, q *refQueue) {
	var inflight *preparedRound
	for {
		if inflight == nil {
			round := s.takePending(name, q, s.maxGroup, true)
			if round == nil {
				return // the queue was idle and is gone
			}
			if locker := s.contended(q); locker != nil {
				s.lockedRound(name, q, locker, round)
				continue
			}
			if s.shared {
				// Another replica may have moved the ref since this
				// committer last wrote it: start from the stored head
				// rather than lose the first compare-and-swap.
				if err := s.reloadRef(name); err != nil {
					p := &preparedRound{round: round}
					s.failRound(name, q, p, err)
					p.deliver()
					continue
				}
			}
			p := s.prepareRound(name, q, s.refs.get(name), nil)
			p.add(round)
			inflight = s.launch(p)
			continue
		}
		next := s.prepareRound(name, q, inflight.cur, inflight.ov)
		for waiting := true; waiting; {
			if round := s.takePending(name, q, s.maxGroup-len(next.round), false); len(round) > 0 {
				next.add(round)
				continue
			}
			select {
			case <-inflight.done:
				waiting = false
			case <-q.arrived:
			}
		}
		durable := s.complete(name, q, inflight)
		if locker := s.contended(q); locker != nil && len(next.round) > 0 {
			// Another replica is writing this ref: the next round waits
			// for its turn on the row before it is built (lockedRound).
			inflight = nil
			s.lockedRound(name, q, locker, next.round)
			continue
		}
		if !durable && len(next.round) > 0 {
			round := next.round
			next = s.prepareRound(name, q, s.refs.get(name), nil)
			next.add(round)
		}
		next.ov.parent = nil // the previous round's objects are durable now
		inflight = nil
		if len(next.round) > 0 {
			inflight = s.launch(next)
		}
		// The writers just released were made runnable on this goroutine's
		// processor, behind it: let them run now, so that they queue their
		// next writes for the round being filled instead of waiting until
		// the committer blocks or another processor steals them.
		runtime.Gosched()
	}
}

// contended returns the backend's ref locker while the ref is contended
// by other replicas (see refQueue.contendedUntil), nil otherwise.
func (s *Store) contended(q *refQueue) backend.RefLocker {
	if s.locker == nil || !time.Now().Before(q.contendedUntil) {
		return nil
	}
	return s.locker
}

// lockedRound writes round while other replicas contend for the ref:
// first it waits for the ref's row lock, then takes every request that
// arrived meanwhile into the round and builds it once, on the head the
// lock holds. Built before the wait, a round would be rebuilt on the head
// the other replicas left, and would hold only the requests that arrived
// before it was; this way a replica's turn on the row carries all its
// waiting commits.
func (s *Store) lockedRound(name string, q *refQueue, locker backend.RefLocker, round []*writeRequest) {
	held, err := s.lockRef(locker, name, q)
	if err != nil {
		p := &preparedRound{round: round}
		s.failRound(name, q, p, err)
		p.deliver()
		return
	}
	round = append(round, s.takePending(name, q, s.maxGroup-len(round), false)...)
	p := s.prepareRound(name, q, s.refs.get(name), nil)
	p.add(round)
	if !p.changed() {
		held.Release()
		p.deliver()
		return
	}
	s.stats.LockedRounds.Add(1)
	p.apply = held.Apply // Apply releases the lock
	p.start()
	s.complete(name, q, p)
}

// sameRef reports whether two mirror values are the same ref state.
func sameRef(a, b *Ref) bool {
	if a == nil || b == nil {
		return a == b
	}
	return sameValue(a.raw, b.raw)
}

// takePending removes up to max queued requests. With exit set and nothing
// queued, it retires the queue and returns nil.
func (s *Store) takePending(name string, q *refQueue, max int, exit bool) []*writeRequest {
	s.queuesMu.Lock()
	defer s.queuesMu.Unlock()
	if len(q.pending) == 0 {
		if exit {
			q.running = false
			// A contended ref's queue is kept for its next write, which
			// then goes straight to lockedRound, and keeps the chain.
			if !time.Now().Before(q.contendedUntil) {
				delete(s.queues, name)
			}
		}
		return nil
	}
	n := min(len(q.pending), max)
	round := q.pending[:n:n]
	q.pending = q.pending[n:]
	return round
}

// launch starts writing a round that changed something, or hands out the
// results of one that did not (reads, dry runs, failures) and returns nil.
func (s *Store) launch(p *preparedRound) *preparedRound {
	if !p.changed() {
		p.deliver()
		return nil
	}
	p.start()
	return p
}

// maxBackendRetries bounds how often a round is redone after another
// process moved the reference.
const maxBackendRetries = 8

// maxSharedRetries replaces maxBackendRetries on a shared backend
// (backend.Shared), where other replicas moving a busy branch is the
// normal case rather than an accident: before rounds retried under the
// ref's row lock (backend.RefLocker), eight optimistic losses in a row
// failed commits in TestReplicasConcurrentDistinctKeys (pgbackend). Under
// the lock a retry loses again only if the ref was created or deleted
// meanwhile, so the bound matters for backends without one.
const maxSharedRetries = 64

func (s *Store) maxRetries() int {
	if s.shared {
		return maxSharedRetries
	}
	return maxBackendRetries
}

// backendRetryPause is how long the committer waits before its n-th retry
// (n from 1) after another process moved the reference: steps of
// 1ms·2^(n-1), at most 64ms, with jitter, so that replicas contending for
// one branch fall out of step.
var backendRetryPause = backoff.Policy{Base: time.Millisecond, Max: 64 * time.Millisecond}

// preparedRound is a round applied in memory, with the batch that makes it
// durable.
type preparedRound struct {
	s       *Store
	name    string
	q       *refQueue
	round   []*writeRequest
	base    *Ref // the ref the round was applied to
	cur     *Ref // the ref after the round
	ov      *overlay
	log     []*RefLogEntry
	records []backend.Record
	checks  []backend.RecordCheck
	objects []backend.Object // refTxn.objects of the round's writes
	// recordKeys are the records the round writes so far: a later write
	// in the round that checks one of them read its value before the
	// earlier write changed it, so its check would be stale.
	recordKeys map[string]bool
	commits    int
	done       chan struct{} // closed when Apply returned
	err        error         // Apply's outcome, once done is closed

	// apply, if set, writes the batch instead of the backend's Apply:
	// a LockedRef's (see lockedRound, and complete after a lost
	// compare-and-swap).
	apply func(context.Context, backend.Batch) error
}

// isScratch reports whether writes to ref need not be durable when they
// are acknowledged (Options.ScratchRefPrefixes). A round that writes or
// checks records is durable all the same: its callers act on the records
// (the queue's request states), which must survive once acknowledged.
func (s *Store) isScratch(ref string) bool {
	for _, p := range s.scratch {
		if strings.HasPrefix(ref, p) {
			return true
		}
	}
	return false
}

// sameValue compares ref values, nil (absent) apart from empty.
func sameValue(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func (p *preparedRound) changed() bool { return len(p.log) > 0 }

func (p *preparedRound) batch() backend.Batch {
	b := backend.Batch{Objects: append(p.ov.objects(), p.objects...), Refs: []backend.RefUpdate{{Name: p.name}}, Records: p.records, RecordChecks: p.checks,
		Deferred: p.s.isScratch(p.name) && len(p.records) == 0 && len(p.checks) == 0}
	if p.base != nil {
		b.Refs[0].Expected = p.base.raw
	}
	if p.cur != nil {
		b.Refs[0].New = p.cur.raw
	}
	for _, e := range p.log {
		b.Log = append(b.Log, encodeRefLog(e))
	}
	return b
}

// start writes the batch in the background. It is written even if the
// callers' contexts end: their requests are decided and must not be left
// in an unknown state.
//
// The background goroutine also builds the batch and, once it is durable,
// adds its objects to the cache: that work then runs on the other core
// instead of the committer's, which is the bottleneck of group commit. It
// only reads the round, which nobody changes once started, and it is done
// before done closes, so the objects are cached before the next round
// stops looking for them in this round's overlay.
func (p *preparedRound) start() {
	p.seal()
	p.done = make(chan struct{})
	hinting := p.s.contended(p.q) != nil // see hint.go
	go func() {
		writing := time.Now()
		apply := p.s.be.Apply
		if p.apply != nil {
			apply = p.apply
		}
		b := p.batch()
		if hinting {
			b.Refs[0].Hint = p.hint()
		}
		p.err = apply(context.Background(), b)
		switch {
		case errors.Is(p.err, ErrOutcomeUnknown):
			p.s.stats.UnknownOutcomes.Add(uint64(len(p.round)))
		case errors.Is(p.err, ErrUnavailable):
			p.s.stats.UnavailableWrites.Add(uint64(len(p.round)))
		}
		p.traceDurable(writing)
		if p.err == nil {
			p.ov.publish()
		}
		close(p.done)
	}()
}

// wait returns Apply's outcome.
func (p *preparedRound) wait() error {
	<-p.done
	return p.err
}

// deliver hands every request its result.
func (p *preparedRound) deliver() {
	for _, r := range p.round {
		close(r.done)
	}
}

// prepareRound starts a round on top of base. parent holds the objects of
// a round still in flight, if any.
func (s *Store) prepareRound(name string, q *refQueue, base *Ref, parent *overlay) *preparedRound {
	if base == nil || !q.chain.has(base.Head) {
		q.chain.reset(base)
	}
	return &preparedRound{s: s, name: name, q: q, base: base, cur: base, ov: newOverlay(s, parent)}
}

// add applies requests to the round, in order, in memory.
func (p *preparedRound) add(reqs []*writeRequest) {
	s, chain := p.s, &p.q.chain
	p.round = append(p.round, reqs...)
	p.prefetch(reqs)
	for i, r := range reqs {
		r.result, r.err = nil, nil
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		mark := p.ov.mark()
		t := &refTxn{s: s, name: p.name, ref: p.cur, ov: p.ov, chain: chain}
		var applying time.Time
		if r.traced {
			applying = time.Now()
		}
		res, err := r.apply(r.ctx, t)
		if r.traced {
			s.traceApply(r, applying, len(p.round)-len(reqs)+i+1, err)
		}
		if err != nil {
			p.ov.rollback(mark)
			// The write's changes are dropped; a dry run or a
			// conflicting merge still reports its result.
			var cr *conflictResult
			var ce *ConflictError
			switch {
			case errors.As(err, &cr):
				s.stats.Conflicts.Add(1)
				r.result, r.err = cr.result, cr.ConflictError
			case errors.As(err, &ce):
				s.stats.Conflicts.Add(1)
				r.err = err
			default:
				r.err = err
			}
			continue
		}
		if err := p.staleCheck(t.checks); err != nil {
			p.ov.rollback(mark)
			r.err = err
			continue
		}
		r.result = res
		r.checked = r.checked[:0]
		for _, c := range t.checks {
			r.checked = append(r.checked, c.Key)
		}
		p.cur = t.ref
		p.log = append(p.log, t.log...)
		p.objects = append(p.objects, t.objects...)
		p.records = append(p.records, t.records...)
		p.checks = append(p.checks, t.checks...)
		for _, rec := range t.records {
			if p.recordKeys == nil {
				p.recordKeys = map[string]bool{}
			}
			p.recordKeys[rec.Key] = true
		}
		p.commits += t.commits
		for _, e := range t.log {
			switch e.Op {
			case RefLogCommit, RefLogMerge, RefLogTransplant:
				chain.add(e.To)
			default: // the ref jumped (or vanished): start over
				chain.reset(p.cur)
			}
		}
	}
}

// prefetch reads the head tree's nodes the requests will look up, when
// the backend can read many at once.
func (p *preparedRound) prefetch(reqs []*writeRequest) {
	if p.s.multi == nil || p.cur == nil {
		return
	}
	var keys [][]byte
	for _, r := range reqs {
		keys = append(keys, r.keys...)
	}
	if len(keys) == 0 {
		return
	}
	c, err := p.ov.commit(context.Background(), p.cur.Head)
	if err != nil {
		return // the requests read it again and report
	}
	p.s.prefetch(p.ov, c.Tree, keys)
}

// staleCheck fails a write whose record check names a record an earlier
// write of the round changes.
func (p *preparedRound) staleCheck(checks []backend.RecordCheck) error {
	for _, c := range checks {
		if p.recordKeys[c.Key] {
			return fmt.Errorf("record %q is written by a concurrent write: %w", c.Key, ErrRecordConflict)
		}
	}
	return nil
}

// complete waits for a started round, publishes it if durable, and
// delivers its results. If another process moved the reference, the round
// is applied again on the reloaded head (synchronously). It reports
// whether the round's own final state is the durable head, which a round
// prepared on top of it needs.
func (s *Store) complete(name string, q *refQueue, p *preparedRound) bool {
	defer p.deliver()
	err := p.wait()
	round, retries := p.round, 0
	var held backend.LockedRef // the ref's row, held for the next redo
	defer func() {
		// A lock still held here was never handed to a redo's Apply.
		if held != nil {
			held.Release()
		}
	}()
	for err != nil {
		var rc *backend.RecordConflictError
		switch {
		case errors.As(err, &rc):
			// The writes that checked that record fail; the others are
			// applied again without them. Each pass removes at least one
			// write, so this ends.
			var failed bool
			if round, failed = failRecordCheckers(round, rc.Key); !failed {
				return s.failRound(name, q, p, err)
			}
			q.chain.reset(s.refs.get(name)) // the failed round's heads never became durable
		case errors.Is(err, backend.ErrRefConflict) && retries < s.maxRetries():
			retries++
			s.stats.BackendRetries.Add(1)
			if s.locker != nil {
				// Wait for our turn on the ref's row, behind the other
				// replicas' batches, and rebase on the head it holds:
				// nobody can move it before this round is written.
				q.contendedUntil = time.Now().Add(contendedFor)
				if held, err = s.lockRef(s.locker, name, q); err != nil {
					return s.failRound(name, q, p, err)
				}
				break
			}
			// Another process is committing to this ref right now; reloading
			// at once mostly reads a head its next batch is about to replace,
			// so the round would lose every retry in a row. A random pause,
			// growing with each retry, lets that batch land first.
			time.Sleep(backendRetryPause.Delay(retries))
			if err := s.reloadRef(name); err != nil {
				return s.failRound(name, q, p, err)
			}
			q.chain.reset(s.refs.get(name))
		default:
			return s.failRound(name, q, p, err)
		}
		redo := s.prepareRound(name, q, s.refs.get(name), nil)
		redo.add(round)
		if !redo.changed() {
			if held != nil {
				held.Release()
			}
			return false
		}
		if held != nil {
			redo.apply, held = held.Apply, nil // Apply releases the lock
		}
		redo.start()
		if err = redo.wait(); err == nil {
			s.publish(name, redo)
			return false
		}
	}
	s.publish(name, p)
	return true
}

// failRound reports err to every write of a round that did not become
// durable and has no error of its own.
func (s *Store) failRound(name string, q *refQueue, p *preparedRound, err error) bool {
	q.chain.reset(s.refs.get(name)) // these heads never became durable
	s.logger.Error("durable write failed", "ref", name, "err", err)
	for _, r := range p.round {
		if r.err == nil {
			r.result, r.err = nil, fmt.Errorf("write to %q was not made durable: %w", name, err)
		}
	}
	return false
}

// failRecordCheckers fails every write in round that checked the record
// key, and returns the others and whether any failed.
func failRecordCheckers(round []*writeRequest, key string) ([]*writeRequest, bool) {
	rest := make([]*writeRequest, 0, len(round))
	failed := false
	for _, r := range round {
		if r.err == nil && slices.Contains(r.checked, key) {
			r.result, r.err = nil, fmt.Errorf("record %q changed concurrently: %w", key, ErrRecordConflict)
			failed = true
			continue
		}
		rest = append(rest, r)
	}
	return rest, failed
}

// publish makes a durable round visible to readers.
func (s *Store) publish(name string, p *preparedRound) {
	s.refs.set(name, p.cur)
	s.stats.Batches.Add(1)
	s.stats.Commits.Add(uint64(p.commits))
}

// reloadRef refreshes the mirror from the backend after another process
// moved the reference.
func (s *Store) reloadRef(name string) error {
	raw, err := s.be.GetRef(context.Background(), name)
	if errors.Is(err, backend.ErrRefNotFound) {
		s.refs.set(name, nil)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reload reference %q: %w", name, err)
	}
	r, err := decodeRef(raw)
	if err != nil {
		return err
	}
	s.refs.set(name, r)
	return nil
}

// lockRef holds the reference in a shared backend, sets the mirror to the
// value it holds, and carries q's chain to it through the log records the
// lock read (or resets it). A head another replica wrote since this one
// last did keeps the ref contended.
func (s *Store) lockRef(locker backend.RefLocker, name string, q *refQueue) (backend.LockedRef, error) {
	before := s.refs.get(name) // the last durable head this replica knows
	held, err := locker.LockRef(context.Background(), name)
	if err != nil {
		return nil, fmt.Errorf("lock reference %q: %w", name, err)
	}
	if err := s.adoptLocked(name, held); err != nil {
		return nil, err
	}
	head := s.refs.get(name)
	if !q.chain.follow(name, before, head, held.RecentLog()) {
		q.chain.reset(head)
	}
	if !sameRef(before, head) {
		q.contendedUntil = time.Now().Add(contendedFor)
	}
	return held, nil
}

// adoptLocked sets the mirror to the value a held ref lock read; on error
// it releases the lock.
func (s *Store) adoptLocked(name string, held backend.LockedRef) error {
	s.adoptHint(held.Hint())
	raw := held.Value()
	if raw == nil {
		s.refs.set(name, nil)
		return nil
	}
	r, err := decodeRef(raw)
	if err != nil {
		held.Release()
		return err
	}
	s.refs.set(name, r)
	return nil
}
