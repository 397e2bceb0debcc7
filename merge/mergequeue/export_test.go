package mergequeue

import (
	"context"

	"github.com/floe-catalog/floe/versionstore"
)

// SetLandHooks sets hooks around every landing write: before runs just
// before it (inside the lease's fence), after with its outcome.
func SetLandHooks(q *Queue, before func(target string), after func(target string, err error)) {
	q.beforeLand, q.afterLand = before, after
}

// SetCrashed makes q's workers, when their context ends, abandon their
// leases to expire instead of releasing them, as a killed process does.
func SetCrashed(q *Queue) { q.crashed = true }

// StoredState is request id's state as the store holds it.
func StoredState(ctx context.Context, s *versionstore.Store, id string) (string, error) {
	rec, err := s.GetRecord(ctx, recordKey(id))
	if err != nil {
		return "", err
	}
	r, err := decodeRequest(rec.Value)
	if err != nil {
		return "", err
	}
	return r.State, nil
}
