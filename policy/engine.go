package policy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floe-catalog/floe/policy/planeval"
	"github.com/google/uuid"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/download"
	"github.com/open-policy-agent/opa/v1/keys"
	opametrics "github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/prometheus/client_golang/prometheus"
)

// DecisionQuery is what the engine asks every bundle. The rule must yield
// {"allow": bool, "reasons": [string]}.
const DecisionQuery = "data.floe.authz.decision"

// bundleName names the single bundle the engine activates; OPA keys bundle
// metadata in the store by it.
const bundleName = "floe"

// Defaults for Options.
const (
	DefaultPollInterval     = 2 * time.Second
	DefaultHTTPPollInterval = 30 * time.Second
	DefaultHTTPStartTimeout = 30 * time.Second
	DefaultVerificationAlg  = "RS256"
	defaultVerificationKID  = "default"
)

// Options configure an Engine. The zero value runs the embedded default
// bundle.
type Options struct {
	// Bundle is a bundle directory or .tar.gz file, watched for changes.
	// "" with no BundleURL means the default bundle compiled into floe.
	Bundle string
	// BundleURL is the URL of a bundle resource on an OPA bundle server
	// (for example https://bundles.example.com/bundles/floe.tar.gz),
	// polled with ETag / If-None-Match. Mutually exclusive with Bundle.
	BundleURL string
	// PollInterval is how often the bundle source is checked: default
	// DefaultPollInterval for a local bundle, DefaultHTTPPollInterval for
	// a bundle server.
	PollInterval time.Duration
	// HTTPStartTimeout bounds how long New waits for the first bundle from
	// BundleURL (also bounded by New's context); default
	// DefaultHTTPStartTimeout.
	HTTPStartTimeout time.Duration

	// VerificationKey, when set, makes the engine accept only bundles
	// signed with it (OPA bundle signatures, .signatures.json): a PEM
	// public key, or the shared secret for HS* algorithms.
	VerificationKey string
	// VerificationKeyID names the key; signatures are verified with this
	// key whatever key id they carry. Default "default".
	VerificationKeyID string
	// VerificationAlg is the JWS algorithm (RS256, ES256, HS256, ...);
	// default RS256.
	VerificationAlg string

	// DecisionCacheSize is how many distinct inputs' decisions are kept
	// per bundle activation (cache.go): 0 means DefaultDecisionCacheSize,
	// negative turns the cache off. Bundles that call nondeterministic
	// builtins or read input.request_id are never cached.
	DecisionCacheSize int

	// Evaluator picks how decisions are evaluated: EvaluatorAuto (the
	// default, "") runs a bundle's compiled plan when the plan agrees with
	// OPA's topdown evaluator on the verification inputs, which is several
	// times faster; EvaluatorTopdown always uses topdown.
	Evaluator string

	// DecisionLog receives one JSON line per decision; nil logs nothing.
	// Lines are written by a goroutine of the engine, never by Decide's
	// caller, and all are written by the time Close returns: close the
	// writer after the engine.
	DecisionLog io.Writer
	// DecisionLogBuffer is how many lines may wait for a slow DecisionLog
	// writer (0 means DefaultDecisionLogBuffer). When that many wait, a
	// decision waits up to a second (or its context's end) for room, then
	// its line is dropped, counted in
	// floe_policy_decision_log_dropped_total and its id logged.
	DecisionLogBuffer int
	// Logger receives bundle activations and failures; nil discards.
	Logger *slog.Logger
	// OnActivate, if set, is told of every bundle activation once the
	// bundle decides, on the goroutine that activated it (New, Reload or
	// the bundle's poller), which waits for it: keep it short. floe's
	// composition root appends each activation to the change feed.
	OnActivate func(context.Context, Activation)
	// Metrics registers the engine's collectors; nil uses a private
	// registry.
	Metrics prometheus.Registerer
}

// Engine answers authorization questions with the active policy bundle.
// It is safe for concurrent use. Bundle activations swap the prepared
// query atomically, so a decision in flight finishes on the bundle it
// started with.
type Engine struct {
	opts    Options
	log     *slog.Logger
	reg     prometheus.Registerer
	metrics *metrics
	dlog    *decisionLog
	vc      *bundle.VerificationConfig

	active atomic.Pointer[activeBundle]

	// sourceMu serializes polling and reloading of the bundle source, so
	// activations happen in the order the source produced them.
	sourceMu   sync.Mutex
	local      *localSource
	downloader *download.Downloader
	// lastRejection is the last bundle error logged for BundleURL; under
	// sourceMu.
	lastRejection string

	// errMu guards lastErr apart from sourceMu: a download abandoned by
	// Close may still report after the poll that started it returned.
	errMu   sync.Mutex
	lastErr error // last failure to fetch or activate, for New's error

	ctx       context.Context // lives until Close; HTTP downloads use it
	cancel    context.CancelFunc
	loopDone  chan struct{}
	closeOnce sync.Once
}

// activeBundle is one activated bundle, ready to evaluate.
type activeBundle struct {
	query    rego.PreparedEvalQuery
	revision string
	cache    *decisionCache // nil: decisions are evaluated every time
	// plan, when set, evaluates decisions instead of query: the same
	// policy, compiled by OPA's planner and checked against query.
	plan *planeval.Program
	// topdownWhy says why an auto-configured bundle has no plan.
	topdownWhy string
	// testInputs is how many inputs of the bundle's own tests the plan
	// was verified on, besides verificationInputs.
	testInputs int
	// bundle and merge serve CheckMerge (mergecheck.go): its query is
	// compiled on first use, so activations that never see a merge
	// check pay nothing for it.
	bundle *bundle.Bundle
	merge  mergeQuery
}

// evaluator names what evaluates the bundle's decisions.
func (a *activeBundle) evaluator() string {
	if a.plan != nil {
		return evaluatorPlan
	}
	return evaluatorTopdown
}

// New starts an engine with the configured bundle. A bundle that cannot be
// read, verified or compiled at start is an error: floe must not serve
// with a policy it cannot enforce.
func New(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Bundle != "" && opts.BundleURL != "" {
		return nil, errors.New("policy: Bundle and BundleURL are mutually exclusive")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = prometheus.NewRegistry()
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
		if opts.BundleURL != "" {
			opts.PollInterval = DefaultHTTPPollInterval
		}
	}
	if opts.HTTPStartTimeout <= 0 {
		opts.HTTPStartTimeout = DefaultHTTPStartTimeout
	}
	switch opts.Evaluator {
	case "":
		opts.Evaluator = EvaluatorAuto
	case EvaluatorAuto, EvaluatorTopdown:
	default:
		return nil, fmt.Errorf("policy: unknown evaluator %q (want %q or %q)", opts.Evaluator, EvaluatorAuto, EvaluatorTopdown)
	}
	vc, err := verificationConfig(opts)
	if err != nil {
		return nil, err
	}

	m, err := newMetrics(opts.Metrics)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		opts:     opts,
		log:      opts.Logger.With("component", "policy"),
		reg:      opts.Metrics,
		metrics:  m,
		vc:       vc,
		loopDone: make(chan struct{}),
	}
	if opts.DecisionLog != nil {
		e.dlog = newDecisionLog(opts.DecisionLog, opts.DecisionLogBuffer, e.log, m.logDropped)
	}
	// The engine's context outlives New's: it ends at Close.
	e.ctx, e.cancel = context.WithCancel(context.WithoutCancel(ctx))

	if err := e.start(ctx); err != nil {
		e.cancel()
		if e.dlog != nil {
			e.dlog.close()
		}
		m.unregister(e.reg)
		return nil, err
	}
	return e, nil
}

func (e *Engine) start(ctx context.Context) error {
	switch {
	case e.opts.BundleURL != "":
		if err := e.startHTTP(ctx); err != nil {
			return err
		}
		go e.loop(e.pollHTTP)
	case e.opts.Bundle != "":
		e.local = &localSource{path: e.opts.Bundle, vc: e.vc, settle: min(e.opts.PollInterval, settleInterval)}
		if err := e.reloadLocal(ctx, true); err != nil {
			return err
		}
		go e.loop(func() { _ = e.reloadLocal(e.ctx, false) })
	default:
		b, err := DefaultBundle()
		if err != nil {
			return err
		}
		if err := e.activate(ctx, b, embeddedSource); err != nil {
			return err
		}
		close(e.loopDone)
	}
	return nil
}

// verificationConfig turns the key options into OPA's bundle verification
// config; nil means bundles need no signature.
func verificationConfig(opts Options) (*bundle.VerificationConfig, error) {
	if opts.VerificationKey == "" {
		if opts.VerificationKeyID != "" || opts.VerificationAlg != "" {
			return nil, errors.New("policy: VerificationKeyID or VerificationAlg set without VerificationKey")
		}
		return nil, nil
	}
	if opts.Bundle == "" && opts.BundleURL == "" {
		// The embedded bundle is unsigned; a key without a bundle source
		// is a configuration mistake, not a request to trust the binary.
		return nil, errors.New("policy: VerificationKey needs Bundle or BundleURL")
	}
	alg := opts.VerificationAlg
	if alg == "" {
		alg = DefaultVerificationAlg
	}
	if !keys.IsSupportedAlgorithm(alg) {
		return nil, fmt.Errorf("policy: unsupported bundle verification algorithm %q", alg)
	}
	kid := opts.VerificationKeyID
	if kid == "" {
		kid = defaultVerificationKID
	}
	return bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{
		kid: {Key: opts.VerificationKey, Algorithm: alg},
	}, kid, "", nil), nil
}

// loop runs poll every PollInterval until Close.
func (e *Engine) loop(poll func()) {
	defer close(e.loopDone)
	t := time.NewTicker(e.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
			poll()
		}
	}
}

// Close stops watching the bundle source, writes every decision-log line
// of the decisions made so far, and unregisters the metrics. It is
// idempotent. Decisions already in flight complete; Decide after Close
// still answers with the last active bundle, and writes its log line
// itself.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.cancel()
		<-e.loopDone
		if e.dlog != nil {
			e.dlog.close()
		}
		e.metrics.unregister(e.reg)
	})
	return nil
}

// Revision is the active bundle's manifest revision.
func (e *Engine) Revision() string {
	return e.active.Load().revision
}

// Reload re-reads the bundle source now, even if it looks unchanged, and
// activates it. On error the previous bundle stays active.
func (e *Engine) Reload(ctx context.Context) error {
	switch {
	case e.opts.BundleURL != "":
		return e.reloadHTTP(ctx)
	case e.local != nil:
		return e.reloadLocal(ctx, true)
	default:
		b, err := DefaultBundle()
		if err != nil {
			return err
		}
		return e.activate(ctx, b, embeddedSource)
	}
}

// activate compiles b and makes it the active bundle. A bundle is
// refused, and the active one kept, if it does not compile, defines no
// decision rule, refers to documents it does not define, fails its own
// tests, or fails to evaluate a probe decision (bundlecheck.go). The
// embedded default bundle skips its own tests: they run in `make test`
// and it cannot change after the build.
func (e *Engine) activate(ctx context.Context, b *bundle.Bundle, source string) error {
	a, err := prepare(ctx, b, e.opts.DecisionCacheSize, e.opts.Evaluator, source != embeddedSource)
	if err != nil {
		if ctx.Err() != nil {
			// Cut short by shutdown or a cancelled Reload: nothing is
			// known about the bundle.
			return fmt.Errorf("policy bundle from %s (revision %q) not activated: %w", source, b.Manifest.Revision, err)
		}
		e.countRefusal(err)
		e.log.Error("policy bundle refused; keeping the active one",
			"source", source, "revision", b.Manifest.Revision, "active_revision", e.activeRevision(),
			"reason", refusalReason(err), "err", err)
		return fmt.Errorf("policy bundle from %s (revision %q) refused: %w", source, b.Manifest.Revision, err)
	}
	prev := e.activeRevision()
	e.active.Store(a)
	e.metrics.activatedOK.Inc()
	e.metrics.setRevision(a.revision, a.evaluator())
	e.log.Info("policy bundle activated", "source", source, "revision", a.revision, "previous_revision", prev,
		"evaluator", a.evaluator(), "verified_test_inputs", a.testInputs)
	if a.topdownWhy != "" {
		// Correct either way, only slower; the operator may want to know
		// which construct keeps the bundle off the plan evaluator.
		e.log.Info("policy bundle evaluated with topdown", "revision", a.revision, "reason", a.topdownWhy)
	}
	if e.opts.OnActivate != nil {
		e.opts.OnActivate(ctx, Activation{Source: source, Revision: a.revision, PreviousRevision: prev})
	}
	return nil
}

// Activation is a bundle the engine activated: where it came from, its
// revision and the revision it replaced ("" for the first).
type Activation struct {
	Source, Revision, PreviousRevision string
}

// embeddedSource names the default bundle compiled into floe.
const embeddedSource = "embedded default bundle"

// countRefusal counts a bundle that will not replace the active one.
func (e *Engine) countRefusal(err error) {
	e.metrics.rejected.Inc()
	e.metrics.refusals.WithLabelValues(refusalReason(err)).Inc()
}

func (e *Engine) setLastError(err error) {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	e.lastErr = err
}

func (e *Engine) lastError() error {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.lastErr
}

func (e *Engine) activeRevision() string {
	if a := e.active.Load(); a != nil {
		return a.revision
	}
	return ""
}

var decisionRef = ast.MustParseRef(DecisionQuery)

func prepare(ctx context.Context, b *bundle.Bundle, cacheSize int, evaluator string, runTests bool) (*activeBundle, error) {
	var compiler *ast.Compiler
	// rego creates a fresh store for each activation: the bundle's data
	// replaces the previous one wholesale, and in-flight evaluations keep
	// reading the old store.
	pq, err := rego.New(
		rego.Query(DecisionQuery),
		rego.ParsedBundle(bundleName, b),
		rego.CompilerHook(func(c *ast.Compiler) { compiler = c }),
	).PrepareForEval(ctx)
	if err != nil {
		return nil, refuse(refusedCompile, fmt.Errorf("compile: %w", err))
	}
	if compiler == nil || len(compiler.GetRules(decisionRef)) == 0 {
		return nil, refuse(refusedNoDecision, fmt.Errorf("bundle defines no %s rule", DecisionQuery))
	}
	if missing := missingDocuments(compiler, b); len(missing) > 0 {
		return nil, refuse(refusedMissingData, fmt.Errorf("the policy refers to %s, which neither the bundle's data nor its rules define (a data.json missing from the bundle?)",
			strings.Join(missing, ", ")))
	}
	if runTests {
		if _, err := runBundleTests(ctx, b); err != nil {
			return nil, err
		}
	}
	a := &activeBundle{query: pq, revision: b.Manifest.Revision, bundle: b}
	if cacheSize == 0 {
		cacheSize = DefaultDecisionCacheSize
	}
	if cacheSize > 0 && cacheable(compiler.Modules) {
		a.cache = newDecisionCache(cacheSize)
	}
	// A probe catches bundles that compile but fail at evaluation (a
	// conflict between complete rules, a builtin error) before they
	// replace a working one.
	probe := Input{
		Version:   InputVersion,
		Principal: Principal{ID: "floe-bundle-probe"},
		Action:    ActionRead,
		API:       "nessie",
		Ref:       Ref{Name: "main", Type: RefBranch},
	}
	if _, _, err := a.eval(ctx, &probe); err != nil {
		return nil, refuse(refusedProbe, fmt.Errorf("probe decision: %w", err))
	}
	if evaluator == EvaluatorAuto {
		a.plan, a.topdownWhy = compilePlan(ctx, a, b)
	}
	return a, nil
}

// noopMetrics spares each evaluation the metrics map rego would create;
// the engine keeps its own Prometheus figures.
var noopMetrics = opametrics.NoOp()

// keepTerm hands the result back as OPA's own value, which decodeDecision
// reads without the conversion to map[string]any.
func keepTerm(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }

// eval evaluates the decision for in.
func (a *activeBundle) eval(ctx context.Context, in *Input) (bool, []string, error) {
	return a.evalValue(ctx, in.astValue())
}

// evalValue evaluates the decision for an input document (Input.astValue).
func (a *activeBundle) evalValue(ctx context.Context, input ast.Value) (bool, []string, error) {
	if a.plan != nil {
		return evalPlan(ctx, a.plan, input)
	}
	return a.evalTopdown(ctx, input)
}

// evalTopdown evaluates the decision with OPA's topdown. Cancellation goes through
// context.AfterFunc rather than the goroutine rego starts per evaluation
// otherwise; at this size of query that goroutine is a visible share of
// the cost.
func (a *activeBundle) evalTopdown(ctx context.Context, input ast.Value) (bool, []string, error) {
	cancel := topdown.NewCancel()
	stop := context.AfterFunc(ctx, cancel.Cancel)
	defer stop()
	rs, err := a.query.Eval(ctx,
		rego.EvalParsedInput(input),
		rego.EvalExternalCancel(cancel),
		rego.EvalMetrics(noopMetrics),
		rego.EvalGenerateJSON(keepTerm))
	if err != nil {
		return false, nil, err
	}
	if err := ctx.Err(); err != nil {
		// A cancelled evaluation may stop early with a partial answer.
		return false, nil, err
	}
	var decision *ast.Term
	if len(rs) > 0 && len(rs[0].Expressions) > 0 {
		var ok bool
		if decision, ok = rs[0].Expressions[0].Value.(*ast.Term); !ok {
			return false, []string{reasonNoDecision + ": " + DecisionQuery + " gave no value"}, nil
		}
	}
	allow, reasons := decodeDecision(decision)
	return allow, reasons, nil
}

// Reasons the engine adds itself.
const (
	reasonNoDecision = "policy gave no usable decision"
	reasonDenied     = "denied by policy"
)

// Decide asks the active policy whether in may proceed. A policy that
// yields no decision, or a malformed one, denies. The error is only for
// evaluation faults (a cancelled context, a builtin error), which callers
// answer with a server error rather than a denial.
func (e *Engine) Decide(ctx context.Context, in Input) (Decision, error) {
	a := e.active.Load()
	// OPA notices cancellation only now and then during evaluation, and a
	// short policy may finish first; a caller that gave up gets no answer.
	if err := ctx.Err(); err != nil {
		e.metrics.evalError.Inc()
		return Decision{}, fmt.Errorf("evaluate %s: %w", DecisionQuery, err)
	}
	start := time.Now()
	d := Decision{ID: uuid.NewString()}
	var key []byte
	useCache, cached := false, false
	// A storage request names one object key: its decision is asked once
	// and would only push the repeated questions of commits out of the
	// cache.
	if a.cache != nil && in.Storage == nil {
		k := a.cache.encoder()
		defer a.cache.release(k)
		if key, useCache = k.key(&in); useCache {
			var c cachedDecision
			if c, cached = a.cache.get(key); cached {
				d.Allow, d.Reasons = c.allow, slices.Clone(c.reasons)
				e.metrics.cacheHit.Inc()
			}
		}
	}
	if !cached {
		var err error
		d.Allow, d.Reasons, err = a.eval(ctx, &in)
		if err != nil {
			e.metrics.latency.Observe(time.Since(start).Seconds())
			e.metrics.evalError.Inc()
			return Decision{}, fmt.Errorf("evaluate %s (bundle revision %q, action %s, ref %q): %w",
				DecisionQuery, a.revision, in.Action, in.Ref.Name, err)
		}
		if !d.Allow && len(d.Reasons) == 0 {
			d.Reasons = []string{reasonDenied}
		}
		if useCache {
			e.metrics.cacheMiss.Inc()
			a.cache.put(string(key), cachedDecision{allow: d.Allow, reasons: slices.Clone(d.Reasons)})
		}
	}
	elapsed := time.Since(start)
	e.metrics.latency.Observe(elapsed.Seconds())
	if d.Allow {
		e.metrics.allow.Inc()
	} else {
		e.metrics.deny.Inc()
	}
	if e.dlog != nil {
		entry := DecisionLogEntry{
			DecisionID: d.ID,
			Time:       start,
			Input:      in,
			Result:     DecisionResult{Allow: d.Allow, Reasons: d.Reasons},
			LatencyUS:  float64(elapsed.Nanoseconds()) / 1e3,
			Cached:     cached,
			Revision:   a.revision,
		}
		if err := e.dlog.write(ctx, &entry); err != nil {
			// The decision stands; losing a log line must not turn an
			// answer into an outage.
			e.log.Error("decision log line lost", "decision_id", d.ID, "err", err)
		}
	}
	return d, nil
}

// decodeDecision reads {"allow": bool, "reasons": [string]} from the
// decision's value (nil: undefined); anything else denies with a reason
// saying so.
func decodeDecision(t *ast.Term) (bool, []string) {
	if t == nil {
		return false, []string{reasonNoDecision + ": " + DecisionQuery + " is undefined"}
	}
	obj, ok := t.Value.(ast.Object)
	if !ok {
		return false, []string{reasonNoDecision + ": " + DecisionQuery + " is not an object"}
	}
	var allow ast.Boolean
	ok = false // a missing "allow" is as bad as a non-boolean one
	if at := obj.Get(allowKey); at != nil {
		allow, ok = at.Value.(ast.Boolean)
	}
	if !ok {
		return false, []string{reasonNoDecision + `: "allow" is not a boolean`}
	}
	reasons := []string{}
	if rt := obj.Get(reasonsKey); rt != nil {
		arr, isArray := rt.Value.(*ast.Array)
		if !isArray {
			return false, []string{reasonNoDecision + `: "reasons" is not an array`}
		}
		reasons = make([]string, 0, arr.Len())
		for i := range arr.Len() {
			s, isString := arr.Elem(i).Value.(ast.String)
			if !isString {
				return false, []string{reasonNoDecision + `: "reasons" holds a non-string`}
			}
			reasons = append(reasons, string(s))
		}
	}
	return bool(allow), reasons
}

var (
	allowKey   = ast.StringTerm("allow")
	reasonsKey = ast.StringTerm("reasons")
)
