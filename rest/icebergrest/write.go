package icebergrest

import (
	"context"
	"net/http"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/versionstore"
)

// write has the catalog make a write (do) that request r asks of wr's
// branch, and answers with the reply respond builds of what it wrote.
// The catalog.Write do gets names the request's principal as committer,
// counts the commit in the facade's metrics and, for a request sent with
// an Idempotency-Key, records respond's reply in the commit itself, so the
// outcome becomes durable in the same batch as the commit and a retry of
// a request whose answer was lost replays it instead of committing again.
// What is sent is exactly that reply.
func (a *api) write(w http.ResponseWriter, r *http.Request, wr *warehouseRef, branch string, respond func(*catalog.Written) *reply,
	do func(context.Context, catalog.Write) (*catalog.Written, error)) (*catalog.Written, error) {
	kr := keyedRequestOf(r)
	var rp *reply
	cw := catalog.Write{
		Warehouse: wr.wh.name,
		Branch:    branch,
		Committer: a.principal(r),
		Observer:  commitMetrics{a.metrics},
		Record: func(done *catalog.Written) *versionstore.Record {
			rp = respond(done)
			return a.recordOf(kr, rp)
		},
	}
	ctx := r.Context()
	done, err := do(ctx, cw)
	if err != nil {
		return nil, err
	}
	if rp == nil { // no attempt prepared a commit (a staged create)
		rp = respond(done)
	}
	a.committed(ctx, w, kr, branch, cw.Committer, committed{op: done.Op, message: done.Message, commit: done.Commit, recorded: done.Recorded})
	rp.write(w, &a.joins)
	return done, nil
}

// recordOf is the store record of rp, the reply to a request sent with an
// Idempotency-Key (kr), or nil when there is none.
func (a *api) recordOf(kr *keyedRequest, rp *reply) *versionstore.Record {
	if kr == nil || rp == nil {
		return nil
	}
	return kr.record(rp, a.now().Add(a.ik.lifetime))
}

// committed is what a catalog commit a request asked for did.
type committed struct {
	op, message string
	// commit is nil when nothing was committed.
	commit *versionstore.CommitResult
	// appendRebased: a stale append or row-level commit in it was
	// re-parented onto the current head.
	appendRebased bool
	// recorded: the request's idempotency record rode in the commit.
	recorded bool
}

// committed logs a catalog commit request kr (nil: one sent without an
// Idempotency-Key) made on branch, and notes that its idempotency record
// was committed with it.
func (a *api) committed(ctx context.Context, w http.ResponseWriter, kr *keyedRequest, branch, principal string, c committed) {
	if c.commit == nil {
		return
	}
	if c.recorded {
		kr.recorded = true
		a.metrics.ikRecords.WithLabelValues("with-commit").Inc()
	}
	a.logger.InfoContext(ctx, "iceberg commit",
		"operation", c.op, "message", c.message, "branch", branch,
		"commit", c.commit.Commit.Hash.String(), "rebased", c.commit.Rebased, "append_rebased", c.appendRebased,
		"principal", principal, "request_id", requestID(w))
}
