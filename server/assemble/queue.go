package assemble

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/merge/mergeengine"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/versionstore"
)

// MergeQueue configures the merge queue (package mergequeue).
type MergeQueue struct {
	// Rules are the protected branches, batching and per-prefix rules;
	// nil means mergequeue.DefaultRules() (`floe serve --merge-queue
	// FILE` reads them from a file).
	Rules *mergequeue.Rules
	// Manual runs no background worker: requests are processed only by
	// calls to Queue.Process (tests step the queue deterministically).
	Manual bool
	// Poll is how often idle workers look at their branches; 0 is the
	// queue's default.
	Poll time.Duration
}

// newMergeQueue builds the queue over the store and the merge engine
// built once for the whole process; its workers start with the other
// background workers.
func newMergeQueue(ctx context.Context, cfg MergeQueue, validator mergequeue.Validator, now func() time.Time, store *versionstore.Store, engine *mergeengine.Engine,
	lead *leadership, logger *slog.Logger, reg prometheus.Registerer) (*mergequeue.Queue, error) {
	rules := mergequeue.DefaultRules()
	if cfg.Rules != nil {
		rules = *cfg.Rules
	}
	return mergequeue.New(ctx, mergequeue.Options{Store: store, Merger: engine, Validator: validator,
		Rules: rules, Logger: logger, Metrics: reg, Poll: cfg.Poll, Now: now,
		Leases: lead.leases, Holder: lead.holder, LeaseTTL: lead.ttl})
}
