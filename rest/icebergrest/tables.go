package icebergrest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// loadTableResult is the spec's LoadTableResult of a staged create, whose
// MetadataLocation is null; every other one is a metadataReply.
type loadTableResult struct {
	MetadataLocation   *string             `json:"metadata-location"`
	Metadata           json.RawMessage     `json:"metadata"`
	Config             map[string]string   `json:"config"`
	StorageCredentials []storageCredential `json:"storage-credentials,omitempty"`
}

// loadTableAt returns a table's content and current metadata file at a
// commit, or a 404 if the key is absent or not a table.
func (a *api) loadTableAt(ctx context.Context, at versionstore.Hash, id identifier) (*versionstore.Content, *icebergtable.MetadataFile, error) {
	return loadEntityAt(ctx, a, at, id, tableKind, a.loadTableMetadata)
}

// etag identifies one representation of a table: its metadata file and the
// snapshots mode, so "all" and "refs" answers never share a tag. The
// "shared-files" mark keeps tags of answers served before floe set the
// shared-file properties on load (sharedfiles.go) from matching now.
func etag(metadataLocation, mode string) string {
	sum := sha256.Sum256([]byte(metadataLocation + "\x00snapshots=" + mode + "\x00shared-files"))
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
	return a.listEntities(w, r, tableKind)
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
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return err
	}
	var req createTableRequest
	id, err := decodeNamedBody(r, &req, &req.Name)
	if err != nil {
		return err
	}
	if req.Schema == nil {
		return badRequest("cannot create table %s: the schema is missing", id)
	}
	if err := validateCreateTable(&req); err != nil {
		return err
	}
	if err := checkCreateProperties(id, req.Properties); err != nil {
		return err
	}
	branch, tableUUID, loc, err := a.placeNew(r, wr, id, tableKind, req.Location)
	if err != nil {
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
	meta, err := table.NewMetadataWithUUID(req.Schema, spec, order, loc, withSharedFileProperties(req.Properties), tableUUID)
	if err != nil {
		return illegalArgument("cannot create table %s: %v", id, err)
	}
	if err := validateTableLayouts(nil, meta); err != nil {
		return err
	}
	if p := icebergtable.PropertiesOf(meta)[icebergtable.PropMetadataPath]; p != "" {
		if _, err := wr.wh.requireInside(icebergtable.PropMetadataPath, p); err != nil {
			return err
		}
	}

	// Vended credentials are decided (and may be refused) before
	// anything is written.
	access, err := a.tableAccess(w, r, wr, id, meta)
	if err != nil {
		return err
	}
	ctx := r.Context()
	head, err := a.newEntityHead(ctx, branch, id, tableKind)
	if err != nil {
		return err
	}
	if req.StageCreate {
		// Nothing is written: the client commits the table later with
		// assert-create and the full list of updates.
		raw, err := json.Marshal(meta)
		if err != nil {
			return err
		}
		var cfg map[string]string
		if err := json.Unmarshal(access.config, &cfg); err != nil {
			return internalError(err)
		}
		writeJSON(w, http.StatusOK, loadTableResult{Metadata: raw, Config: cfg, StorageCredentials: access.credentials})
		return nil
	}

	file, err := a.writeNextTableMetadata(ctx, wr.wh, meta, nil)
	if err != nil {
		return err
	}
	return a.commitCreate(ctx, w, r, branch, head, id, tableKind, file.Location, icebergtable.TableContent("", file),
		loadTableReply(access, file.Location, file.JSON).withETag(etag(file.Location, "all")))
}

// commitStateUnknown is the 500 for a commit whose outcome the store could
// not report: the client must check before retrying.
func commitStateUnknown(err error) error {
	return &apiError{status: http.StatusInternalServerError, typ: typeCommitStateUnknown,
		msg: "the catalog commit may or may not have happened: " + err.Error(), cause: err}
}

func (a *api) loadTable(w http.ResponseWriter, r *http.Request) error {
	wr, id, err := a.entityOf(r, tableKind)
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
	_, file, err := a.loadTableAt(r.Context(), wr.hash, id)
	if err != nil {
		return err
	}
	tag := etag(file.Location, mode)
	w.Header().Set("ETag", tag)
	// An answer with vended credentials is never Not Modified: the
	// client's copy may hold credentials that have expired.
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, tag) && !wr.vends(r) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	// Both forms carry the shared-file properties (sharedfiles.go), also
	// for a table whose file lacks them; encoded with encoding/json:
	// compact and escaped, as JSON is.
	var body []byte
	if mode == "refs" {
		body, err = file.RefSnapshotsOnly()
	} else {
		body, err = file.ServedJSON()
	}
	if err != nil {
		return internalError(err)
	}
	access, err := a.tableAccess(w, r, wr, id, file.Metadata)
	if err != nil {
		return err
	}
	loadTableReply(access, file.Location, body).write(w, &a.joins)
	return nil
}

func (a *api) tableExists(w http.ResponseWriter, r *http.Request) error {
	return a.entityExists(w, r, tableKind)
}

func (a *api) dropTable(w http.ResponseWriter, r *http.Request) error {
	purge, err := queryBool(r, "purgeRequested")
	if err != nil {
		return err
	}
	var id identifier
	describe := func(i identifier) commitDescription {
		id = i
		desc := commitDescription{op: "drop", message: "iceberg: drop table " + id.String(), props: map[string]string{icebergtable.PropTable: id.String()}}
		if purge {
			desc.message += " (purge requested; no files deleted)"
			desc.props[icebergtable.PropPurgeRequested] = "true"
		}
		return desc
	}
	// The metadata file is read, as loadTable would: a table whose
	// metadata cannot be read is not dropped.
	removed, branch, err := a.removeEntity(w, r, tableKind, describe, func(ctx context.Context, c *versionstore.Content) (*reply, error) {
		if _, err := a.readTableMetadata(ctx, c.MetadataLocation); err != nil {
			return nil, internalError(err)
		}
		return noContent(), nil
	})
	if err != nil {
		return err
	}
	// No file is deleted: other branches, tags and older commits may
	// still reference the table's files, so purgeRequested is recorded
	// and logged but not acted on.
	if purge {
		a.logger.InfoContext(r.Context(), "table dropped with purgeRequested=true: no files were deleted, other branches and commits may still reference them",
			"table", id.String(), "branch", branch, "metadata_location", removed.MetadataLocation, "request_id", requestID(w))
	}
	return nil
}

// unregisterTable removes the table from the branch and answers with its
// metadata location and metadata.
func (a *api) unregisterTable(w http.ResponseWriter, r *http.Request) error {
	describe := func(id identifier) commitDescription {
		return commitDescription{op: "unregister", message: "iceberg: unregister table " + id.String(), props: map[string]string{icebergtable.PropTable: id.String()}}
	}
	_, _, err := a.removeEntity(w, r, tableKind, describe, func(ctx context.Context, c *versionstore.Content) (*reply, error) {
		file, err := a.readTableMetadata(ctx, c.MetadataLocation)
		if err != nil {
			return nil, internalError(err)
		}
		body, err := file.ServedJSON()
		if err != nil {
			return nil, internalError(err)
		}
		return metadataReply(file.Location, body, nil), nil
	})
	return err
}

func (a *api) registerTable(w http.ResponseWriter, r *http.Request) error {
	return a.registerEntity(w, r, tableKind, func(ctx context.Context, wr *warehouseRef, id identifier, loc string) (registration, error) {
		file, err := a.readTableMetadata(ctx, loc)
		if err != nil {
			return registration{}, err
		}
		// The registered file is kept as it is (the table's metadata
		// location is the client's), whatever its gc.enabled says: the
		// answer and every load serve the shared-file properties, and the
		// next commit writes them.
		body, err := file.ServedJSON()
		if err != nil {
			return registration{}, internalError(err)
		}
		access, err := a.tableAccess(w, r, wr, id, file.Metadata)
		if err != nil {
			return registration{}, err
		}
		return registration{
			location:       file.Location,
			entityLocation: file.Metadata.Location(),
			content:        func(contentID string) *versionstore.Content { return icebergtable.TableContent(contentID, file) },
			// The config of a loadTable answer, signing or vended
			// credentials included: an engine writes to the table it
			// registered with this answer.
			reply: loadTableReply(access, file.Location, body).withETag(etag(file.Location, "all")),
		}, nil
	})
}

// reportMetrics accepts scan and commit reports. They are validated and
// logged at debug level; floe keeps no per-table metrics of its own yet.
func (a *api) reportMetrics(w http.ResponseWriter, r *http.Request) error {
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return err
	}
	// A POST that only reads: it tells whether the table exists.
	if err := a.authorizeRead(r, wr); err != nil {
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
	if _, err := a.lookupEntity(r.Context(), wr.hash, id, tableKind); err != nil {
		return err
	}
	a.logger.DebugContext(r.Context(), "iceberg metrics report", "table", id.String(), "report_type", req.ReportType, "request_id", requestID(w))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) renameTable(w http.ResponseWriter, r *http.Request) error {
	return a.renameEntity(w, r, tableKind)
}
