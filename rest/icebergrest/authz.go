package icebergrest

import (
	"net/http"
	"slices"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// unauthenticated answers a request without valid credentials. The
// message is the same whatever was wrong, so it tells an attacker
// nothing.
func (a *api) unauthenticated(w http.ResponseWriter, r *http.Request, err error) {
	a.logger.DebugContext(r.Context(), "iceberg request not authenticated",
		"method", r.Method, "path", r.URL.EscapedPath(), "error", err, "request_id", requestID(w))
	writeError(w, r, &apiError{status: http.StatusUnauthorized, typ: typeNotAuthorized,
		msg: "Not authorized: missing or invalid bearer token", cause: err})
}

// authorizeRead asks whether the caller may read c's reference.
func (a *api) authorizeRead(r *http.Request, wr *warehouseRef) error {
	return a.guard.Read(r, wr.ref)
}

// writeBranch returns the branch a write to wr goes to, once the write
// may proceed: wr must name a branch (a tag or commit is read-only, 403),
// and the policy must allow action on contents there. Every write asks
// here, before it writes anything.
func (a *api) writeBranch(r *http.Request, wr *warehouseRef, action policy.Action, contents ...policy.Content) (string, error) {
	if wr.branch == "" {
		return "", newError(http.StatusForbidden, typeForbidden, "%s", wr.readOnly)
	}
	if !a.guard.Enabled() {
		return wr.branch, nil
	}
	err := a.guard.Check(r, policy.Input{
		Action:   action,
		Ref:      policy.Ref{Name: wr.branch, Type: policy.RefBranch},
		Contents: contents,
	})
	return wr.branch, err
}

// content describes one key an Iceberg request writes.
func content(key versionstore.ContentKey, typ, change string) policy.Content {
	return policy.Content{Key: []string(key), Type: typ, Change: change}
}

// schemaUpdates are the update actions that change a table's schema,
// partitioning or sort order, which policies see as "schema-change".
var schemaUpdates = map[string]bool{
	table.UpdateAddSchema: true, table.UpdateSetCurrentSchema: true,
	table.UpdateAddSpec: true, table.UpdateSetDefaultSpec: true, table.UpdateRemoveSpec: true,
	table.UpdateAddSortOrder: true, table.UpdateSetDefaultSortOrder: true,
	table.UpdateRemoveSchemas: true,
}

// tableChangeContent describes one table of an updateTable or
// transactions/commit request from what the request asks, before anything
// is prepared: the snapshot operations it adds, its update actions and
// the table branches it sets.
func tableChangeContent(tc tableChange) policy.Content {
	change := policy.ChangeUpdate
	for _, rq := range tc.req.Requirements {
		if rq.GetType() == "assert-create" {
			change = policy.ChangeCreate
		}
	}
	ic := &policy.IcebergChange{}
	for i, u := range tc.req.Updates {
		action := u.Action()
		if !slices.Contains(ic.Updates, action) {
			ic.Updates = append(ic.Updates, action)
		}
		op := ""
		switch action {
		case table.UpdateAddSnapshot, table.UpdateSetSnapshotRef:
			if fields, err := tc.req.fieldsOf(i); err == nil {
				op = fields.SnapshotOperation()
				if fields.RefName != "" && !slices.Contains(ic.Branches, fields.RefName) {
					ic.Branches = append(ic.Branches, fields.RefName)
				}
			}
		}
		if schemaUpdates[action] {
			op = "schema-change"
		}
		if op != "" && !slices.Contains(ic.Operations, op) {
			ic.Operations = append(ic.Operations, op)
		}
	}
	return policy.Content{Key: []string(tc.id.key()), Type: policy.TypeTable, Change: change, Iceberg: ic}
}
