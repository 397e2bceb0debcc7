package icebergrest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/policy"
)

// The events endpoint of the Iceberg REST spec's open proposal
// (apache/iceberg#12584, "REST Spec: Events endpoint"): POST
// /v1/{prefix}/events answers the changes to the namespaces, tables and
// views of the prefix's branch or tag, a page at a time, each page with an
// opaque continuation token to resume after it. The request and response
// shapes follow the proposal's draft of open-api/rest-catalog-open-api.yaml
// (QueryEventsRequest, QueryEventsResponse, Event and the twelve
// operations); floe serves the endpoint only when asked to
// (Deps.Events), while the proposal is open.
//
// The events are floe's change feed (catalog/changefeed) on that
// reference, mapped to the proposal's operations; the feed's other events
// (commits, merges, reference moves, the queue's, GC runs) have no
// operation in the proposal and are passed over. The continuation token is
// the feed's cursor, so the guarantees are the feed's: resuming with a
// token gives every later change once, in order, across restarts and
// replicas, and only changes that became durable.
//
// Authorization: the caller must be allowed to read the prefix's
// reference, the policy's read decision that floe's own events endpoint
// takes per event, asked for each page (every event of the page is on
// that one reference, and read is decided on the reference alone).

// Operation types of the proposal.
const (
	opCreateTable          = "create-table"
	opRegisterTable        = "register-table"
	opDropTable            = "drop-table"
	opUpdateTable          = "update-table"
	opRenameTable          = "rename-table"
	opCreateView           = "create-view"
	opDropView             = "drop-view"
	opUpdateView           = "update-view"
	opRenameView           = "rename-view"
	opCreateNamespace      = "create-namespace"
	opUpdateNamespaceProps = "update-namespace-properties"
	opDropNamespace        = "drop-namespace"
)

// contentEventTypes are the feed's events that have an operation.
var contentEventTypes = []changefeed.Type{
	changefeed.NamespaceCreated, changefeed.NamespaceUpdated, changefeed.NamespaceDropped,
	changefeed.TableCreated, changefeed.TableUpdated, changefeed.TableRenamed, changefeed.TableDropped,
	changefeed.ViewCreated, changefeed.ViewUpdated, changefeed.ViewRenamed, changefeed.ViewDropped,
}

// eventScanBudget bounds how long one request reads the feed for a page
// whose filters match nothing yet; it then answers an empty page with a
// token past what it read, which the client re-issues. An empty page
// otherwise means the reference has no later change yet.
const eventScanBudget = 5 * time.Second

// queryEventsRequest is the proposal's QueryEventsRequest.
type queryEventsRequest struct {
	ContinuationToken     *string           `json:"continuation-token"`
	PageSize              *int              `json:"page-size"`
	SinceTimestampMs      *int64            `json:"since-timestamp-ms"`
	OperationTypes        []string          `json:"operation-types"`
	CatalogObjectsByName  [][]string        `json:"catalog-objects-by-name"`
	CatalogObjectsByUUID  []string          `json:"catalog-objects-by-uuid"`
	ObjectTypes           []string          `json:"object-types"`
	CustomFilters         map[string]string `json:"custom-filters"`
	decodedSinceTimestamp time.Time
}

// queryEventsResponse is the proposal's QueryEventsResponse.
type queryEventsResponse struct {
	ContinuationToken string         `json:"continuation-token"`
	Events            []icebergEvent `json:"events"`
}

// icebergEvent is the proposal's Event.
type icebergEvent struct {
	EventID           string            `json:"event-id"`
	RequestID         string            `json:"request-id"`
	RequestEventCount int               `json:"request-event-count"`
	TimestampMs       int64             `json:"timestamp-ms"`
	Actor             map[string]string `json:"actor,omitempty"`
	Operation         map[string]any    `json:"operation"`
}

// eventToken is what a continuation token holds: the feed's cursor, and
// the reference it was read on, so that a token is not taken to another
// reference, where it would skip that reference's earlier changes.
type eventToken struct {
	Cursor string `json:"c"`
	Ref    string `json:"r"`
}

func encodeEventToken(c changefeed.Cursor, ref string) string {
	b, _ := json.Marshal(eventToken{Cursor: c.String(), Ref: ref})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeEventToken(s, ref string) (changefeed.Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var tok eventToken
	if err == nil {
		err = json.Unmarshal(b, &tok)
	}
	if err != nil {
		return changefeed.Cursor{}, badRequest("Invalid continuation-token: not one this server issued")
	}
	if tok.Ref != ref {
		return changefeed.Cursor{}, badRequest("Invalid continuation-token: it was issued for reference %q, not %q", tok.Ref, ref)
	}
	c, err := changefeed.ParseCursor(tok.Cursor)
	if err != nil {
		return changefeed.Cursor{}, badRequest("Invalid continuation-token: %v", err)
	}
	return c, nil
}

// queryEvents answers POST /v1/{prefix}/events.
func (a *api) queryEvents(w http.ResponseWriter, r *http.Request) error {
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return err
	}
	if wr.ref.Type == policy.RefDetached || wr.ref.Name == "" {
		return badRequest("Warehouse %s names a commit, which has no events: name a branch or tag", wr.spec)
	}
	if err := a.authorizeRead(r, wr); err != nil {
		return err
	}
	var req queryEventsRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	q, err := req.query(wr.ref.Name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), eventScanBudget)
	defer cancel()
	var page *changefeed.Page
	for {
		page, err = a.events.Read(ctx, q)
		if ctx.Err() != nil && r.Context().Err() == nil {
			// Out of budget: an empty page from where the last read
			// ended; the client resumes there.
			page, err = &changefeed.Page{Next: q.After}, nil
			break
		}
		if err != nil {
			return err
		}
		if len(page.Events) > 0 || page.Next == q.After {
			break // a page, or the end of the feed for now
		}
		q.After = page.Next
	}
	resp := queryEventsResponse{ContinuationToken: encodeEventToken(page.Next, wr.ref.Name), Events: make([]icebergEvent, 0, len(page.Events))}
	for i := range page.Events {
		if ev, ok := a.toIcebergEvent(r.Context(), &page.Events[i]); ok {
			resp.Events = append(resp.Events, ev)
		}
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// query checks the request and turns it into the feed's query on ref,
// with the proposal's filters in Allow, so that the cursor passes over
// what they leave out.
func (req *queryEventsRequest) query(ref string) (changefeed.Query, error) {
	q := changefeed.Query{Refs: []string{ref}, Types: contentEventTypes}
	if req.ContinuationToken != nil && *req.ContinuationToken != "" {
		c, err := decodeEventToken(*req.ContinuationToken, ref)
		if err != nil {
			return q, err
		}
		q.After = c
	} else if req.SinceTimestampMs != nil {
		req.decodedSinceTimestamp = time.UnixMilli(*req.SinceTimestampMs)
	}
	if req.PageSize != nil {
		if *req.PageSize < 1 {
			return q, badRequest("Invalid page-size %d: must be at least 1", *req.PageSize)
		}
		q.Limit = min(*req.PageSize, changefeed.MaxLimit)
	}
	for _, t := range req.ObjectTypes {
		if t != "namespace" && t != "table" && t != "view" {
			return q, badRequest("Invalid object-types entry %q: namespace, table or view", t)
		}
	}
	for _, name := range req.CatalogObjectsByName {
		if len(name) == 0 {
			return q, badRequest("Invalid catalog-objects-by-name entry: an empty identifier")
		}
	}
	if len(req.CustomFilters) > 0 {
		keys := make([]string, 0, len(req.CustomFilters))
		for k := range req.CustomFilters {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return q, badRequest("Unsupported custom-filters %s: floe defines none", strings.Join(keys, ", "))
	}
	q.Allow = func(_ context.Context, ev *changefeed.Event) (bool, error) { return req.matches(ev), nil }
	return q, nil
}

// matches applies the proposal's filters to one event of the feed.
func (req *queryEventsRequest) matches(ev *changefeed.Event) bool {
	if ev.Content == nil {
		return false
	}
	if !req.decodedSinceTimestamp.IsZero() && ev.Time.Before(req.decodedSinceTimestamp) {
		return false
	}
	op, kind := operationType(ev)
	if op == "" {
		return false
	}
	if len(req.OperationTypes) > 0 && !slices.Contains(req.OperationTypes, op) {
		return false
	}
	if len(req.ObjectTypes) > 0 && !slices.Contains(req.ObjectTypes, kind) {
		return false
	}
	if len(req.CatalogObjectsByUUID) > 0 {
		ic := ev.Content.Iceberg
		if ic == nil || !slices.ContainsFunc(req.CatalogObjectsByUUID, func(u string) bool { return strings.EqualFold(u, ic.UUID) }) {
			return false
		}
	}
	if len(req.CatalogObjectsByName) > 0 {
		paths := [][]string{ev.Content.Key}
		if ev.Content.PreviousKey != nil {
			paths = append(paths, ev.Content.PreviousKey)
		}
		matched := false
		for _, want := range req.CatalogObjectsByName {
			for _, p := range paths {
				// The entry's levels equal the object's path or are a
				// leading prefix of it, level by level.
				if len(want) <= len(p) && slices.Equal(want, p[:len(want)]) {
					matched = true
				}
			}
		}
		if !matched {
			return false
		}
	}
	return true
}

// operationType is the proposal's operation type of a feed event and the
// kind of object it is about ("" for an event without one).
func operationType(ev *changefeed.Event) (op, kind string) {
	switch ev.Type {
	case changefeed.NamespaceCreated:
		return opCreateNamespace, "namespace"
	case changefeed.NamespaceUpdated:
		return opUpdateNamespaceProps, "namespace"
	case changefeed.NamespaceDropped:
		return opDropNamespace, "namespace"
	case changefeed.TableCreated:
		if ic := ev.Content.Iceberg; ic != nil && ic.Operation == "register" {
			return opRegisterTable, "table"
		}
		return opCreateTable, "table"
	case changefeed.TableUpdated:
		return opUpdateTable, "table"
	case changefeed.TableRenamed:
		return opRenameTable, "table"
	case changefeed.TableDropped:
		return opDropTable, "table"
	case changefeed.ViewCreated:
		return opCreateView, "view"
	case changefeed.ViewUpdated:
		return opUpdateView, "view"
	case changefeed.ViewRenamed:
		return opRenameView, "view"
	case changefeed.ViewDropped:
		return opDropView, "view"
	}
	return "", ""
}

// toIcebergEvent maps one feed event to the proposal's Event. The request
// is the commit that made the change (the events of one commit share it,
// and the count says how many it made); the actor is the principal.
func (a *api) toIcebergEvent(ctx context.Context, ev *changefeed.Event) (icebergEvent, bool) {
	op, _ := operationType(ev)
	if op == "" {
		return icebergEvent{}, false
	}
	out := icebergEvent{
		EventID:           ev.ID.String(),
		RequestID:         ev.Commit,
		RequestEventCount: max(ev.Content.Count, 1),
		TimestampMs:       ev.Time.UnixMilli(),
		Operation:         map[string]any{"operation-type": op},
	}
	if ev.Principal != "" {
		out.Actor = map[string]string{"id": ev.Principal}
	}
	c, o := ev.Content, out.Operation
	ic := c.Iceberg
	if ic == nil {
		ic = &changefeed.IcebergChange{}
	}
	switch op {
	case opCreateNamespace:
		o["namespace"] = c.Key
		o["properties"] = orEmpty(c.Properties)
	case opUpdateNamespaceProps:
		o["namespace"] = c.Key
		o["updated"] = orNone(c.UpdatedProperties)
		o["removed"] = orNone(c.RemovedProperties)
	case opDropNamespace:
		o["namespace"] = c.Key
	case opCreateTable, opRegisterTable, opUpdateTable:
		o["identifier"] = tableIdentifier(c.Key)
		o["table-uuid"] = ic.UUID
		o["updates"] = a.tableEventUpdates(ctx, ic, op != opUpdateTable)
	case opDropTable:
		o["identifier"] = tableIdentifier(c.Key)
		o["table-uuid"] = ic.UUID
	case opRenameTable, opRenameView:
		o["source"] = tableIdentifier(c.PreviousKey)
		o["destination"] = tableIdentifier(c.Key)
		if op == opRenameTable {
			o["table-uuid"] = ic.UUID
		} else {
			o["view-uuid"] = ic.UUID
		}
	case opCreateView, opUpdateView:
		o["identifier"] = tableIdentifier(c.Key)
		o["view-uuid"] = ic.UUID
		o["updates"] = a.viewEventUpdates(ctx, ic, op == opCreateView)
	case opDropView:
		o["identifier"] = tableIdentifier(c.Key)
		o["view-uuid"] = ic.UUID
	}
	return out, true
}

// tableIdentifier is the spec's TableIdentifier of a key.
func tableIdentifier(key []string) map[string]any {
	if len(key) == 0 {
		return map[string]any{"namespace": []string{}, "name": ""}
	}
	return map[string]any{"namespace": orNone(key[:len(key)-1]), "name": key[len(key)-1]}
}

// tableEntryUpdates are the TableUpdates a change shows when its metadata
// files cannot be read (eventupdates.go): the changes of what the catalog
// entry records (uuid, current schema, default spec and sort order, the
// main branch's snapshot), never more than happened; a change of anything
// else (properties, a new schema that is not current) shows as an
// update-table with no updates.
func tableEntryUpdates(ic *changefeed.IcebergChange, created bool) []map[string]any {
	out := []map[string]any{}
	if created && ic.UUID != "" {
		out = append(out, map[string]any{"action": "assign-uuid", "uuid": ic.UUID})
	}
	if ic.SchemaID != nil {
		out = append(out, map[string]any{"action": "set-current-schema", "schema-id": *ic.SchemaID})
	}
	if ic.SpecID != nil {
		out = append(out, map[string]any{"action": "set-default-spec", "spec-id": *ic.SpecID})
	}
	if ic.SortOrderID != nil {
		out = append(out, map[string]any{"action": "set-default-sort-order", "sort-order-id": *ic.SortOrderID})
	}
	if ic.SnapshotID != ic.PreviousSnapshotID {
		if ic.SnapshotID > 0 {
			out = append(out, map[string]any{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": ic.SnapshotID})
		} else if !created {
			out = append(out, map[string]any{"action": "remove-snapshot-ref", "ref-name": "main"})
		}
	}
	return out
}

// viewEntryUpdates are the ViewUpdates a change shows when its metadata
// files cannot be read, as tableEntryUpdates.
func viewEntryUpdates(ic *changefeed.IcebergChange, created bool) []map[string]any {
	out := []map[string]any{}
	if created && ic.UUID != "" {
		out = append(out, map[string]any{"action": "assign-uuid", "uuid": ic.UUID})
	}
	if ic.VersionID != nil {
		out = append(out, map[string]any{"action": "set-current-view-version", "view-version-id": *ic.VersionID})
	}
	return out
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func orNone(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// eventsRoute is the events endpoint, served when Deps.Events is set.
var eventsRoute = route{http.MethodPost, "/v1/{prefix}/events", (*api).queryEvents, noKey}

// endpoints is what /v1/config advertises: Endpoints, and the events
// endpoint when it is served.
func (a *api) endpoints() []string {
	out := Endpoints()
	if a.events != nil {
		out = append(out, eventsRoute.method+" "+eventsRoute.template)
	}
	return out
}
