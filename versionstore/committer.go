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

func (s *Store) runQueue(name string, q *refQueue) {
	for {
		s.queuesMu.Lock()
		if len(q.pending) == 0 {
			q.running = false
			delete(s.queues, name)
			s.queuesMu.Unlock()
			return
		}
		n := min(len(q.pending), s.maxGroup)
		round := q.pending[:n:n]
		q.pending = q.pending[n:]
		s.queuesMu.Unlock()
		s.runRound(name, q, round)
	}
}

// maxBackendRetries bounds how often a round is redone after another
// process moved the reference.
const maxBackendRetries = 8

func (s *Store) runRound(name string, q *refQueue, round []*writeRequest) {
	defer func() {
		for _, r := range round {
			close(r.done)
		}
	}()
	for attempt := 0; ; attempt++ {
		start := s.refs.get(name)
		cur := start
		ov := newOverlay(s, nil)
		var log []*RefLogEntry
		var records []backend.Record
		commits := 0
		chain := &q.chain
		if attempt > 0 || cur == nil || !chain.has(cur.Head) {
			chain.reset(cur)
		}
		for _, r := range round {
			r.result, r.err = nil, nil
			if err := r.ctx.Err(); err != nil {
				r.err = err
				continue
			}
			t := &refTxn{s: s, name: name, ref: cur, ov: newOverlay(s, ov), chain: chain}
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
			ov.absorb(t.ov)
			cur = t.ref
			log = append(log, t.log...)
			records = append(records, t.records...)
			commits += t.commits
			for _, e := range t.log {
				switch e.Op {
				case RefLogCommit, RefLogMerge, RefLogTransplant:
					chain.add(e.To)
				default: // the ref jumped (or vanished): start over
					chain.reset(cur)
				}
			}
		}
		if len(log) == 0 {
			return // nothing changed: reads, dry runs, failures
		}
		b := backend.Batch{Objects: ov.objects(), Refs: []backend.RefUpdate{{Name: name}}, Records: records}
		if start != nil {
			b.Refs[0].Expected = start.raw
		}
		if cur != nil {
			b.Refs[0].New = cur.raw
		}
		for _, e := range log {
			b.Log = append(b.Log, encodeRefLog(e))
		}
		// The batch is written even if callers' contexts end: their
		// requests are already decided and must not be left unknown.
		err := s.be.Apply(context.Background(), b)
		if errors.Is(err, backend.ErrRefConflict) && attempt < maxBackendRetries {
			s.stats.BackendRetries.Add(1)
			if rerr := s.reloadRef(name); rerr != nil {
				err = rerr
			} else {
				continue
			}
		}
		if err != nil {
			chain.reset(start) // this round's heads never became durable
			s.logger.Error("durable write failed", "ref", name, "err", err)
			for _, r := range round {
				if r.err == nil {
					r.result, r.err = nil, fmt.Errorf("write to %q was not made durable: %w", name, err)
				}
			}
			return
		}
		s.refs.set(name, cur)
		ov.publish()
		s.stats.Batches.Add(1)
		s.stats.Commits.Add(uint64(commits))
		return
	}
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
