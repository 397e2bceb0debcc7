package icebergrest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// loadTableResult is the spec's LoadTableResult of a staged create, whose
// MetadataLocation is null; every other one is a metadataReply.
type loadTableResult struct {
	MetadataLocation *string           `json:"metadata-location"`
	Metadata         json.RawMessage   `json:"metadata"`
	Config           map[string]string `json:"config"`
}

// tableContent is the version-store value of a table whose current
// metadata file is l.
func tableContent(id string, l *loaded) *versionstore.Content {
	m := l.meta
	snap := int64(-1)
	if cs := m.CurrentSnapshot(); cs != nil {
		snap = cs.SnapshotID
	}
	schemaID := int32(-1)
	if s := m.CurrentSchema(); s != nil {
		schemaID = int32(s.ID)
	}
	return &versionstore.Content{
		Type:               versionstore.IcebergTable,
		ID:                 id,
		MetadataLocation:   l.location,
		UUID:               m.TableUUID().String(),
		SnapshotID:         snap,
		SchemaID:           schemaID,
		SpecID:             int32(m.DefaultPartitionSpec()),
		SortOrderID:        int32(m.DefaultSortOrder()),
		LastSequenceNumber: m.LastSequenceNumber(),
	}
}

// loadTableAt returns a table's content and current metadata at a commit,
// or a 404 if the key is absent or not a table. A missing namespace is a
// missing table too, as the spec's clients expect.
func (a *api) loadTableAt(ctx context.Context, at versionstore.Hash, id identifier) (*versionstore.Content, *loaded, error) {
	c, err := a.lookup(ctx, at, id.key())
	if err != nil {
		return nil, nil, err
	}
	if c == nil || c.Type != versionstore.IcebergTable {
		return nil, nil, noSuchTable(id)
	}
	l, err := a.readMetadata(ctx, c.MetadataLocation)
	if err != nil {
		return nil, nil, internalError(err)
	}
	return c, l, nil
}

// tableClash is the 409 for creating a table (or renaming one) onto an
// existing key.
func tableClash(id identifier, existing versionstore.ContentType) error {
	switch existing {
	case versionstore.IcebergView:
		return newError(http.StatusConflict, typeAlreadyExists, "View with same name already exists: %s", id)
	case versionstore.Namespace:
		return newError(http.StatusConflict, typeAlreadyExists, "Cannot create table %s: a namespace with the same name exists", id)
	}
	return newError(http.StatusConflict, typeAlreadyExists, "Table already exists: %s", id)
}

// etag identifies one representation of a table: its metadata file and the
// snapshots mode, so "all" and "refs" answers never share a tag.
func etag(metadataLocation, mode string) string {
	sum := sha256.Sum256([]byte(metadataLocation + "\x00snapshots=" + mode))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// etagMatches implements If-None-Match: a list of tags, weak or strong, or
// "*".
func etagMatches(header, tag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == tag {
			return true
		}
	}
	return false
}

func (a *api) listTables(w http.ResponseWriter, r *http.Request) error {
	return a.listEntities(w, r, versionstore.IcebergTable)
}

// listEntities lists the tables or views of a namespace.
func (a *api) listEntities(w http.ResponseWriter, r *http.Request, typ versionstore.ContentType) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	ns, err := namespaceVar(r)
	if err != nil {
		return err
	}
	p, err := parsePaging(r)
	if err != nil {
		return err
	}
	if _, err := a.requireNamespace(r.Context(), c.hash, ns); err != nil {
		return err
	}
	children, more, err := a.listChildren(r.Context(), c.hash, ns, typ, p)
	if err != nil {
		return err
	}
	resp := struct {
		Identifiers   []identifier `json:"identifiers"`
		NextPageToken string       `json:"next-page-token,omitempty"`
	}{Identifiers: make([]identifier, 0, len(children))}
	for _, ch := range children {
		resp.Identifiers = append(resp.Identifiers, identifier{Namespace: ns, Name: ch.name})
	}
	if more {
		resp.NextPageToken = nextToken(children[len(children)-1].name)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// createTableRequest is the spec's CreateTableRequest. The spec and the
// write order arrive unbound: their source ids refer to the request schema.
type createTableRequest struct {
	Name          string                        `json:"name"`
	Location      string                        `json:"location"`
	Schema        *iceberg.Schema               `json:"schema"`
	PartitionSpec *iceberg.UnboundPartitionSpec `json:"partition-spec"`
	WriteOrder    *table.UnboundSortOrder       `json:"write-order"`
	StageCreate   bool                          `json:"stage-create"`
	Properties    map[string]string             `json:"properties"`
}

func (a *api) createTable(w http.ResponseWriter, r *http.Request) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	ns, err := namespaceVar(r)
	if err != nil {
		return err
	}
	var req createTableRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	id := identifier{Namespace: ns, Name: req.Name}
	if err := id.validate(); err != nil {
		return err
	}
	if req.Schema == nil {
		return badRequest("cannot create table %s: the schema is missing", id)
	}
	if err := validateCreateTable(&req); err != nil {
		return err
	}
	branch, err := a.writeBranch(r, c, policy.ActionCreateTable, content(id.key(), policy.TypeTable, policy.ChangeCreate))
	if err != nil {
		return err
	}
	tableUUID := uuid.New()
	loc := req.Location
	if loc == "" {
		loc = c.wh.defaultTableLocation(id, tableUUID.String())
	} else if loc, err = c.wh.requireInside("table location", loc); err != nil {
		return err
	}
	spec := iceberg.UnpartitionedSpec
	if req.PartitionSpec != nil {
		s := req.PartitionSpec.PartitionSpec
		spec = &s
	}
	order := table.UnsortedSortOrder
	if req.WriteOrder != nil {
		order = req.WriteOrder.SortOrder
	}
	meta, err := table.NewMetadataWithUUID(req.Schema, spec, order, loc, req.Properties, tableUUID)
	if err != nil {
		return illegalArgument("cannot create table %s: %v", id, err)
	}
	if err := validateTableLayouts(nil, meta); err != nil {
		return err
	}
	if p := meta.Properties()[propMetadataPath]; p != "" {
		if _, err := c.wh.requireInside(propMetadataPath, p); err != nil {
			return err
		}
	}

	ctx := r.Context()
	head, err := a.head(branch)
	if err != nil {
		return err
	}
	if _, err := a.requireNamespace(ctx, head, ns); err != nil {
		return err
	}
	if existing, err := a.lookup(ctx, head, id.key()); err != nil {
		return err
	} else if existing != nil {
		return tableClash(id, existing.Type)
	}

	if req.StageCreate {
		// Nothing is written: the client commits the table later with
		// assert-create and the full list of updates.
		raw, err := json.Marshal(meta)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, loadTableResult{Metadata: raw, Config: c.wh.clientConfig})
		return nil
	}

	metaLoc, err := a.newMetadataLocation(c.wh, meta, "")
	if err != nil {
		return err
	}
	file, err := a.writeMetadata(ctx, metaLoc, meta)
	if err != nil {
		return internalError(err)
	}
	content := tableContent("", file)
	rp := c.wh.tableReply(file.location, file.body).withETag(etag(file.location, "all"))
	_, err = a.commit(ctx, w, r, branch, head, []versionstore.Operation{{Kind: versionstore.OpPut, Key: id.key(), Content: content}},
		change{op: "create", message: "iceberg: create table " + id.String(),
			props: map[string]string{propTable: id.String(), propMetadataLocation: file.location}}, rp)
	if err != nil {
		return a.createFailed(ctx, id, file.location, err)
	}
	rp.write(w)
	return nil
}

// createFailed turns a failed commit of a new key into the client's error,
// deleting the metadata file written for it when the commit surely did not
// happen.
func (a *api) createFailed(ctx context.Context, id identifier, fileLoc string, err error) error {
	if ce := conflictOf(err); ce != nil {
		a.removeFile(ctx, fileLoc)
		if cf := findConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace); cf != nil {
			return noSuchNamespace(cf.Key)
		}
		return newError(http.StatusConflict, typeAlreadyExists, "Table already exists: %s", id)
	}
	if definiteStoreFailure(err) {
		a.removeFile(ctx, fileLoc)
		return err
	}
	return commitStateUnknown(err)
}

// definiteStoreFailure reports store errors that prove nothing was
// committed.
func definiteStoreFailure(err error) bool {
	for _, e := range []error{versionstore.ErrInvalid, versionstore.ErrNotABranch, versionstore.ErrReferenceNotFound,
		versionstore.ErrClosed, versionstore.ErrForbidden, versionstore.ErrReferenceConflict} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// commitStateUnknown is the 500 for a commit whose outcome the store could
// not report: the client must check before retrying.
func commitStateUnknown(err error) error {
	return &apiError{status: http.StatusInternalServerError, typ: typeCommitStateUnknown,
		msg: "the catalog commit may or may not have happened: " + err.Error(), cause: err}
}

func (a *api) loadTable(w http.ResponseWriter, r *http.Request) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	id, err := identVar(r, "table")
	if err != nil {
		return err
	}
	mode := r.URL.Query().Get("snapshots")
	switch mode {
	case "":
		mode = "all"
	case "all", "refs":
	default:
		return badRequest("snapshots must be all or refs, not %q", mode)
	}
	_, l, err := a.loadTableAt(r.Context(), c.hash, id)
	if err != nil {
		return err
	}
	tag := etag(l.location, mode)
	w.Header().Set("ETag", tag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, tag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	body := l.body
	if mode == "refs" {
		// refSnapshotsOnly encodes with encoding/json: compact and escaped,
		// as body is.
		if body, err = l.refsOnly(); err != nil {
			return internalError(err)
		}
	}
	c.wh.tableReply(l.location, body).write(w)
	return nil
}

// refSnapshotsOnly returns the metadata JSON with only the snapshots that
// are the head of a branch or tag, as the reference server's
// suppressHistoricalSnapshots does: no ancestors, nothing else rewritten.
func refSnapshotsOnly(l *loaded) (json.RawMessage, error) {
	keep := map[int64]bool{}
	for _, ref := range l.meta.Refs() {
		keep[ref.SnapshotID] = true
	}
	if cs := l.meta.CurrentSnapshot(); cs != nil {
		keep[cs.SnapshotID] = true
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(l.raw, &doc); err != nil {
		return nil, err
	}
	var snaps []json.RawMessage
	if raw, ok := doc["snapshots"]; ok {
		if err := json.Unmarshal(raw, &snaps); err != nil {
			return nil, err
		}
	}
	kept := make([]json.RawMessage, 0, len(keep))
	for _, s := range snaps {
		var head struct {
			ID int64 `json:"snapshot-id"`
		}
		if err := json.Unmarshal(s, &head); err != nil {
			return nil, err
		}
		if keep[head.ID] {
			kept = append(kept, s)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	doc["snapshots"] = b
	return json.Marshal(doc)
}

func (a *api) tableExists(w http.ResponseWriter, r *http.Request) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	id, err := identVar(r, "table")
	if err != nil {
		return err
	}
	content, err := a.lookup(r.Context(), c.hash, id.key())
	if err != nil {
		return err
	}
	if content == nil || content.Type != versionstore.IcebergTable {
		return noSuchTable(id)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) dropTable(w http.ResponseWriter, r *http.Request) error {
	purge, err := queryBool(r, "purgeRequested")
	if err != nil {
		return err
	}
	return a.removeTable(w, r, purge, false)
}

func (a *api) unregisterTable(w http.ResponseWriter, r *http.Request) error {
	return a.removeTable(w, r, false, true)
}

// removeTable deletes a table's key from the branch: drop (204) or
// unregister (the table's metadata location and metadata). No file is
// ever deleted: other branches, tags and older commits may still
// reference the table's files, so purgeRequested is recorded and logged
// but not acted on.
func (a *api) removeTable(w http.ResponseWriter, r *http.Request, purge, unregister bool) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	id, err := identVar(r, "table")
	if err != nil {
		return err
	}
	branch, err := a.writeBranch(r, c, policy.ActionDropTable, content(id.key(), policy.TypeTable, policy.ChangeDelete))
	if err != nil {
		return err
	}
	ch := change{op: "drop", message: "iceberg: drop table " + id.String(), props: map[string]string{propTable: id.String()}}
	if purge {
		ch.message += " (purge requested; no files deleted)"
		ch.props[propPurgeRequested] = "true"
	}
	if unregister {
		ch = change{op: "unregister", message: "iceberg: unregister table " + id.String(), props: map[string]string{propTable: id.String()}}
	}
	ctx := r.Context()
	var (
		file *loaded
		rp   *reply
	)
	err = a.retry(ctx, ch.op, func(int) (bool, error) {
		head, err := a.head(branch)
		if err != nil {
			return false, err
		}
		content, l, err := a.loadTableAt(ctx, head, id)
		if err != nil {
			return false, err
		}
		file = l
		ch.props[propMetadataLocation] = content.MetadataLocation
		rp = noContent()
		if unregister {
			rp = metadataReply(l.location, l.body, false)
		}
		_, err = a.commit(ctx, w, r, branch, head, []versionstore.Operation{{Kind: versionstore.OpDelete, Key: id.key()}}, ch, rp)
		ce := conflictOf(err)
		switch {
		case ce == nil:
			return false, err
		case findConflict(ce, versionstore.ConflictKeyDoesNotExist) != nil:
			return false, noSuchTable(id)
		}
		return true, commitFailed("Table %s changed concurrently: %v", id, ce)
	})
	if err != nil {
		return err
	}
	if purge {
		a.logger.InfoContext(ctx, "table dropped with purgeRequested=true: no files were deleted, other branches and commits may still reference them",
			"table", id.String(), "branch", branch, "metadata_location", file.location, "request_id", requestID(w))
	}
	rp.write(w)
	return nil
}

func (a *api) registerTable(w http.ResponseWriter, r *http.Request) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	ns, err := namespaceVar(r)
	if err != nil {
		return err
	}
	var req struct {
		Name             string `json:"name"`
		MetadataLocation string `json:"metadata-location"`
		Overwrite        bool   `json:"overwrite"`
	}
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	id := identifier{Namespace: ns, Name: req.Name}
	if err := id.validate(); err != nil {
		return err
	}
	registered := content(id.key(), policy.TypeTable, policy.ChangeCreate)
	if req.Overwrite {
		registered.Change = policy.ChangeUpdate
	}
	branch, err := a.writeBranch(r, c, policy.ActionCreateTable, registered)
	if err != nil {
		return err
	}
	metaLoc, err := c.wh.requireInside("metadata-location", req.MetadataLocation)
	if err != nil {
		return err
	}
	ctx := r.Context()
	file, err := a.readMetadata(ctx, metaLoc)
	if err != nil {
		return badRequest("cannot register table %s: %v", id, err)
	}
	if _, err := c.wh.requireInside("table location", file.meta.Location()); err != nil {
		return err
	}
	rp := c.wh.tableReply(file.location, file.body).withETag(etag(file.location, "all"))
	err = a.retry(ctx, "register", func(int) (bool, error) {
		head, err := a.head(branch)
		if err != nil {
			return false, err
		}
		if _, err := a.requireNamespace(ctx, head, ns); err != nil {
			return false, err
		}
		existing, err := a.lookup(ctx, head, id.key())
		if err != nil {
			return false, err
		}
		contentID := ""
		if existing != nil {
			if existing.Type != versionstore.IcebergTable || !req.Overwrite {
				return false, tableClash(id, existing.Type)
			}
			contentID = existing.ID
		}
		_, err = a.commit(ctx, w, r, branch, head,
			[]versionstore.Operation{{Kind: versionstore.OpPut, Key: id.key(), Content: tableContent(contentID, file)}},
			change{op: "register", message: "iceberg: register table " + id.String(),
				props: map[string]string{propTable: id.String(), propMetadataLocation: file.location}}, rp)
		ce := conflictOf(err)
		switch {
		case ce == nil:
			return false, err
		case findConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace) != nil:
			return false, noSuchNamespace(ns)
		case existing == nil:
			return false, newError(http.StatusConflict, typeAlreadyExists, "Table already exists: %s", id)
		}
		return true, commitFailed("Table %s changed concurrently: %v", id, ce)
	})
	if err != nil {
		return err
	}
	rp.write(w)
	return nil
}

func (a *api) loadCredentials(w http.ResponseWriter, r *http.Request) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	id, err := identVar(r, "table")
	if err != nil {
		return err
	}
	content, err := a.lookup(r.Context(), c.hash, id.key())
	if err != nil {
		return err
	}
	if content == nil || content.Type != versionstore.IcebergTable {
		return noSuchTable(id)
	}
	// file:// warehouses need no credentials.
	writeJSON(w, http.StatusOK, struct {
		StorageCredentials []struct{} `json:"storage-credentials"`
	}{StorageCredentials: []struct{}{}})
	return nil
}

// reportMetrics accepts scan and commit reports. They are validated and
// logged at debug level; floe keeps no per-table metrics of its own yet.
func (a *api) reportMetrics(w http.ResponseWriter, r *http.Request) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	// A POST that only reads: it tells whether the table exists.
	if err := a.authorizeRead(r, c); err != nil {
		return err
	}
	id, err := identVar(r, "table")
	if err != nil {
		return err
	}
	var req struct {
		ReportType string `json:"report-type"`
		SnapshotID *int64 `json:"snapshot-id"`
	}
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	switch req.ReportType {
	case "scan-report", "commit-report":
	case "":
		return badRequest("metrics report has no report-type")
	default:
		return badRequest("unknown metrics report-type %q: expected scan-report or commit-report", req.ReportType)
	}
	content, err := a.lookup(r.Context(), c.hash, id.key())
	if err != nil {
		return err
	}
	if content == nil || content.Type != versionstore.IcebergTable {
		return noSuchTable(id)
	}
	a.logger.DebugContext(r.Context(), "iceberg metrics report", "table", id.String(), "report_type", req.ReportType, "request_id", requestID(w))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) renameTable(w http.ResponseWriter, r *http.Request) error {
	return a.renameEntity(w, r, versionstore.IcebergTable)
}

// renameEntity renames a table or view in one atomic commit: delete the
// old key, put the new one with the same content id, so the entity keeps
// its identity (and history) across the rename.
func (a *api) renameEntity(w http.ResponseWriter, r *http.Request, typ versionstore.ContentType) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	var req struct {
		Source      *identifier `json:"source"`
		Destination *identifier `json:"destination"`
	}
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.Source == nil || req.Destination == nil {
		return badRequest("a rename needs a source and a destination")
	}
	src, dst := *req.Source, *req.Destination
	if err := src.validate(); err != nil {
		return err
	}
	if err := dst.validate(); err != nil {
		return err
	}
	action, ptype := policy.ActionRenameTable, policy.TypeTable
	if typ == versionstore.IcebergView {
		action, ptype = policy.ActionRenameView, policy.TypeView
	}
	branch, err := a.writeBranch(r, c, action, content(src.key(), ptype, policy.ChangeDelete), content(dst.key(), ptype, policy.ChangeCreate))
	if err != nil {
		return err
	}
	noSuch, clash, op, noun := noSuchTable, tableClash, "rename", "table"
	if typ == versionstore.IcebergView {
		noSuch, clash, op, noun = noSuchView, viewClash, "rename-view", "view"
	}
	if slices.Equal(src.key(), dst.key()) {
		return clash(dst, typ)
	}
	ctx := r.Context()
	return a.retry(ctx, op, func(int) (bool, error) {
		head, err := a.head(branch)
		if err != nil {
			return false, err
		}
		cur, err := a.lookup(ctx, head, src.key())
		if err != nil {
			return false, err
		}
		if cur == nil || cur.Type != typ {
			return false, noSuch(src)
		}
		if _, err := a.requireNamespace(ctx, head, dst.Namespace); err != nil {
			return false, err
		}
		if existing, err := a.lookup(ctx, head, dst.key()); err != nil {
			return false, err
		} else if existing != nil {
			return false, renameClash(src, dst, noun, existing.Type, clash)
		}
		_, err = a.commit(ctx, w, r, branch, head, []versionstore.Operation{
			{Kind: versionstore.OpDelete, Key: src.key()},
			{Kind: versionstore.OpPut, Key: dst.key(), Content: cur},
		}, change{op: op, message: fmt.Sprintf("iceberg: rename %s %s to %s", noun, src, dst),
			props: map[string]string{propRenamedFrom: src.String(), propTableOrView(typ): dst.String()}}, noContent())
		ce := conflictOf(err)
		switch {
		case ce == nil:
			if err == nil {
				noContent().write(w)
			}
			return false, err
		case findConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace) != nil:
			return false, noSuchNamespace(dst.Namespace)
		}
		for _, cf := range ce.Conflicts {
			if slices.Equal(cf.Key, dst.key()) {
				return false, clash(dst, versionstore.IcebergTable)
			}
		}
		return true, commitFailed("Cannot rename %s %s: it changed concurrently: %v", noun, src, ce)
	})
}

func renameClash(src, dst identifier, noun string, existing versionstore.ContentType, clash func(identifier, versionstore.ContentType) error) error {
	if noun == "view" && existing == versionstore.IcebergView {
		return newError(http.StatusConflict, typeAlreadyExists, "Cannot rename %s to %s. View already exists", src, dst)
	}
	return clash(dst, existing)
}

func propTableOrView(typ versionstore.ContentType) string {
	if typ == versionstore.IcebergView {
		return propView
	}
	return propTable
}
