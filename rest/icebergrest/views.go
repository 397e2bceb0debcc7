package icebergrest

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/view"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// Views share the key space with tables and namespaces: a view and a table
// of the same name cannot both exist, and the errors say which one is in
// the way (viewClash). What views share with tables is in entities.go.

type loadViewResult struct {
	MetadataLocation string            `json:"metadata-location"`
	Metadata         json.RawMessage   `json:"metadata"`
	Config           map[string]string `json:"config"`
}

// viewReply is the 200 answering a view's metadata file.
func viewReply(file *icebergtable.ViewMetadataFile) *reply {
	return jsonReply(http.StatusOK, loadViewResult{MetadataLocation: file.Location, Metadata: file.Raw, Config: map[string]string{}})
}

// loadViewAt returns a view's content and metadata file at a commit, or a
// 404.
func (a *api) loadViewAt(ctx context.Context, at versionstore.Hash, id identifier) (*versionstore.Content, *icebergtable.ViewMetadataFile, error) {
	return loadEntityAt(ctx, a, at, id, viewKind, a.readViewMetadata)
}

func (a *api) listViews(w http.ResponseWriter, r *http.Request) error {
	return a.listEntities(w, r, viewKind)
}

func (a *api) createView(w http.ResponseWriter, r *http.Request) error {
	wr, err := a.warehouseRefOf(r)
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
	id, err := decodeNamedBody(r, &req, &req.Name)
	if err != nil {
		return err
	}
	if req.Schema == nil || req.ViewVersion == nil {
		return badRequest("cannot create view %s: schema and view-version are required", id)
	}
	if err := validateCreateView(req.Location, req.Schema); err != nil {
		return err
	}
	branch, viewUUID, loc, err := a.placeNew(r, wr, id, viewKind, req.Location)
	if err != nil {
		return err
	}
	meta, err := view.NewMetadataWithUUID(req.ViewVersion, req.Schema, loc, req.Properties, viewUUID)
	if err != nil {
		return illegalArgument("cannot create view %s: %v", id, err)
	}
	ctx := r.Context()
	head, err := a.newEntityHead(ctx, branch, id, viewKind)
	if err != nil {
		return err
	}
	file, err := a.writeNextViewMetadata(ctx, wr.wh, meta, "")
	if err != nil {
		return err
	}
	return a.commitCreate(ctx, w, r, branch, head, id, viewKind, file.Location, icebergtable.ViewContent("", file), viewReply(file))
}

func (a *api) loadView(w http.ResponseWriter, r *http.Request) error {
	wr, id, err := a.entityOf(r, viewKind)
	if err != nil {
		return err
	}
	_, file, err := a.loadViewAt(r.Context(), wr.hash, id)
	if err != nil {
		return err
	}
	viewReply(file).write(w, &a.joins)
	return nil
}

func (a *api) viewExists(w http.ResponseWriter, r *http.Request) error {
	return a.entityExists(w, r, viewKind)
}

func (a *api) dropView(w http.ResponseWriter, r *http.Request) error {
	describe := func(id identifier) commitDescription {
		return commitDescription{op: "drop-view", message: "iceberg: drop view " + id.String(), props: map[string]string{icebergtable.PropView: id.String()}}
	}
	_, _, err := a.removeEntity(w, r, viewKind, describe, func(context.Context, *versionstore.Content) (*reply, error) {
		return noContent(), nil
	})
	return err
}

// replaceView applies a CommitViewRequest: requirements validated against
// the view on the branch head, updates applied by the view metadata
// builder, a new metadata file written and committed, with the same
// server-side retry as tables.
func (a *api) replaceView(w http.ResponseWriter, r *http.Request) error {
	wr, id, err := a.entityOf(r, viewKind)
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
	branch, err := a.writeBranch(r, wr, policy.ActionWriteView, content(id.key(), policy.TypeView, policy.ChangeUpdate))
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
			if err := rq.Validate(base.Metadata); err != nil {
				return false, viewRequirementFailed(rq, base.Metadata, err)
			}
		}
		b, err := view.MetadataBuilderFromBase(base.Metadata)
		if err != nil {
			return false, illegalArgument("cannot update view %s: %v", id, err)
		}
		for _, u := range req.Updates {
			if err := u.Apply(b); err != nil {
				return false, illegalArgument("cannot apply %s to view %s: %v", u.Action(), id, err)
			}
		}
		if !b.HasChanges() {
			rp = viewReply(base)
			return false, nil
		}
		next, err := b.Build()
		if err != nil {
			return false, illegalArgument("cannot update view %s: %v", id, err)
		}
		if next.Location() != base.Metadata.Location() {
			if _, err := wr.wh.requireInside("view location", next.Location()); err != nil {
				return false, err
			}
		}
		file, err := a.writeNextViewMetadata(ctx, wr.wh, next, content.MetadataLocation)
		if err != nil {
			return false, err
		}
		rp = viewReply(file)
		_, err = a.commit(ctx, w, r, branch, head,
			[]versionstore.Operation{{Kind: versionstore.OpPut, Key: id.key(), Content: icebergtable.ViewContent(content.ID, file)}},
			commitDescription{op: "replace-view", message: "iceberg: replace view " + id.String(),
				props: map[string]string{icebergtable.PropView: id.String(), icebergtable.PropMetadataLocation: file.Location}}, rp)
		if err == nil {
			return false, nil
		}
		ce := conflictOf(err)
		if ce == nil {
			return false, a.commitNotDone(ctx, err, file.Location)
		}
		a.removeFiles(ctx, file.Location)
		if findConflict(ce, versionstore.ConflictKeyDoesNotExist) != nil {
			return true, noSuchView(id)
		}
		return true, commitFailed("View %s changed concurrently: %v", id, ce)
	})
	if err != nil {
		return err
	}
	rp.write(w, &a.joins)
	return nil
}

func (a *api) renameView(w http.ResponseWriter, r *http.Request) error {
	return a.renameEntity(w, r, viewKind)
}

func (a *api) registerView(w http.ResponseWriter, r *http.Request) error {
	return a.registerEntity(w, r, viewKind, func(ctx context.Context, _ *warehouseRef, _ identifier, loc string) (registration, error) {
		file, err := a.readViewMetadata(ctx, loc)
		if err != nil {
			return registration{}, err
		}
		return registration{
			location:       file.Location,
			entityLocation: file.Metadata.Location(),
			content:        func(contentID string) *versionstore.Content { return icebergtable.ViewContent(contentID, file) },
			reply:          viewReply(file),
		}, nil
	})
}
