package mergequeue

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the queue's figures on /metrics: the report's, live.
type metrics struct {
	depth    *prometheus.GaugeVec     // target, state (queued, review, validating)
	wait     *prometheus.HistogramVec // class: enqueue to the worker's first take
	merge    *prometheus.HistogramVec // class: first take to landing
	outcomes *prometheus.CounterVec   // class, outcome (final state), reason
	bypass   *prometheus.CounterVec   // target
	batches  prometheus.Histogram     // requests landed per durable write
	rebuilds *prometheus.CounterVec   // target, why
	faults   *prometheus.CounterVec   // target
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	buckets := []float64{0.01, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600}
	m := &metrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_queue_depth",
			Help: "Merge requests waiting, by target branch and state (queued, validating, review)."}, []string{"target", "state"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "floe_queue_wait_seconds",
			Help: "Time from enqueue to the worker first taking a merge request, by request class.", Buckets: buckets}, []string{"class"}),
		merge: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "floe_queue_merge_seconds",
			Help: "Time from the worker first taking a merge request to it landing, by request class.", Buckets: buckets}, []string{"class"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_queue_outcomes_total",
			Help: "Merge requests that reached a final state, by class, outcome and reason."}, []string{"class", "outcome", "reason"}),
		bypass: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_queue_bypass_commits_total",
			Help: "Commits that reached a queue-managed branch other than through the queue."}, []string{"target"}),
		batches: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "floe_queue_batch_size",
			Help: "Merge requests landed per durable write.", Buckets: []float64{1, 2, 4, 8, 16, 32}}),
		rebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_queue_candidate_rebuilds_total",
			Help: "Candidates built again, by target and why (target-moved, check-failed, request-changed)."}, []string{"target", "why"}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_queue_fault_retries_total",
			Help: "Merges of a request that failed on a storage fault (the warehouse could not be read or written), by target; each is retried after a backoff, up to the queue's bound."}, []string{"target"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.depth, m.wait, m.merge, m.outcomes, m.bypass, m.batches, m.rebuilds, m.faults} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("merge queue metrics: %w", err)
			}
		}
	}
	return m, nil
}
