package icebergrest

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

// metrics are the facade's own collectors; HTTP request metrics come from
// the server middleware. The operation label takes only the values in
// icebergtable.Operations, so clients cannot create series at will.
type metrics struct {
	commits   *prometheus.CounterVec
	retries   *prometheus.CounterVec
	conflicts *prometheus.CounterVec
	refused   *prometheus.CounterVec

	// signatures and signRefusals count remote signing (sign.go).
	signatures   *prometheus.CounterVec
	signRefusals *prometheus.CounterVec
	// vended and vendRefusals count vended credentials (credentials.go).
	vended       *prometheus.CounterVec
	vendRefusals *prometheus.CounterVec

	ikReplays    prometheus.Counter
	ikWaits      prometheus.Counter
	ikMismatches prometheus.Counter
	ikRecords    *prometheus.CounterVec
	ikExpired    prometheus.Counter
}

// Outcomes of an Iceberg commit (floe_iceberg_commits_total's outcome
// label): operators tell contention the server absorbed (rebased) from
// real conflicts the clients saw.
const (
	outcomeOK       = "ok"
	outcomeRebased  = "rebased"
	outcomeConflict = "conflict"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_iceberg_commits_total",
			Help: "Iceberg commits through the REST API, by Iceberg operation and outcome: ok (committed as sent), " +
				"rebased (a stale append or row-level commit re-parented by the server onto the table's new head and committed), " +
				"conflict (answered 409 CommitFailedException: a requirement failed).",
		}, []string{"operation", "outcome"}),
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
		signatures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_storage_signatures_total",
			Help: "S3 requests floe signed for engines (remote signing), by S3 operation.",
		}, []string{"operation"}),
		signRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_storage_sign_refusals_total",
			Help: "Sign requests floe refused, nothing signed, by reason: deletion, operation, endpoint, bucket, outside-table, " +
				"malformed, no-table, read-only, policy, not-configured.",
		}, []string{"reason"}),
		vended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_storage_credentials_vended_total",
			Help: "S3 credentials floe vended for one table (STS AssumeRole with a session policy), by access: read or write.",
		}, []string{"access"}),
		vendRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_storage_vend_refusals_total",
			Help: "Requests for vended credentials floe refused or could not serve, nothing vended, by reason: policy, location, sts.",
		}, []string{"reason"}),

		ikReplays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_iceberg_idempotent_replays_total",
			Help: "Requests answered with the recorded response of an earlier request with the same Idempotency-Key, without running again.",
		}),
		ikWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_iceberg_idempotency_inflight_waits_total",
			Help: "Requests that waited for an in-flight request with the same Idempotency-Key to finish.",
		}),
		ikMismatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_iceberg_idempotency_key_reuses_total",
			Help: "Requests refused with 422 because their Idempotency-Key was already used for a different request.",
		}),
		ikRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_iceberg_idempotency_records_total",
			Help: "Outcomes of Idempotency-Key requests recorded for replay, by how they were written: with-commit (in the catalog commit's own batch) or alone.",
		}, []string{"written"}),
		ikExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_iceberg_idempotency_records_expired_total",
			Help: "Idempotency records deleted after their lifetime ended.",
		}),
	}
	for _, c := range []prometheus.Collector{m.commits, m.retries, m.conflicts, m.refused, m.signatures, m.signRefusals, m.vended, m.vendRefusals,
		m.ikReplays, m.ikWaits, m.ikMismatches, m.ikRecords, m.ikExpired} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, op := range icebergtable.Operations() {
		for _, outcome := range []string{outcomeOK, outcomeRebased, outcomeConflict} {
			m.commits.WithLabelValues(op, outcome)
		}
	}
	for _, how := range []string{"with-commit", "alone"} {
		m.ikRecords.WithLabelValues(how)
	}
	return m, nil
}
