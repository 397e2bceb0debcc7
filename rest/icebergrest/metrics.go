package icebergrest

import "github.com/prometheus/client_golang/prometheus"

// metrics are the facade's own collectors; HTTP request metrics come from
// the server middleware. The operation label takes only the values in
// operations, so clients cannot create series at will.
type metrics struct {
	commits   *prometheus.CounterVec
	retries   *prometheus.CounterVec
	conflicts *prometheus.CounterVec
	refused   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_iceberg_commits_total",
			Help: "Catalog commits made through the Iceberg REST API, by Iceberg operation.",
		}, []string{"operation"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_iceberg_commit_retries_total",
			Help: "Server-side retries of Iceberg commits after another writer changed the same entity, by operation.",
		}, []string{"operation"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_iceberg_commit_conflicts_total",
			Help: "Version-store commits refused because a key they wrote changed concurrently, by operation.",
		}, []string{"operation"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_iceberg_commit_requirement_failures_total",
			Help: "Iceberg commits answered 409 CommitFailedException because a requirement failed, by operation.",
		}, []string{"operation"}),
	}
	for _, c := range []prometheus.Collector{m.commits, m.retries, m.conflicts, m.refused} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, op := range operations {
		m.commits.WithLabelValues(op)
	}
	return m, nil
}
