package policy

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the engine's Prometheus collectors. The per-result counters
// are resolved once so Decide does no label lookup.
type metrics struct {
	decisions   *prometheus.CounterVec
	allow       prometheus.Counter
	deny        prometheus.Counter
	evalError   prometheus.Counter
	latency     prometheus.Histogram
	activations *prometheus.CounterVec
	activatedOK prometheus.Counter
	rejected    prometheus.Counter
	refusals    *prometheus.CounterVec
	fetchErrors prometheus.Counter
	revision    *prometheus.GaugeVec
	cache       *prometheus.CounterVec
	cacheHit    prometheus.Counter
	cacheMiss   prometheus.Counter
	logDropped  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_policy_decisions_total",
			Help: "Authorization decisions by result (allow, deny, error).",
		}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "floe_policy_eval_duration_seconds",
			Help: "Time to evaluate one authorization decision.",
			// Decisions take tens of microseconds; the default buckets
			// start at 5ms and would put everything in the first one.
			Buckets: []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 10e-3, 50e-3},
		}),
		activations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_policy_bundle_activations_total",
			Help: "Policy bundle activations by outcome (ok, rejected).",
		}, []string{"outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_policy_bundle_refusals_total",
			Help: "Policy bundles refused (the active one kept) by reason: invalid, compile, no_decision, missing_data, tests_failed, probe, unstable.",
		}, []string{"reason"}),
		fetchErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_policy_bundle_fetch_errors_total",
			Help: "Failed attempts to reach the bundle source (HTTP errors, unreadable files).",
		}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_policy_decision_cache_total",
			Help: "Decisions answered from the decision cache (hit) or evaluated and cached (miss).",
		}, []string{"result"}),
		logDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_policy_decision_log_dropped_total",
			Help: "Decision-log lines dropped because the writer stayed behind a full buffer.",
		}),
		revision: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "floe_policy_bundle_info",
			Help: "The active policy bundle: 1 for its revision and the evaluator running it (plan or topdown).",
		}, []string{"revision", "evaluator"}),
	}
	m.allow = m.decisions.WithLabelValues("allow")
	m.deny = m.decisions.WithLabelValues("deny")
	m.evalError = m.decisions.WithLabelValues("error")
	m.activatedOK = m.activations.WithLabelValues("ok")
	m.rejected = m.activations.WithLabelValues("rejected")
	for _, reason := range refusalReasons {
		// Every reason is exported from the start, so an alert on a rate
		// sees its first refusal.
		m.refusals.WithLabelValues(reason)
	}
	m.cacheHit = m.cache.WithLabelValues("hit")
	m.cacheMiss = m.cache.WithLabelValues("miss")

	for _, c := range []prometheus.Collector{m.decisions, m.latency, m.activations, m.refusals, m.fetchErrors, m.revision, m.cache, m.logDropped} {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				return nil, fmt.Errorf("register policy metrics: another engine already registered them on this registry: %w", err)
			}
			return nil, fmt.Errorf("register policy metrics: %w", err)
		}
	}
	return m, nil
}

// unregister lets a closed engine's registry take a new engine.
func (m *metrics) unregister(reg prometheus.Registerer) {
	for _, c := range []prometheus.Collector{m.decisions, m.latency, m.activations, m.refusals, m.fetchErrors, m.revision, m.cache, m.logDropped} {
		reg.Unregister(c)
	}
}

func (m *metrics) setRevision(rev, evaluator string) {
	m.revision.Reset()
	m.revision.WithLabelValues(rev, evaluator).Set(1)
}
