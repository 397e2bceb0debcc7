package icebergrest

import (
	"context"
	"errors"
	"net/http"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// commitDescription says what one catalog commit does, for its history
// (message and properties) and metrics.
type commitDescription struct {
	// op is the operation: a bounded label (icebergtable.Operations).
	op      string
	message string
	props   map[string]string
	// rebased: a stale append of the commit was re-parented onto the
	// current head (catalog/rebase.go).
	rebased bool
}

// commit makes one store commit on branch, based on expected, described by
// desc.
// rp is the reply the handler sends if the commit succeeds: for a request
// sent with an Idempotency-Key it is recorded in the commit itself, so the
// outcome becomes durable in the same batch as the commit and a retry of a
// request whose answer was lost replays rp instead of committing again.
// Handlers must then send exactly rp. Errors are the store's, for the
// caller to interpret.
func (a *api) commit(ctx context.Context, w http.ResponseWriter, r *http.Request, branch string, expected versionstore.Hash, ops []versionstore.Operation, desc commitDescription, rp *reply) (*versionstore.CommitResult, error) {
	props := map[string]string{icebergtable.PropOperation: desc.op}
	for k, v := range desc.props {
		props[k] = v
	}
	principal := a.principal(r)
	req := versionstore.CommitRequest{
		Branch:     branch,
		Expected:   expected,
		Operations: ops,
		Meta:       versionstore.CommitMeta{Message: desc.message, Properties: props},
		Committer:  principal,
	}
	kr := keyedRequestOf(r)
	if kr != nil && rp != nil {
		req.Record = kr.record(rp, a.now().Add(a.ik.lifetime))
	}
	res, err := a.store.Commit(ctx, req)
	if err != nil {
		if _, ok := errors.AsType[*versionstore.ConflictError](err); ok {
			a.metrics.conflicts.WithLabelValues(desc.op).Inc()
		}
		return nil, err
	}
	if req.Record != nil {
		kr.recorded = true
		a.metrics.ikRecords.WithLabelValues("with-commit").Inc()
	}
	outcome := outcomeOK
	if desc.rebased {
		outcome = outcomeRebased
	}
	a.metrics.commits.WithLabelValues(desc.op, outcome).Inc()
	a.logger.InfoContext(ctx, "iceberg commit",
		"operation", desc.op, "message", desc.message, "branch", branch,
		"commit", res.Commit.Hash.String(), "rebased", res.Rebased, "append_rebased", desc.rebased,
		"principal", principal, "request_id", requestID(w))
	return res, nil
}

// conflictOf returns the store's conflict error, if err is one.
func conflictOf(err error) *versionstore.ConflictError { return catalog.ConflictOf(err) }

// findConflict returns the first conflict of one of the given types.
func findConflict(ce *versionstore.ConflictError, types ...versionstore.ConflictType) *versionstore.Conflict {
	return catalog.FindConflict(ce, types...)
}

// retry runs attempt until it reports done, retrying as the catalog's
// commits do (catalog.Service.Retry), counted in the facade's metrics.
func (a *api) retry(ctx context.Context, op string, attempt func(n int) (retry bool, err error)) error {
	return a.catalog.Retry(ctx, op, commitMetrics{a.metrics}, attempt)
}
