package server

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/floe-catalog/floe/versionstore"
)

// httpMetrics are the request metrics every API gets. Labels are bounded:
// route is the mux path template (never the raw path), method is one of the
// standard methods or "other", so clients cannot create series at will.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_http_requests_total",
			Help: "HTTP requests answered, by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "floe_http_request_duration_seconds",
			Help:    "Time from receiving an HTTP request to finishing its response, by route template.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests,
		m.duration,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *httpMetrics) observe(route, method string, status int, elapsed time.Duration) {
	m.requests.WithLabelValues(route, methodLabel(method), strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(elapsed.Seconds())
}

func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

// registerStoreMetrics exports the version store's counters, read when
// scraped.
func registerStoreMetrics(reg prometheus.Registerer, st *versionstore.Stats) error {
	for _, c := range []struct {
		name, help string
		v          *atomic.Uint64
	}{
		{"floe_versionstore_commits_total", "Commits made durable (merges and transplants included).", &st.Commits},
		{"floe_versionstore_batches_total", "Durable batches written; commits per batch is the group-commit factor.", &st.Batches},
		{"floe_versionstore_conflicts_total", "Writes refused with a conflict.", &st.Conflicts},
		{"floe_versionstore_rebases_total", "Commits applied onto a head that moved since their expected hash.", &st.Rebases},
		{"floe_versionstore_backend_retries_total", "Batches redone after the backend saw a concurrent reference change.", &st.BackendRetries},
		{"floe_versionstore_locked_rounds_total", "Group-commit rounds that waited for their branch's row lock because other replicas were writing it (shared backends).", &st.LockedRounds},
		{"floe_versionstore_trees_rebuilt_total", "Trees of commits that were not the last of their group-commit round, rebuilt from their operations on read.", &st.TreesRebuilt},
		{"floe_versionstore_unavailable_writes_total", "Writes refused because the storage could not take them (a full disk, an unwritable directory, a database down); nothing was written.", &st.UnavailableWrites},
		{"floe_versionstore_unknown_outcome_writes_total", "Writes whose outcome the storage could not confirm (a failed fsync, a lost connection); they may have happened.", &st.UnknownOutcomes},
	} {
		v := c.v
		if err := reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help},
			func() float64 { return float64(v.Load()) })); err != nil {
			return err
		}
	}
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "floe_versionstore_writable",
		Help: "1 while the version store's storage takes writes, 0 while it refuses them (see /readyz for why).",
	}, func() float64 {
		if st.Writable() {
			return 1
		}
		return 0
	}))
}
