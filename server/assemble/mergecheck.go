package assemble

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/mergecheck"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// MergeChecks configures how the merge queue validates its candidates
// (package mergecheck): the built-in checks and the policy bundle's merge
// rules always run; external checks come from File.
type MergeChecks struct {
	// File is the checks' configuration (`floe serve --merge-checks`):
	// external checks and default thresholds; "" means none.
	File string
	// CatalogURI is floe's Iceberg REST URL as external checks reach it;
	// webhooks carry it with the candidate.
	CatalogURI string
}

// newMergeValidator builds the validator the queue uses unless the
// configuration brings its own.
func newMergeValidator(cfg MergeChecks, store *versionstore.Store, warehouses []*icebergtable.Warehouse,
	engine *policy.Engine, logger *slog.Logger) (mergequeue.Validator, error) {
	opts := mergecheck.Options{Store: store, Warehouses: warehouses, CatalogURI: cfg.CatalogURI, Logger: logger}
	if len(warehouses) > 0 {
		opts.Warehouse = warehouses[0].Name()
	}
	if engine != nil {
		opts.Policy = policyMergeRules{engine}
	}
	if cfg.File != "" {
		file, checks, err := mergecheck.LoadConfig(cfg.File, os.Getenv)
		if err != nil {
			return nil, err
		}
		opts.External, opts.Defaults = checks, file.Defaults
	}
	v, err := mergecheck.New(opts)
	if err != nil {
		return nil, fmt.Errorf("merge checks: %w", err)
	}
	return queueValidator{v}, nil
}

// queueValidator is mergecheck's validator as the queue asks it; an
// approved structural request may change its tables' structure.
type queueValidator struct{ v *mergecheck.Validator }

func (q queueValidator) Validate(ctx context.Context, c mergequeue.Candidate) ([]mergequeue.CheckResult, error) {
	res, err := q.v.Validate(ctx, mergecheck.Candidate{
		RequestID: c.RequestID, Target: c.Target, TargetHead: c.TargetHead, Commit: c.Commit,
		SourceRef: c.SourceRef, SourceHash: c.SourceHash, Principal: c.Principal,
		RequiredChecks: c.RequiredChecks, AllowStructural: c.Approved,
	})
	out := make([]mergequeue.CheckResult, len(res))
	for i, r := range res {
		out[i] = mergequeue.CheckResult{Name: r.Name, Passed: r.Passed, Reason: r.Reason, DurationSeconds: r.DurationSeconds}
	}
	return out, err
}

// policyMergeRules evaluates the bundle's merge rules for mergecheck.
type policyMergeRules struct{ e *policy.Engine }

func (p policyMergeRules) CheckMerge(ctx context.Context, summary []byte) (mergecheck.PolicyDecision, error) {
	d, err := p.e.CheckMerge(ctx, summary)
	return mergecheck.PolicyDecision(d), err
}
