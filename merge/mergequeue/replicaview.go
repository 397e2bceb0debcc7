package mergequeue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floe-catalog/floe/versionstore"
)

// What one replica answers about requests. Without leases the queue is
// alone on its store and memory is the truth. With leases (replicas over
// one database), memory holds what this replica wrote and what it read
// at its last refresh, up to one Poll old: a request submitted to another
// replica is missing, one another replica changed is stale. The API
// therefore answers from the durable records (GetCurrent, ListCurrent,
// ReportCurrent),
// and a principal's action (cancel, approve, reject) reads a request it
// has not seen from its record (entryLocked), so any replica answers as
// the one that took the request would.

// GetCurrent returns request id as its durable record says now. It is
// Get on a queue without leases.
func (q *Queue) GetCurrent(ctx context.Context, id string) (*Request, error) {
	if q.leases == nil {
		return q.Get(id)
	}
	r, _, err := q.readRequest(ctx, id)
	return r, err
}

// readRequest reads request id's durable record: the request, and the
// record's bytes.
func (q *Queue) readRequest(ctx context.Context, id string) (*Request, []byte, error) {
	rec, err := q.store.GetRecord(ctx, recordKey(id))
	if errors.Is(err, versionstore.ErrRecordNotFound) {
		return nil, nil, fmt.Errorf("%q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("merge queue: read request %s: %w", id, err)
	}
	r, err := decodeRequest(rec.Value)
	if err != nil {
		return nil, nil, fmt.Errorf("merge queue: request %s: %w", id, err)
	}
	return r, rec.Value, nil
}

// ListCurrent is List over the durable records: with leases it first
// takes every record other replicas wrote (refresh), then lists.
func (q *Queue) ListCurrent(ctx context.Context, f Filter) ([]*Request, error) {
	if q.leases != nil {
		if err := q.refresh(ctx); err != nil {
			return nil, err
		}
	}
	return q.List(f), nil
}

// ReportCurrent is Report over the durable records, as ListCurrent.
func (q *Queue) ReportCurrent(ctx context.Context, since time.Time) (*Report, error) {
	if q.leases != nil {
		if err := q.refresh(ctx); err != nil {
			return nil, err
		}
	}
	return q.Report(since), nil
}

// entryLocked returns request id's entry. With leases, a request missing
// from memory is read from its record and kept, as refresh would keep
// it. q.mu must be held for writing.
func (q *Queue) entryLocked(ctx context.Context, id string) (*entry, error) {
	if e, ok := q.reqs[id]; ok {
		return e, nil
	}
	if q.leases == nil {
		return nil, fmt.Errorf("%q: %w", id, ErrNotFound)
	}
	r, raw, err := q.readRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	e := &entry{req: r, raw: raw}
	q.reqs[id] = e
	q.seq = max(q.seq, r.Seq)
	q.updateDepth()
	return e, nil
}
