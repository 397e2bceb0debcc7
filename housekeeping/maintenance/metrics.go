package maintenance

import "github.com/prometheus/client_golang/prometheus"

// metrics are the lock's collectors. The kind label of refused commits
// takes only KindRewrite and KindExpire.
type metrics struct {
	acquisitions   prometheus.Counter
	skips          prometheus.Counter
	renewals       prometheus.Counter
	releases       prometheus.Counter
	commitsRefused *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		acquisitions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_maintenance_lock_acquisitions_total",
			Help: "Maintenance locks acquired.",
		}),
		skips: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_maintenance_lock_skips_total",
			Help: "Maintenance lock acquisitions refused because another job held the lock: " +
				"cycles a job skipped (acquisitions never wait).",
		}),
		renewals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_maintenance_lock_renewals_total",
			Help: "Maintenance lock leases renewed by their holder.",
		}),
		releases: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_maintenance_lock_releases_total",
			Help: "Maintenance locks released by their holder (leases that expire instead are not counted).",
		}),
		commitsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_maintenance_commits_refused_total",
			Help: "Iceberg maintenance commits answered 409 because another job held the table's maintenance lock, " +
				"by kind: rewrite (replace snapshots: compaction, manifest rewrites) or expire (snapshot expiry).",
		}, []string{"kind"}),
	}
	for _, c := range []prometheus.Collector{m.acquisitions, m.skips, m.renewals, m.releases, m.commitsRefused} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{KindRewrite, KindExpire} {
		m.commitsRefused.WithLabelValues(k)
	}
	return m, nil
}
