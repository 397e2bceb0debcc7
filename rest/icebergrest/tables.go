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

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/policy"
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
	return a.catalog.LoadTable(ctx, at, catalog.Identifier(id))
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
	create := catalog.TableCreate{ID: catalog.Identifier(id), Location: req.Location, Schema: req.Schema,
		Properties: req.Properties, Stage: req.StageCreate}
	if req.PartitionSpec != nil {
		create.PartitionSpec = &req.PartitionSpec.PartitionSpec
	}
	if req.WriteOrder != nil {
		create.WriteOrder = &req.WriteOrder.SortOrder
	}
	if err := create.Check(); err != nil {
		return err
	}
	branch, err := a.writeBranch(r, wr, tableKind.createAction, content(id.key(), tableKind.policyType, policy.ChangeCreate))
	if err != nil {
		return err
	}
	// Vended credentials are decided (and may be refused) before
	// anything is written.
	var access tableAccess
	create.Admit = func(meta table.Metadata) (err error) {
		access, err = a.tableAccess(w, r, wr, id, meta)
		return err
	}
	if req.StageCreate {
		// Nothing is written: the client commits the table later with
		// assert-create and the full list of updates.
		staged, err := a.catalog.CreateTable(r.Context(), catalog.Write{Warehouse: wr.wh.name, Branch: branch}, create)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(staged.StagedTable)
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
	_, err = a.write(w, r, wr, branch, func(done *catalog.Written) *reply {
		file := done.Table
		return loadTableReply(access, file.Location, file.JSON).withETag(etag(file.Location, "all"))
	}, func(ctx context.Context, cw catalog.Write) (*catalog.Written, error) {
		return a.catalog.CreateTable(ctx, cw, create)
	})
	return err
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
	var id catalog.Identifier
	done, branch, err := a.removeEntity(w, r, tableKind, func(*catalog.Written) *reply { return noContent() },
		func(ctx context.Context, cw catalog.Write, i catalog.Identifier) (*catalog.Written, error) {
			id = i
			return a.catalog.DropTable(ctx, cw, id, purge)
		})
	if err != nil {
		return err
	}
	// No file is deleted: other branches, tags and older commits may
	// still reference the table's files, so purgeRequested is recorded
	// and logged but not acted on.
	if purge {
		a.logger.InfoContext(r.Context(), "table dropped with purgeRequested=true: no files were deleted, other branches and commits may still reference them",
			"table", id.String(), "branch", branch, "metadata_location", done.Content.MetadataLocation, "request_id", requestID(w))
	}
	return nil
}

// unregisterTable removes the table from the branch and answers with its
// metadata location and metadata.
func (a *api) unregisterTable(w http.ResponseWriter, r *http.Request) error {
	_, _, err := a.removeEntity(w, r, tableKind, func(done *catalog.Written) *reply {
		return metadataReply(done.Table.Location, done.TableBody, nil)
	}, a.catalog.UnregisterTable)
	return err
}

func (a *api) registerTable(w http.ResponseWriter, r *http.Request) error {
	var access tableAccess
	return a.registerEntity(w, r, tableKind, func(done *catalog.Written) *reply {
		// The config of a loadTable answer, signing or vended
		// credentials included: an engine writes to the table it
		// registered with this answer.
		file := done.Table
		return loadTableReply(access, file.Location, done.TableBody).withETag(etag(file.Location, "all"))
	}, func(ctx context.Context, cw catalog.Write, wr *warehouseRef, id identifier, loc string, overwrite bool) (*catalog.Written, error) {
		return a.catalog.RegisterTable(ctx, cw, catalog.Identifier(id), loc, overwrite, func(file *icebergtable.MetadataFile) (err error) {
			access, err = a.tableAccess(w, r, wr, id, file.Metadata)
			return err
		})
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
	return a.renameEntity(w, r, tableKind, a.catalog.RenameTable)
}
