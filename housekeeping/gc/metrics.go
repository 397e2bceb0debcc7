package gc

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the floe_gc_* series.
type metrics struct {
	marked   prometheus.Counter
	deleted  prometheus.Counter
	freed    prometheus.Counter
	revived  prometheus.Counter
	duration prometheus.Histogram
	runs     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		marked: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_gc_files_marked_total",
			Help: "Files garbage collection marked live (a file reached twice counts twice)."}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_gc_files_deleted_total",
			Help: "Files garbage collection deleted (not counting dry runs)."}),
		freed: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_gc_bytes_freed_total",
			Help: "Bytes of the files garbage collection deleted."}),
		revived: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_gc_files_revived_total",
			Help: "Files garbage collection deleted that a commit landing during the sweep made live again (lost; alert on any)."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "floe_gc_duration_seconds",
			Help:    "How long a garbage collection run took, mark and sweep.",
			Buckets: prometheus.ExponentialBuckets(0.1, 4, 10)}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_gc_runs_total",
			Help: "Garbage collection runs by outcome (ok, error, canceled) and dry_run."}, []string{"outcome", "dry_run"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.marked, m.deleted, m.freed, m.revived, m.duration, m.runs} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("gc metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observe(rep *Report) {
	m.marked.Add(float64(rep.Marked))
	if !rep.DryRun {
		m.deleted.Add(float64(rep.Deleted))
		m.freed.Add(float64(rep.DeletedBytes))
		m.revived.Add(float64(rep.Revived))
	}
	m.duration.Observe(rep.DurationSeconds)
	dry := "false"
	if rep.DryRun {
		dry = "true"
	}
	m.runs.WithLabelValues(rep.Outcome, dry).Inc()
}
