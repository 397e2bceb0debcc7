package icebergrest

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/apache/iceberg-go/table"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// commitTableRequest is the spec's CommitTableRequest. Decoding rejects
// unknown requirement types and update actions, as the spec requires.
type commitTableRequest struct {
	Identifier   *identifier        `json:"identifier"`
	Requirements table.Requirements `json:"requirements"`
	Updates      table.Updates      `json:"updates"`

	// fields holds each update's checked fields, decoded from the
	// request's own JSON; nil for a request built in code (fieldsOf).
	fields []updateFields
}

// UnmarshalJSON decodes the request: a common one in one pass
// (decodeCommonCommit), any other by the spec's decoding (decodeSpec).
func (c *commitTableRequest) UnmarshalJSON(data []byte) error {
	if req, ok := decodeCommonCommit(data); ok {
		*c = req
		return nil
	}
	return c.decodeSpec(data)
}

// specCommitTableRequest decodes as commitTableRequest does without
// trying decodeCommonCommit first: for callers that already did.
type specCommitTableRequest commitTableRequest

func (s *specCommitTableRequest) UnmarshalJSON(data []byte) error {
	return (*commitTableRequest)(s).decodeSpec(data)
}

// decodeSpec decodes the request as the spec's type, and each update's
// checked fields from the same bytes: authorization, the maintenance
// lock, shared-file and location checks all read them, and decoding them
// once here costs less than one re-encoding of the update.
func (c *commitTableRequest) decodeSpec(data []byte) error {
	type spec commitTableRequest // without the methods: the spec's decoding
	if err := json.Unmarshal(data, (*spec)(c)); err != nil {
		return err
	}
	var raw struct {
		Updates []updateFields `json:"updates"`
	}
	if json.Unmarshal(data, &raw) == nil && len(raw.Updates) == len(c.Updates) {
		c.fields = raw.Updates
	} else {
		// fieldsOf decodes each update on its own, and reports the error
		// where the check needs the field.
		c.fields = nil
	}
	return nil
}

// fieldsOf returns the checked fields of the request's i-th update.
func (c *commitTableRequest) fieldsOf(i int) (updateFields, error) {
	if c.fields != nil {
		return c.fields[i], nil
	}
	return catalog.DecodeUpdate(c.Updates[i])
}

// tableChange is one table's requested change.
type tableChange struct {
	id  identifier
	req commitTableRequest
}

func (a *api) updateTable(w http.ResponseWriter, r *http.Request) error {
	wr, id, err := a.entityOf(r, tableKind)
	if err != nil {
		return err
	}
	data, err := readBody(r)
	if err != nil {
		return err
	}
	// Not decodeBody: its json.Decoder reads a common request twice more.
	req, common := decodeCommonCommit(data)
	if !common {
		if err := decodeJSONBody(data, (*specCommitTableRequest)(&req)); err != nil {
			return err
		}
	}
	if req.Identifier != nil && !slices.Equal(req.Identifier.key(), id.key()) {
		return badRequest("the request body names table %s but the path names %s", *req.Identifier, id)
	}
	rp, err := a.commitTables(w, r, wr, []tableChange{{id: id, req: req}}, func(results []*catalog.Staged) *reply {
		s := results[0]
		return metadataReply(s.File.Location, s.Body, nil).withETag(etag(s.File.Location, "all"))
	})
	if err != nil {
		return err
	}
	rp.write(w, &a.joins)
	return nil
}

func (a *api) commitTransaction(w http.ResponseWriter, r *http.Request) error {
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return err
	}
	var req struct {
		TableChanges []commitTableRequest `json:"table-changes"`
	}
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if len(req.TableChanges) == 0 {
		return badRequest("a transaction needs at least one table change")
	}
	changes := make([]tableChange, 0, len(req.TableChanges))
	seen := map[string]bool{}
	for i, tc := range req.TableChanges {
		if tc.Identifier == nil {
			return badRequest("table change %d has no identifier", i)
		}
		id := *tc.Identifier
		if err := id.validate(); err != nil {
			return err
		}
		if seen[id.String()] {
			return badRequest("table %s appears more than once in the transaction", id)
		}
		seen[id.String()] = true
		changes = append(changes, tableChange{id: id, req: tc})
	}
	rp, err := a.commitTables(w, r, wr, changes, func([]*catalog.Staged) *reply { return noContent() })
	if err != nil {
		return err
	}
	rp.write(w, &a.joins)
	return nil
}

// commitTables authorizes the changes on wr's branch, checks their
// maintenance locks and has the catalog commit them
// (catalog.Service.CommitTables: requirements, rebase, metadata,
// locations, the write and the store commit, all tables or none). respond
// builds the reply from the prepared changes before the commit: for a
// request sent with an Idempotency-Key it is recorded in the commit's own
// batch, so a retry of a request whose answer was lost replays it instead
// of committing again. That reply is returned.
func (a *api) commitTables(w http.ResponseWriter, r *http.Request, wr *warehouseRef, changes []tableChange, respond func([]*catalog.Staged) *reply) (_ *reply, err error) {
	span := a.startCommitSpan(r, wr, changes)
	if span.IsRecording() {
		r = r.WithContext(trace.ContextWithSpan(r.Context(), span))
	}
	defer func() { endSpan(span, err) }()
	var contents []policy.Content
	if a.guard.Enabled() { // describing the updates costs a JSON round trip each
		contents = make([]policy.Content, len(changes))
		for i, tc := range changes {
			contents[i] = tableChangeContent(tc)
		}
	}
	branch, err := a.writeBranch(r, wr, policy.ActionWriteTable, contents...)
	if err != nil {
		return nil, err
	}
	if err := a.checkMaintenanceLocks(r, branch, changes); err != nil {
		return nil, err
	}
	ctx := r.Context()
	kr := keyedRequestOf(r)
	var rp *reply
	req := catalog.TablesCommit{
		Warehouse: wr.wh.name,
		Branch:    branch,
		Changes:   make([]catalog.TableChange, len(changes)),
		Committer: a.principal(r),
		Observer:  commitMetrics{a.metrics},
		Prepared: func(results []*catalog.Staged) *versionstore.Record {
			rp = respond(results)
			return a.recordOf(kr, rp)
		},
	}
	for i, tc := range changes {
		req.Changes[i] = catalog.TableChange{ID: catalog.Identifier(tc.id), Requirements: tc.req.Requirements, Updates: tc.req.Updates, Fields: tc.req.fields}
	}
	done, err := a.catalog.CommitTables(ctx, req)
	if err != nil {
		return nil, err
	}
	a.committed(ctx, w, kr, branch, req.Committer, committed{op: done.Op, message: done.Message, commit: done.Commit, appendRebased: done.Rebased, recorded: done.Recorded})
	a.countSnapshots(done.Staged)
	return rp, nil
}

// commitMetrics counts the catalog's table commits in the facade's
// metrics.
type commitMetrics struct{ m *metrics }

func (c commitMetrics) Retried(op string)    { c.m.retries.WithLabelValues(op).Inc() }
func (c commitMetrics) Conflicted(op string) { c.m.conflicts.WithLabelValues(op).Inc() }
func (c commitMetrics) Committed(op string, rebased bool) {
	outcome := outcomeOK
	if rebased {
		outcome = outcomeRebased
	}
	c.m.commits.WithLabelValues(op, outcome).Inc()
}
func (c commitMetrics) Refused(op string) {
	c.m.refused.WithLabelValues(op).Inc()
	c.m.commits.WithLabelValues(op, outcomeConflict).Inc()
}
