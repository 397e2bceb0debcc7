package icebergrest

import (
	"context"
	"net/http"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// Tables and views share the key space and most of their handlers: listing,
// HEAD, rename, drop, register and the checks before a create are written
// once here, for an entityKind.

// entityKind is what tables and views differ in where their handlers are
// the same: the content type, the route variable, the policy's names.
type entityKind struct {
	typ  versionstore.ContentType
	noun string // "table" or "view": the route variable
	// policyType and the actions are what the policy is asked about.
	policyType                             string
	createAction, dropAction, renameAction policy.Action
}

var (
	tableKind = entityKind{
		typ: versionstore.IcebergTable, noun: "table", policyType: policy.TypeTable,
		createAction: policy.ActionCreateTable, dropAction: policy.ActionDropTable, renameAction: policy.ActionRenameTable,
	}
	viewKind = entityKind{
		typ: versionstore.IcebergView, noun: "view", policyType: policy.TypeView,
		createAction: policy.ActionCreateView, dropAction: policy.ActionDropView, renameAction: policy.ActionRenameView,
	}
)

// decodeNamedBody decodes a request body that names a new table or view
// in the path's namespace; name points at the body's name field.
func decodeNamedBody(r *http.Request, body any, name *string) (identifier, error) {
	ns, err := namespaceVar(r)
	if err != nil {
		return identifier{}, err
	}
	if err := decodeBody(r, body); err != nil {
		return identifier{}, err
	}
	id := identifier{Namespace: ns, Name: *name}
	return id, id.validate()
}

// entityOf resolves the request's prefix and its {table} or {view}
// variable.
func (a *api) entityOf(r *http.Request, k entityKind) (*warehouseRef, identifier, error) {
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return nil, identifier{}, err
	}
	id, err := identVar(r, k.noun)
	return wr, id, err
}

// lookupEntity returns the content of a table or view at a commit, or a
// 404 if the key is absent or holds something else.
func (a *api) lookupEntity(ctx context.Context, at versionstore.Hash, id identifier, k entityKind) (*versionstore.Content, error) {
	return a.catalog.LookupObject(ctx, at, catalog.Identifier(id), k.typ)
}

// entityExists answers HEAD on a table or view.
func (a *api) entityExists(w http.ResponseWriter, r *http.Request, k entityKind) error {
	wr, id, err := a.entityOf(r, k)
	if err != nil {
		return err
	}
	if _, err := a.lookupEntity(r.Context(), wr.hash, id, k); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listEntities lists the tables or views of a namespace.
func (a *api) listEntities(w http.ResponseWriter, r *http.Request, k entityKind) error {
	wr, err := a.warehouseRefOf(r)
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
	if _, err := a.requireNamespace(r.Context(), wr.hash, ns); err != nil {
		return err
	}
	children, more, err := a.listChildren(r.Context(), wr.hash, ns, k.typ, p)
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

// removeEntity authorizes removing the table or view the request names
// and has the catalog remove it with remove (drop, unregister), answering
// with what respond builds of what it removed. It returns that and the
// branch.
func (a *api) removeEntity(w http.ResponseWriter, r *http.Request, k entityKind, respond func(*catalog.Written) *reply,
	remove func(context.Context, catalog.Write, catalog.Identifier) (*catalog.Written, error)) (*catalog.Written, string, error) {
	wr, id, err := a.entityOf(r, k)
	if err != nil {
		return nil, "", err
	}
	branch, err := a.writeBranch(r, wr, k.dropAction, content(id.key(), k.policyType, policy.ChangeDelete))
	if err != nil {
		return nil, "", err
	}
	done, err := a.write(w, r, wr, branch, respond, func(ctx context.Context, cw catalog.Write) (*catalog.Written, error) {
		return remove(ctx, cw, catalog.Identifier(id))
	})
	return done, branch, err
}

// registerEntity authorizes registering the metadata file a request names
// as a table or view and has the catalog register it with register,
// answering with what respond builds of what it registered.
func (a *api) registerEntity(w http.ResponseWriter, r *http.Request, k entityKind, respond func(*catalog.Written) *reply,
	register func(ctx context.Context, cw catalog.Write, wr *warehouseRef, id identifier, loc string, overwrite bool) (*catalog.Written, error)) error {
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return err
	}
	var req struct {
		Name             string `json:"name"`
		MetadataLocation string `json:"metadata-location"`
		Overwrite        bool   `json:"overwrite"`
	}
	id, err := decodeNamedBody(r, &req, &req.Name)
	if err != nil {
		return err
	}
	overwrite := req.Overwrite && k.typ == versionstore.IcebergTable // views have no overwrite
	registered := content(id.key(), k.policyType, policy.ChangeCreate)
	if overwrite {
		registered.Change = policy.ChangeUpdate
	}
	branch, err := a.writeBranch(r, wr, k.createAction, registered)
	if err != nil {
		return err
	}
	_, err = a.write(w, r, wr, branch, respond, func(ctx context.Context, cw catalog.Write) (*catalog.Written, error) {
		return register(ctx, cw, wr, id, req.MetadataLocation, overwrite)
	})
	return err
}

// renameEntity authorizes a rename of a table or view and has the catalog
// rename it with rename.
func (a *api) renameEntity(w http.ResponseWriter, r *http.Request, k entityKind,
	rename func(ctx context.Context, cw catalog.Write, src, dst catalog.Identifier) (*catalog.Written, error)) error {
	wr, err := a.warehouseRefOf(r)
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
	branch, err := a.writeBranch(r, wr, k.renameAction, content(src.key(), k.policyType, policy.ChangeDelete), content(dst.key(), k.policyType, policy.ChangeCreate))
	if err != nil {
		return err
	}
	_, err = a.write(w, r, wr, branch, func(*catalog.Written) *reply { return noContent() }, func(ctx context.Context, cw catalog.Write) (*catalog.Written, error) {
		return rename(ctx, cw, catalog.Identifier(src), catalog.Identifier(dst))
	})
	return err
}
