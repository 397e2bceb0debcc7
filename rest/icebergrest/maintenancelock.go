package icebergrest

import (
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/housekeeping/maintenance"
)

// Maintenance commits and the maintenance lock (package maintenance).
//
// A commit is maintenance when it adds a snapshot whose summary operation
// is "replace" (Spark's rewrite_data_files, rewrite_manifests and
// rewrite_position_delete_files, Flink's RewriteDataFiles: the data stays,
// its files change) or removes snapshots (expire_snapshots; the
// remove-snapshot-ref updates an expiry sends with it ride along, while a
// remove-snapshot-ref alone is a DROP BRANCH/TAG, no maintenance).
// Appends, overwrites and deletes never ask: ingestion does not take part
// in the lock. While a lease is live on the table on the commit's branch,
// a maintenance commit lands only if it carries the lease's token in the
// Floe-Maintenance-Lock header; otherwise it fails fast, before any file
// is written, with 409 CommitFailedException naming the holder, its job
// and the lease's expiry. Java's and PyIceberg's REST catalogs send
// whatever the catalog property header.Floe-Maintenance-Lock says on
// every request, iceberg-go's rest.WithHeaders does the same.
//
// The token rather than the principal proves holdership, so that two
// jobs running as one service account still exclude each other; and a
// header rather than a snapshot summary property, because a summary is
// kept in the table's metadata for every reader to see (the token would
// leak) and an expiry adds no snapshot to carry one.
//
// The check is advisory, like the lock: it runs once per request before
// the commit's retries, so a lease taken while a commit is already being
// applied does not stop that commit.

// maintenanceKind says whether an update list is maintenance, and which.
func maintenanceKind(req *commitTableRequest) string {
	kind := ""
	for i, u := range req.Updates {
		switch u.Action() {
		case table.UpdateRemoveSnapshots:
			kind = maintenance.KindExpire
		case table.UpdateAddSnapshot:
			if f, err := req.fieldsOf(i); err == nil && f.SnapshotOperation() == string(table.OpReplace) {
				return maintenance.KindRewrite
			}
		}
	}
	return kind
}

// checkMaintenanceLocks refuses the maintenance commits among changes on
// branch that are not the lock holder's.
func (a *api) checkMaintenanceLocks(r *http.Request, branch string, changes []tableChange) error {
	if a.maint.locks == nil {
		return nil
	}
	token := strings.TrimSpace(r.Header.Get(maintenance.TokenHeader))
	for _, tc := range changes {
		kind := maintenanceKind(&tc.req)
		if kind == "" {
			continue
		}
		err := a.maint.locks.CheckCommit(r.Context(), maintenance.Target{Branch: branch, Table: tc.id.key()}, token, kind)
		if he, ok := errors.AsType[*maintenance.HeldError](err); ok {
			return commitFailed("%s. Send the lease's token in the %s header to commit as its holder, or skip this cycle",
				he.Error(), maintenance.TokenHeader)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// DefaultSnapshotMetricTables is how many tables get their own table
// label on floe_iceberg_snapshots_total when Deps.SnapshotMetricTables is
// zero.
const DefaultSnapshotMetricTables = 100

// otherTables is the table label of every table past the limit.
const otherTables = "_other"

// maintenanceHooks are the facade's parts of the maintenance lock and of
// snapshot accounting.
type maintenanceHooks struct {
	locks     *maintenance.Service
	snapshots *prometheus.CounterVec

	// Tables with their own label, up to limit; the rest count as
	// otherTables, so the series stay bounded (limit x operations) however
	// many tables the catalog holds. limit < 0: no table label at all.
	mu     sync.Mutex
	tables map[string]bool
	limit  int
}

func newMaintenanceHooks(deps Deps, reg prometheus.Registerer) (*maintenanceHooks, error) {
	h := &maintenanceHooks{locks: deps.MaintenanceLocks, tables: map[string]bool{}, limit: deps.SnapshotMetricTables}
	if h.limit == 0 {
		h.limit = DefaultSnapshotMetricTables
	}
	h.snapshots = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "floe_iceberg_snapshots_total",
		Help: "Iceberg snapshots committed through the REST API, by summary operation (append, overwrite, replace, delete, " +
			"other) and table (namespace.name; the first tables committed to get their own label, up to a limit, the rest " +
			"count as _other). Its rate per table is the best single proxy for commit contention.",
	}, []string{"operation", "table"})
	if err := reg.Register(h.snapshots); err != nil {
		return nil, err
	}
	return h, nil
}

// tableLabel is id's table label, admitting it if there is room.
func (h *maintenanceHooks) tableLabel(id identifier) string {
	if h.limit < 0 {
		return ""
	}
	name := id.String()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tables[name] {
		return name
	}
	if len(h.tables) >= h.limit {
		return otherTables
	}
	h.tables[name] = true
	return name
}

// countSnapshots counts the snapshots a successful commit added.
func (a *api) countSnapshots(results []*catalog.Staged) {
	for _, s := range results {
		if !s.Changed() {
			continue
		}
		label := ""
		for _, snap := range s.Added {
			op := "other"
			if snap.Summary != nil && catalog.RecordedOperation(string(snap.Summary.Operation)) {
				op = string(snap.Summary.Operation)
			}
			if label == "" {
				label = a.maint.tableLabel(identifier(s.ID))
			}
			a.maint.snapshots.WithLabelValues(op, label).Inc()
		}
	}
}
