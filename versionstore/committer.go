package versionstore

import (
	"context"
	"errors"
	"fmt"

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
	// chain remembers recent heads of the reference, which spares most
	// rebased commits a walk through history. Only the committer uses it.
	chain headChain
}

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
	done   chan struct{}
	result any
	err    error
}

// refTxn is one write's view of its reference inside a round: the state
// after the writes before it, plus its own changes, which the round keeps
// only if the write succeeds.
type refTxn struct {
	s    *Store
	name string
	ref  *Ref // nil: the reference does not exist
	ov   *overlay
	log  []*RefLogEntry
	// commits counts the commits this write adds.
	commits int
	// records are written with the batch.
	records []backend.Record
	// chain holds ancestors of the current head; an expected hash found
	// there needs no history walk.
	chain *headChain
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
	if err := s.beginWrite(); err != nil {
		return nil, err
	}
	defer s.closeMu.RUnlock()
	req := &writeRequest{ctx: ctx, apply: apply, done: make(chan struct{})}
	s.queuesMu.Lock()
	q := s.queues[name]
	if q == nil {
		q = &refQueue{}
		s.queues[name] = q
	}
	q.pending = append(q.pending, req)
	if !q.running {
		q.running = true
		go s.runQueue(name, q)
	}
	s.queuesMu.Unlock()
	<-req.done
	return req.result, req.err
}

// runQueue is a reference's committer. It keeps one round in flight:
// while round k is being made durable, it already applies round k+1 in
// memory on top of round k's result, so the CPU work of one round overlaps
// the fsync of the other. Round k+1 is only written once round k is
// durable, and is prepared again on the durable head if round k failed;
// no result is handed out before its own round is durable.
func (s *Store) runQueue(name string, q *refQueue) {
	var inflight *preparedRound
	for {
		s.queuesMu.Lock()
		if len(q.pending) == 0 && inflight == nil {
			q.running = false
			delete(s.queues, name)
			s.queuesMu.Unlock()
			return
		}
		n := min(len(q.pending), s.maxGroup)
		round := q.pending[:n:n]
		q.pending = q.pending[n:]
		s.queuesMu.Unlock()

		if len(round) == 0 {
			s.complete(name, q, inflight)
			inflight = nil
			continue
		}
		var p *preparedRound
		if inflight == nil {
			p = s.prepareRound(name, q, s.refs.get(name), nil, round)
		} else {
			p = s.prepareRound(name, q, inflight.cur, inflight.ov, round)
			durable := s.complete(name, q, inflight)
			inflight = nil
			if !durable {
				p = s.prepareRound(name, q, s.refs.get(name), nil, round)
			}
			p.ov.parent = nil // the previous round's objects are durable now
		}
		if !p.changed() {
			p.deliver()
			continue
		}
		p.start()
		inflight = p
	}
}

// maxBackendRetries bounds how often a round is redone after another
// process moved the reference.
const maxBackendRetries = 8

// preparedRound is a round applied in memory, with the batch that makes it
// durable.
type preparedRound struct {
	s       *Store
	name    string
	round   []*writeRequest
	base    *Ref // the ref the round was applied to
	cur     *Ref // the ref after the round
	ov      *overlay
	log     []*RefLogEntry
	records []backend.Record
	commits int
	applied chan error // the outcome of Apply, once started
}

func (p *preparedRound) changed() bool { return len(p.log) > 0 }

func (p *preparedRound) batch() backend.Batch {
	b := backend.Batch{Objects: p.ov.objects(), Refs: []backend.RefUpdate{{Name: p.name}}, Records: p.records}
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
func (p *preparedRound) start() {
	b := p.batch()
	p.applied = make(chan error, 1)
	go func() { p.applied <- p.s.be.Apply(context.Background(), b) }()
}

// deliver hands every request its result.
func (p *preparedRound) deliver() {
	for _, r := range p.round {
		close(r.done)
	}
}

// prepareRound applies the round's requests in order, in memory, on top of
// base. parent holds the objects of a round still in flight, if any.
func (s *Store) prepareRound(name string, q *refQueue, base *Ref, parent *overlay, round []*writeRequest) *preparedRound {
	p := &preparedRound{s: s, name: name, round: round, base: base, cur: base, ov: newOverlay(s, parent)}
	chain := &q.chain
	if base == nil || !chain.has(base.Head) {
		chain.reset(base)
	}
	for _, r := range round {
		r.result, r.err = nil, nil
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		t := &refTxn{s: s, name: name, ref: p.cur, ov: newOverlay(s, p.ov), chain: chain}
		res, err := r.apply(r.ctx, t)
		if err != nil {
			// The write's changes are dropped; a dry run or a
			// conflicting merge still reports its result.
			var cr *conflictResult
			var ce *ConflictError
			switch {
			case errors.Is(err, errDryRun):
				r.result = res
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
		r.result = res
		p.ov.absorb(t.ov)
		p.cur = t.ref
		p.log = append(p.log, t.log...)
		p.records = append(p.records, t.records...)
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
	return p
}

// complete waits for a started round, publishes it if durable, and
// delivers its results. If another process moved the reference, the round
// is applied again on the reloaded head (synchronously). It reports
// whether the round's own final state is the durable head, which a round
// prepared on top of it needs.
func (s *Store) complete(name string, q *refQueue, p *preparedRound) bool {
	defer p.deliver()
	err := <-p.applied
	for attempt := 1; errors.Is(err, backend.ErrRefConflict) && attempt <= maxBackendRetries; attempt++ {
		s.stats.BackendRetries.Add(1)
		if err = s.reloadRef(name); err != nil {
			break
		}
		q.chain.reset(s.refs.get(name))
		redo := s.prepareRound(name, q, s.refs.get(name), nil, p.round)
		if !redo.changed() {
			return false
		}
		redo.start()
		if err = <-redo.applied; err == nil {
			s.publish(name, redo)
			return false
		}
	}
	if err != nil {
		q.chain.reset(s.refs.get(name)) // these heads never became durable
		s.logger.Error("durable write failed", "ref", name, "err", err)
		for _, r := range p.round {
			if r.err == nil {
				r.result, r.err = nil, fmt.Errorf("write to %q was not made durable: %w", name, err)
			}
		}
		return false
	}
	s.publish(name, p)
	return true
}

// publish makes a durable round visible to readers.
func (s *Store) publish(name string, p *preparedRound) {
	s.refs.set(name, p.cur)
	p.ov.publish()
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
