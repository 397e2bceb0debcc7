package icebergrest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/view"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// Views share the key space with tables and namespaces: a view and a table
// of the same name cannot both exist, and the errors say which one is in
// the way, in the words the Java view tests expect.

func viewClash(id identifier, existing versionstore.ContentType) error {
	switch existing {
	case versionstore.IcebergTable:
		return newError(http.StatusConflict, typeAlreadyExists, "Table with same name already exists: %s", id)
	case versionstore.Namespace:
		return newError(http.StatusConflict, typeAlreadyExists, "Cannot create view %s: a namespace with the same name exists", id)
	}
	return newError(http.StatusConflict, typeAlreadyExists, "View already exists: %s", id)
}

// loadedView is one view metadata file.
type loadedView struct {
	location string
	raw      []byte
	meta     view.Metadata
}

func (a *api) readViewMetadata(ctx context.Context, loc string) (*loadedView, error) {
	raw, err := readFile(ctx, loc)
	if err != nil {
		return nil, err
	}
	meta, err := view.ParseMetadataBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("parse view metadata file %s: %w", loc, err)
	}
	return &loadedView{location: loc, raw: raw, meta: meta}, nil
}

func (a *api) writeViewMetadata(ctx context.Context, loc string, meta view.Metadata) (*loadedView, error) {
	raw, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("encode view metadata for %s: %w", loc, err)
	}
	if err := writeFileSynced(ctx, loc, raw); err != nil {
		return nil, err
	}
	parsed, err := view.ParseMetadataBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("parse view metadata file %s: %w", loc, err)
	}
	return &loadedView{location: loc, raw: raw, meta: parsed}, nil
}

// newViewMetadataLocation names the next metadata file of a view, like
// newMetadataLocation does for tables.
func newViewMetadataLocation(wh *warehouse, meta view.Metadata, prev string) (string, error) {
	version := 0
	if prev != "" {
		if v := metadataVersion(prev); v >= 0 {
			version = v + 1
		} else {
			version = len(meta.Versions())
		}
	}
	loc := fmt.Sprintf("%s/metadata/%05d-%s.metadata.json", trimSlash(meta.Location()), version, uuid.NewString())
	return wh.requireInside("metadata location", loc)
}

func viewContent(id string, l *loadedView) *versionstore.Content {
	return &versionstore.Content{
		Type:             versionstore.IcebergView,
		ID:               id,
		MetadataLocation: l.location,
		UUID:             l.meta.ViewUUID().String(),
		VersionID:        l.meta.CurrentVersionID(),
		SchemaID:         int32(l.meta.CurrentSchemaID()),
	}
}

type loadViewResult struct {
	MetadataLocation string            `json:"metadata-location"`
	Metadata         json.RawMessage   `json:"metadata"`
	Config           map[string]string `json:"config"`
}

func newLoadViewResult(l *loadedView) loadViewResult {
	return loadViewResult{MetadataLocation: l.location, Metadata: l.raw, Config: map[string]string{}}
}

// loadViewAt returns a view's content and metadata at a commit, or a 404.
func (a *api) loadViewAt(ctx context.Context, at versionstore.Hash, id identifier) (*versionstore.Content, *loadedView, error) {
	c, err := a.lookup(ctx, at, id.key())
	if err != nil {
		return nil, nil, err
	}
	if c == nil || c.Type != versionstore.IcebergView {
		return nil, nil, noSuchView(id)
	}
	l, err := a.readViewMetadata(ctx, c.MetadataLocation)
	if err != nil {
		return nil, nil, internalError(err)
	}
	return c, l, nil
}

func (a *api) listViews(w http.ResponseWriter, r *http.Request) error {
	return a.listEntities(w, r, versionstore.IcebergView)
}

func (a *api) createView(w http.ResponseWriter, r *http.Request) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	ns, err := namespaceVar(r)
	if err != nil {
		return err
	}
	var req struct {
		Name        string            `json:"name"`
		Location    string            `json:"location"`
		Schema      *iceberg.Schema   `json:"schema"`
		ViewVersion *view.Version     `json:"view-version"`
		Properties  map[string]string `json:"properties"`
	}
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	id := identifier{Namespace: ns, Name: req.Name}
	if err := id.validate(); err != nil {
		return err
	}
	if req.Schema == nil || req.ViewVersion == nil {
		return badRequest("cannot create view %s: schema and view-version are required", id)
	}
	if err := validateCreateView(req.Location, req.Schema); err != nil {
		return err
	}
	branch, err := a.writeBranch(r, c, policy.ActionCreateView, content(id.key(), policy.TypeView, policy.ChangeCreate))
	if err != nil {
		return err
	}
	viewUUID := uuid.New()
	loc := req.Location
	if loc == "" {
		loc = c.wh.defaultTableLocation(id, viewUUID.String())
	} else if loc, err = c.wh.requireInside("view location", loc); err != nil {
		return err
	}
	meta, err := view.NewMetadataWithUUID(req.ViewVersion, req.Schema, loc, req.Properties, viewUUID)
	if err != nil {
		return illegalArgument("cannot create view %s: %v", id, err)
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
		return viewClash(id, existing.Type)
	}
	metaLoc, err := newViewMetadataLocation(c.wh, meta, "")
	if err != nil {
		return err
	}
	file, err := a.writeViewMetadata(ctx, metaLoc, meta)
	if err != nil {
		return internalError(err)
	}
	rp := jsonReply(http.StatusOK, newLoadViewResult(file))
	_, err = a.commit(ctx, w, r, branch, head,
		[]versionstore.Operation{{Kind: versionstore.OpPut, Key: id.key(), Content: viewContent("", file)}},
		change{op: "create-view", message: "iceberg: create view " + id.String(),
			props: map[string]string{propView: id.String(), propMetadataLocation: file.location}}, rp)
	if err != nil {
		if ce := conflictOf(err); ce != nil {
			a.removeFile(ctx, file.location)
			if cf := findConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace); cf != nil {
				return noSuchNamespace(cf.Key)
			}
			return viewClash(id, versionstore.IcebergView)
		}
		if definiteStoreFailure(err) {
			a.removeFile(ctx, file.location)
			return err
		}
		return commitStateUnknown(err)
	}
	rp.write(w)
	return nil
}

func (a *api) loadView(w http.ResponseWriter, r *http.Request) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	id, err := identVar(r, "view")
	if err != nil {
		return err
	}
	_, l, err := a.loadViewAt(r.Context(), c.hash, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newLoadViewResult(l))
	return nil
}

func (a *api) viewExists(w http.ResponseWriter, r *http.Request) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	id, err := identVar(r, "view")
	if err != nil {
		return err
	}
	content, err := a.lookup(r.Context(), c.hash, id.key())
	if err != nil {
		return err
	}
	if content == nil || content.Type != versionstore.IcebergView {
		return noSuchView(id)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) dropView(w http.ResponseWriter, r *http.Request) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	id, err := identVar(r, "view")
	if err != nil {
		return err
	}
	branch, err := a.writeBranch(r, c, policy.ActionDropView, content(id.key(), policy.TypeView, policy.ChangeDelete))
	if err != nil {
		return err
	}
	ctx := r.Context()
	err = a.retry(ctx, "drop-view", func(int) (bool, error) {
		head, err := a.head(branch)
		if err != nil {
			return false, err
		}
		content, err := a.lookup(ctx, head, id.key())
		if err != nil {
			return false, err
		}
		if content == nil || content.Type != versionstore.IcebergView {
			return false, noSuchView(id)
		}
		_, err = a.commit(ctx, w, r, branch, head, []versionstore.Operation{{Kind: versionstore.OpDelete, Key: id.key()}},
			change{op: "drop-view", message: "iceberg: drop view " + id.String(),
				props: map[string]string{propView: id.String(), propMetadataLocation: content.MetadataLocation}}, noContent())
		ce := conflictOf(err)
		switch {
		case ce == nil:
			return false, err
		case findConflict(ce, versionstore.ConflictKeyDoesNotExist) != nil:
			return false, noSuchView(id)
		}
		return true, commitFailed("View %s changed concurrently: %v", id, ce)
	})
	if err != nil {
		return err
	}
	noContent().write(w)
	return nil
}

// replaceView applies a CommitViewRequest: requirements validated against
// the view on the branch head, updates applied by the view metadata
// builder, a new metadata file written and committed, with the same
// server-side retry as tables.
func (a *api) replaceView(w http.ResponseWriter, r *http.Request) error {
	c, err := a.catalogFor(r)
	if err != nil {
		return err
	}
	id, err := identVar(r, "view")
	if err != nil {
		return err
	}
	var req struct {
		Identifier   *identifier       `json:"identifier"`
		Requirements view.Requirements `json:"requirements"`
		Updates      view.Updates      `json:"updates"`
	}
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.Identifier != nil && !slices.Equal(req.Identifier.key(), id.key()) {
		return badRequest("the request body names view %s but the path names %s", *req.Identifier, id)
	}
	if err := validateViewUpdates(req.Updates); err != nil {
		return err
	}
	branch, err := a.writeBranch(r, c, policy.ActionWriteView, content(id.key(), policy.TypeView, policy.ChangeUpdate))
	if err != nil {
		return err
	}
	ctx := r.Context()
	var rp *reply
	err = a.retry(ctx, "replace-view", func(int) (bool, error) {
		head, err := a.head(branch)
		if err != nil {
			return false, err
		}
		content, base, err := a.loadViewAt(ctx, head, id)
		if err != nil {
			return false, err
		}
		for _, rq := range req.Requirements {
			if err := rq.Validate(base.meta); err != nil {
				return false, commitFailed("%v", err)
			}
		}
		b, err := view.MetadataBuilderFromBase(base.meta)
		if err != nil {
			return false, illegalArgument("cannot update view %s: %v", id, err)
		}
		for _, u := range req.Updates {
			if err := u.Apply(b); err != nil {
				return false, illegalArgument("cannot apply %s to view %s: %v", u.Action(), id, err)
			}
		}
		if !b.HasChanges() {
			rp = jsonReply(http.StatusOK, newLoadViewResult(base))
			return false, nil
		}
		next, err := b.Build()
		if err != nil {
			return false, illegalArgument("cannot update view %s: %v", id, err)
		}
		if next.Location() != base.meta.Location() {
			if _, err := c.wh.requireInside("view location", next.Location()); err != nil {
				return false, err
			}
		}
		loc, err := newViewMetadataLocation(c.wh, next, content.MetadataLocation)
		if err != nil {
			return false, err
		}
		file, err := a.writeViewMetadata(ctx, loc, next)
		if err != nil {
			return false, internalError(err)
		}
		rp = jsonReply(http.StatusOK, newLoadViewResult(file))
		_, err = a.commit(ctx, w, r, branch, head,
			[]versionstore.Operation{{Kind: versionstore.OpPut, Key: id.key(), Content: viewContent(content.ID, file)}},
			change{op: "replace-view", message: "iceberg: replace view " + id.String(),
				props: map[string]string{propView: id.String(), propMetadataLocation: file.location}}, rp)
		if err == nil {
			return false, nil
		}
		ce := conflictOf(err)
		if ce == nil {
			if definiteStoreFailure(err) {
				a.removeFile(ctx, file.location)
				return false, err
			}
			return false, commitStateUnknown(err)
		}
		a.removeFile(ctx, file.location)
		if findConflict(ce, versionstore.ConflictKeyDoesNotExist) != nil {
			return true, noSuchView(id)
		}
		return true, commitFailed("View %s changed concurrently: %v", id, ce)
	})
	if err != nil {
		return err
	}
	rp.write(w)
	return nil
}

func (a *api) renameView(w http.ResponseWriter, r *http.Request) error {
	return a.renameEntity(w, r, versionstore.IcebergView)
}

func (a *api) registerView(w http.ResponseWriter, r *http.Request) error {
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
	}
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	id := identifier{Namespace: ns, Name: req.Name}
	if err := id.validate(); err != nil {
		return err
	}
	branch, err := a.writeBranch(r, c, policy.ActionCreateView, content(id.key(), policy.TypeView, policy.ChangeCreate))
	if err != nil {
		return err
	}
	metaLoc, err := c.wh.requireInside("metadata-location", req.MetadataLocation)
	if err != nil {
		return err
	}
	ctx := r.Context()
	file, err := a.readViewMetadata(ctx, metaLoc)
	if err != nil {
		return badRequest("cannot register view %s: %v", id, err)
	}
	if _, err := c.wh.requireInside("view location", file.meta.Location()); err != nil {
		return err
	}
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
		return viewClash(id, existing.Type)
	}
	rp := jsonReply(http.StatusOK, newLoadViewResult(file))
	_, err = a.commit(ctx, w, r, branch, head,
		[]versionstore.Operation{{Kind: versionstore.OpPut, Key: id.key(), Content: viewContent("", file)}},
		change{op: "register-view", message: "iceberg: register view " + id.String(),
			props: map[string]string{propView: id.String(), propMetadataLocation: file.location}}, rp)
	if ce := conflictOf(err); ce != nil {
		if cf := findConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace); cf != nil {
			return noSuchNamespace(cf.Key)
		}
		return viewClash(id, versionstore.IcebergView)
	}
	if err != nil {
		return err
	}
	rp.write(w)
	return nil
}
