package mergecheck

import (
	"context"
	"errors"
	"fmt"
	lru "github.com/hashicorp/golang-lru/v2"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/versionstore"
)

// Store is what validation needs of the version store.
type Store interface {
	RecordStore
	Diff(ctx context.Context, from, to versionstore.Hash, opts versionstore.DiffOptions) ([]versionstore.DiffEntry, string, error)
	IsAncestor(ctx context.Context, a, b versionstore.Hash) (bool, error)
}

// Options configure a Validator.
type Options struct {
	Store Store
	// Warehouses read the tables' metadata and manifests.
	Warehouses []*icebergtable.Warehouse
	// Warehouse names the warehouse external checks read the candidate
	// through: the summary and webhooks carry "<Warehouse>@<candidate>".
	Warehouse string
	// CatalogURI, when set, is floe's Iceberg REST URL as external checks
	// reach it; webhooks carry it.
	CatalogURI string
	// Policy evaluates the bundle's merge rules; nil passes the policy
	// check with a reason saying no engine is configured.
	Policy PolicyEvaluator
	// External are the configured external checks.
	External []ExternalCheck
	// Defaults hold check properties (PropMinRecords, ...) for tables
	// that do not set them.
	Defaults map[string]string
	// HTTPClient posts to the webhooks; nil means a client of its own
	// (every attempt is bounded by its check's timeout anyway).
	HTTPClient *http.Client
	// ResultTTL is how long a result record lives; 0 means
	// DefaultResultTTL, negative forever.
	ResultTTL time.Duration
	// ResultCacheSize is how many results are kept in memory; 0 means
	// 1024.
	ResultCacheSize int
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// DefaultResultTTL is how long a result record lives by default: past
// any queue's reach, within an audit's.
const DefaultResultTTL = 30 * 24 * time.Hour

// Validator validates merge candidates. It is safe for concurrent use:
// the queue validates the candidates of a batch in parallel.
type Validator struct {
	opts       Options
	classifier *classify.Classifier
	results    *results
	external   map[string]ExternalCheck
	// live caches the live files of target heads by manifest list (an
	// immutable file): the candidates of one batch share their target's
	// head, and each would read all its manifests again.
	live *lru.Cache[string, *liveFiles]
}

// liveFiles are a snapshot's live files and its records per partition;
// never changed once cached.
type liveFiles struct {
	files   map[string]classify.Partition
	records map[classify.Partition]int64
}

// liveCacheSize is how many target heads' live files are kept.
const liveCacheSize = 32

// New returns a validator.
func New(opts Options) (*Validator, error) {
	if opts.Store == nil {
		return nil, errors.New("mergecheck: a store is required")
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case opts.ResultTTL == 0:
		opts.ResultTTL = DefaultResultTTL
	case opts.ResultTTL < 0:
		opts.ResultTTL = 0
	}
	if opts.ResultCacheSize <= 0 {
		opts.ResultCacheSize = 1024
	}
	live, err := lru.New[string, *liveFiles](liveCacheSize)
	if err != nil {
		return nil, err
	}
	v := &Validator{opts: opts, classifier: classify.New(opts.Warehouses...), external: map[string]ExternalCheck{}, live: live}
	for _, c := range opts.External {
		switch {
		case c.Name == "":
			return nil, errors.New("mergecheck: an external check has no name")
		case slices.Contains(BuiltinChecks(), c.Name):
			return nil, fmt.Errorf("mergecheck: external check %q has the name of a built-in check", c.Name)
		case v.external[c.Name].Name != "":
			return nil, fmt.Errorf("mergecheck: two external checks are named %q", c.Name)
		case c.URL == "" || c.Secret == "":
			return nil, fmt.Errorf("mergecheck: external check %q needs a URL and a secret", c.Name)
		}
		v.external[c.Name] = c
	}
	if v.results, err = newResults(opts.Store, opts.ResultCacheSize, opts.ResultTTL); err != nil {
		return nil, err
	}
	return v, nil
}

// Validate runs every check on c and returns their results, built-in
// checks first (BuiltinChecks' order), then the external ones in the
// order c requires them. A failed check is a result, not an error: the
// error is for faults (unreadable metadata, a store error, the context
// ending), after which the queue may validate again.
//
// Results are kept under c.Commit. A candidate validated before with the
// same demands gets its passing result again without re-running the
// checks; a failed one is validated again (a webhook may have been
// down). A result never stands for another commit: a candidate rebuilt on
// a moved head is a new commit, validated anew.
func (v *Validator) Validate(ctx context.Context, c Candidate) ([]CheckResult, error) {
	if prev, err := v.results.get(ctx, c.Commit); err == nil && prev.Passed && prev.Candidate.same(c) {
		return prev.Checks, nil
	} else if err != nil && !errors.Is(err, ErrNoResult) {
		return nil, err
	}
	checks, err := v.run(ctx, c)
	if err != nil {
		return nil, err
	}
	res := &Result{Candidate: c, Checks: checks, Passed: true, ValidatedAt: v.opts.Now().UTC()}
	for _, ch := range checks {
		res.Passed = res.Passed && ch.Passed
	}
	if err := v.results.put(ctx, res); err != nil {
		// The verdict stands; only its record is missing, and the queue
		// keeps the checks in its own audit trail.
		v.opts.Logger.Warn("merge check result not stored", "candidate", c.Commit.String(), "err", err)
	}
	return slices.Clone(checks), nil
}

// Result returns the result kept for a candidate commit; an error
// wrapping ErrNoResult when there is none.
func (v *Validator) Result(ctx context.Context, commit versionstore.Hash) (*Result, error) {
	return v.results.get(ctx, commit)
}

// Summary computes c's merge summary without running any check.
func (v *Validator) Summary(ctx context.Context, c Candidate) (*Summary, error) {
	a, err := v.analyze(ctx, c)
	if err != nil {
		return nil, err
	}
	return a.summary, nil
}

func (v *Validator) run(ctx context.Context, c Candidate) ([]CheckResult, error) {
	start := time.Now()
	a, err := v.analyze(ctx, c)
	if err != nil {
		return nil, err
	}
	// The summary's reads serve every built-in check; lineage, the first,
	// carries their time.
	lineage, err := v.checkLineage(ctx, c, a)
	if err != nil {
		return nil, err
	}
	lineage.DurationSeconds = time.Since(start).Seconds()
	out := []CheckResult{lineage}
	for _, check := range []func() CheckResult{
		func() CheckResult { return v.checkSchema(c, a) },
		func() CheckResult { return v.checkRowCount(a) },
		func() CheckResult { return v.checkNulls(a) },
	} {
		t := time.Now()
		r := check()
		r.DurationSeconds = time.Since(t).Seconds()
		out = append(out, r)
	}

	// The policy and the external checks run in parallel: webhooks are
	// the slow part of a validation.
	ext := v.externalFor(c)
	extOut := make([]CheckResult, len(ext))
	var policy CheckResult
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		t := time.Now()
		r, err := v.checkPolicy(gctx, a.summary)
		r.DurationSeconds = time.Since(t).Seconds()
		policy = r
		return err
	})
	for i, name := range ext {
		g.Go(func() error {
			t := time.Now()
			cfg, ok := v.external[name]
			var r CheckResult
			var err error
			if ok {
				r, err = v.runWebhook(gctx, cfg, a.summary)
			} else {
				r = CheckResult{Name: name, Reason: "no external check of this name is configured"}
			}
			r.DurationSeconds = time.Since(t).Seconds()
			extOut[i] = r
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out = append(out, policy)
	return append(out, extOut...), nil
}

// externalFor lists the external checks c gets: those it requires (known
// or not), then those configured to run always, each once.
func (v *Validator) externalFor(c Candidate) []string {
	var out []string
	for _, name := range c.RequiredChecks {
		if !slices.Contains(BuiltinChecks(), name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, e := range v.opts.External {
		if e.Always && !slices.Contains(out, e.Name) {
			out = append(out, e.Name)
		}
	}
	return out
}
