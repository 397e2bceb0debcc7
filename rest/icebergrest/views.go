package icebergrest

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/view"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/policy"
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
	create := catalog.ViewCreate{ID: catalog.Identifier(id), Location: req.Location, Schema: req.Schema, Version: req.ViewVersion, Properties: req.Properties}
	if err := create.Check(); err != nil {
		return err
	}
	branch, err := a.writeBranch(r, wr, viewKind.createAction, content(id.key(), viewKind.policyType, policy.ChangeCreate))
	if err != nil {
		return err
	}
	_, err = a.write(w, r, wr, branch, viewAnswer, func(ctx context.Context, cw catalog.Write) (*catalog.Written, error) {
		return a.catalog.CreateView(ctx, cw, create)
	})
	return err
}

// viewAnswer is the reply to a write of a view: its metadata file.
func viewAnswer(done *catalog.Written) *reply { return viewReply(done.View) }

func (a *api) loadView(w http.ResponseWriter, r *http.Request) error {
	wr, id, err := a.entityOf(r, viewKind)
	if err != nil {
		return err
	}
	_, file, err := a.catalog.LoadView(r.Context(), wr.hash, catalog.Identifier(id))
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
	_, _, err := a.removeEntity(w, r, viewKind, func(*catalog.Written) *reply { return noContent() }, a.catalog.DropView)
	return err
}

// replaceView applies a CommitViewRequest: the catalog commits it
// (catalog.Service.CommitView).
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
	if err := catalog.ValidateViewUpdates(req.Updates); err != nil {
		return err
	}
	branch, err := a.writeBranch(r, wr, policy.ActionWriteView, content(id.key(), policy.TypeView, policy.ChangeUpdate))
	if err != nil {
		return err
	}
	_, err = a.write(w, r, wr, branch, viewAnswer, func(ctx context.Context, cw catalog.Write) (*catalog.Written, error) {
		return a.catalog.CommitView(ctx, cw, catalog.ViewChange{ID: catalog.Identifier(id), Requirements: req.Requirements, Updates: req.Updates})
	})
	return err
}

func (a *api) renameView(w http.ResponseWriter, r *http.Request) error {
	return a.renameEntity(w, r, viewKind, a.catalog.RenameView)
}

func (a *api) registerView(w http.ResponseWriter, r *http.Request) error {
	return a.registerEntity(w, r, viewKind, viewAnswer, func(ctx context.Context, cw catalog.Write, _ *warehouseRef, id identifier, loc string, _ bool) (*catalog.Written, error) {
		return a.catalog.RegisterView(ctx, cw, catalog.Identifier(id), loc)
	})
}
