package versionstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// The reference log read forwards, for followers of the catalog's history
// (the change feed). Every move of every reference is appended to the log
// in the same durable batch as the move itself, numbered by the backend
// (backend.LogRecord): seqs rise in the order moves become visible, only
// durable moves are shown, and on a shared backend every replica's moves
// are numbered in one sequence. A follower that remembers the seq of the
// last entry it handled therefore resumes, after any restart of its own or
// of floe, at exactly the next move, and never misses one that became
// visible after it read past its number.

// RefLogAfter returns up to limit reference-log entries with Seq > after,
// oldest first; after 0 starts at the first entry.
func (s *Store) RefLogAfter(ctx context.Context, after uint64, limit int) ([]*RefLogEntry, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: reference log limit %d", ErrInvalid, limit)
	}
	var recs []backend.LogRecord
	var err error
	if sc, ok := s.be.(backend.LogScanner); ok {
		recs, err = sc.ScanLog(ctx, after, limit)
	} else {
		recs, err = s.logAfterBackwards(ctx, after, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("read reference log after %d: %w", after, err)
	}
	out := make([]*RefLogEntry, 0, len(recs))
	for _, r := range recs {
		e, err := decodeRefLog(r.Seq, r.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// logAfterBackwards serves RefLogAfter on a backend without a forward scan:
// it pages back from the newest record to after, keeping the oldest limit.
func (s *Store) logAfterBackwards(ctx context.Context, after uint64, limit int) ([]backend.LogRecord, error) {
	var kept []backend.LogRecord // newest first
	var before uint64
	for {
		page, err := s.be.ReadLog(ctx, before, 256)
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			if r.Seq <= after {
				page = nil
				break
			}
			kept = append(kept, r)
			before = r.Seq
		}
		if len(page) < 256 {
			break
		}
	}
	slices.Reverse(kept)
	return kept[:min(limit, len(kept))], nil
}

// LastRefLogSeq returns the seq of the newest durable reference-log entry,
// 0 if the log is empty.
func (s *Store) LastRefLogSeq(ctx context.Context) (uint64, error) {
	recs, err := s.be.ReadLog(ctx, 0, 1)
	if err != nil {
		return 0, fmt.Errorf("read newest reference log entry: %w", err)
	}
	if len(recs) == 0 {
		return 0, nil
	}
	return recs[0].Seq, nil
}
