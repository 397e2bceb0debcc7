package icebergrest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// Tables and views share the key space and most of their handlers: listing,
// HEAD, rename, drop, register and the checks before a create are written
// once here, for an entityKind.

// entityKind is what tables and views differ in where their handlers are
// the same: the content type, the words of messages, the policy's names.
type entityKind struct {
	typ   versionstore.ContentType
	noun  string // "table" or "view": in messages, and the route variable
	title string // "Table" or "View"
	// opSuffix makes the operation label of a verb: "drop", "drop-view".
	opSuffix string
	// policyType and the actions are what the policy is asked about.
	policyType                             string
	createAction, dropAction, renameAction policy.Action
	// prop is the commit property naming the table or view.
	prop   string
	noSuch func(identifier) *apiError
	// clash is the 409 for creating one onto an existing key.
	clash func(identifier, versionstore.ContentType) error
}

var (
	tableKind = entityKind{
		typ: versionstore.IcebergTable, noun: "table", title: "Table",
		policyType: policy.TypeTable, prop: icebergtable.PropTable,
		createAction: policy.ActionCreateTable, dropAction: policy.ActionDropTable, renameAction: policy.ActionRenameTable,
		noSuch: noSuchTable, clash: tableClash,
	}
	viewKind = entityKind{
		typ: versionstore.IcebergView, noun: "view", title: "View", opSuffix: "-view",
		policyType: policy.TypeView, prop: icebergtable.PropView,
		createAction: policy.ActionCreateView, dropAction: policy.ActionDropView, renameAction: policy.ActionRenameView,
		noSuch: noSuchView, clash: viewClash,
	}
)

// op is the operation label of verb done to this kind.
func (k entityKind) op(verb string) string { return verb + k.opSuffix }

// kindOf returns the kind of a table or view content type.
func kindOf(typ versionstore.ContentType) entityKind {
	if typ == versionstore.IcebergView {
		return viewKind
	}
	return tableKind
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

// viewClash is tableClash for views, in the words the Java view tests
// expect.
func viewClash(id identifier, existing versionstore.ContentType) error {
	switch existing {
	case versionstore.IcebergTable:
		return newError(http.StatusConflict, typeAlreadyExists, "Table with same name already exists: %s", id)
	case versionstore.Namespace:
		return newError(http.StatusConflict, typeAlreadyExists, "Cannot create view %s: a namespace with the same name exists", id)
	}
	return newError(http.StatusConflict, typeAlreadyExists, "View already exists: %s", id)
}

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

// loadEntityAt returns a table's or view's content and current metadata
// file (read by read) at a commit, or a 404 if the key is absent or holds
// something else.
func loadEntityAt[F any](ctx context.Context, a *api, at versionstore.Hash, id identifier, k entityKind, read func(context.Context, string) (F, error)) (*versionstore.Content, F, error) {
	var file F
	c, err := a.lookupEntity(ctx, at, id, k)
	if err != nil {
		return nil, file, err
	}
	if file, err = read(ctx, c.MetadataLocation); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// The catalog names a file storage no longer has: Java's
			// catalogs answer NotFoundException in these words.
			return nil, file, newError(http.StatusNotFound, typeNotFound, "Failed to open input stream for file: %s", c.MetadataLocation)
		}
		return nil, file, internalError(err)
	}
	return c, file, nil
}

// lookupEntity returns the content of a table or view at a commit, or a
// 404 if the key is absent or holds something else. A missing namespace is
// a missing table too, as the spec's clients expect.
func (a *api) lookupEntity(ctx context.Context, at versionstore.Hash, id identifier, k entityKind) (*versionstore.Content, error) {
	c, err := a.lookup(ctx, at, id.key())
	if err != nil {
		return nil, err
	}
	if c == nil || c.Type != k.typ {
		return nil, k.noSuch(id)
	}
	return c, nil
}

// newEntityHead returns the head of branch for creating a table or view id
// on it: its namespace must exist and its key must be free.
func (a *api) newEntityHead(ctx context.Context, branch string, id identifier, k entityKind) (versionstore.Hash, error) {
	head, err := a.head(branch)
	if err != nil {
		return head, err
	}
	if _, err := a.requireNamespace(ctx, head, id.Namespace); err != nil {
		return head, err
	}
	if existing, err := a.lookup(ctx, head, id.key()); err != nil {
		return head, err
	} else if existing != nil {
		return head, k.clash(id, existing.Type)
	}
	return head, nil
}

// placeNew authorizes creating the table or view id on wr's branch and
// gives it a uuid and its location: the one its creator asked for, which
// must lie inside the warehouse, or the default.
func (a *api) placeNew(r *http.Request, wr *warehouseRef, id identifier, k entityKind, requested string) (branch string, newUUID uuid.UUID, loc string, err error) {
	if branch, err = a.writeBranch(r, wr, k.createAction, content(id.key(), k.policyType, policy.ChangeCreate)); err != nil {
		return "", uuid.UUID{}, "", err
	}
	newUUID = uuid.New()
	if requested == "" {
		return branch, newUUID, wr.wh.defaultLocation(id, newUUID.String()), nil
	}
	loc, err = wr.wh.requireInside(k.noun+" location", requested)
	return branch, newUUID, loc, err
}

// commitCreate commits the new table or view id on branch at head (see
// newEntityHead), whose first metadata file is at fileLoc, and answers rp.
func (a *api) commitCreate(ctx context.Context, w http.ResponseWriter, r *http.Request, branch string, head versionstore.Hash, id identifier, k entityKind,
	fileLoc string, c *versionstore.Content, rp *reply) error {
	_, err := a.commit(ctx, w, r, branch, head, []versionstore.Operation{{Kind: versionstore.OpPut, Key: id.key(), Content: c}},
		commitDescription{op: k.op("create"), message: "iceberg: create " + k.noun + " " + id.String(),
			props: map[string]string{k.prop: id.String(), icebergtable.PropMetadataLocation: fileLoc}}, rp)
	if err != nil {
		return a.createFailed(ctx, id, k, fileLoc, err)
	}
	rp.write(w, &a.joins)
	return nil
}

// createFailed turns a failed commit of a new key into the client's error,
// deleting the metadata file written for it when the commit surely did not
// happen.
func (a *api) createFailed(ctx context.Context, id identifier, k entityKind, fileLoc string, err error) error {
	ce := conflictOf(err)
	if ce == nil {
		return a.commitNotDone(ctx, err, fileLoc)
	}
	a.removeFiles(ctx, fileLoc)
	if cf := findConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace); cf != nil {
		return noSuchNamespace(cf.Key)
	}
	return k.clash(id, k.typ)
}

// commitNotDone is the answer to a commit the store refused without a
// conflict. When the error proves nothing was committed, the metadata
// files written for the commit are deleted; otherwise the outcome is
// unknown, the files may be referenced now and are kept.
func (a *api) commitNotDone(ctx context.Context, err error, written ...string) error {
	if catalog.DefiniteStoreFailure(err) {
		a.removeFiles(ctx, written...)
		return err
	}
	return commitStateUnknown(err)
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

// removeEntity deletes a table's or view's key from the branch in one
// commit (drop, unregister) that describe describes, retried when another
// writer changed the branch in between. answer builds the reply from the
// content removed. No file is ever deleted: other branches, tags and older
// commits may still reference them. It returns the content removed and
// the branch.
func (a *api) removeEntity(w http.ResponseWriter, r *http.Request, k entityKind, describe func(identifier) commitDescription,
	answer func(context.Context, *versionstore.Content) (*reply, error)) (*versionstore.Content, string, error) {
	wr, id, err := a.entityOf(r, k)
	if err != nil {
		return nil, "", err
	}
	branch, err := a.writeBranch(r, wr, k.dropAction, content(id.key(), k.policyType, policy.ChangeDelete))
	if err != nil {
		return nil, "", err
	}
	desc := describe(id)
	ctx := r.Context()
	var (
		removed *versionstore.Content
		rp      *reply
	)
	err = a.retry(ctx, desc.op, func(int) (bool, error) {
		head, err := a.head(branch)
		if err != nil {
			return false, err
		}
		if removed, err = a.lookupEntity(ctx, head, id, k); err != nil {
			return false, err
		}
		if rp, err = answer(ctx, removed); err != nil {
			return false, err
		}
		desc.props[icebergtable.PropMetadataLocation] = removed.MetadataLocation
		_, err = a.commit(ctx, w, r, branch, head, []versionstore.Operation{{Kind: versionstore.OpDelete, Key: id.key()}}, desc, rp)
		ce := conflictOf(err)
		switch {
		case ce == nil:
			return false, err
		case findConflict(ce, versionstore.ConflictKeyDoesNotExist) != nil:
			return false, k.noSuch(id)
		}
		return true, commitFailed("%s %s changed concurrently: %v", k.title, id, ce)
	})
	if err != nil {
		return nil, "", err
	}
	rp.write(w, &a.joins)
	return removed, branch, nil
}

// registration is a metadata file a client registers as a table or view.
type registration struct {
	location string // of the metadata file
	// entityLocation is the table's or view's location the file names.
	entityLocation string
	content        func(contentID string) *versionstore.Content
	reply          *reply
}

// registerEntity registers the metadata file a request names as a table
// or view: open reads it, for the request's warehouse reference wr and
// the identifier id it is registered as. With overwrite
// (tables only), an existing table is replaced and keeps its content id.
func (a *api) registerEntity(w http.ResponseWriter, r *http.Request, k entityKind, open func(ctx context.Context, wr *warehouseRef, id identifier, loc string) (registration, error)) error {
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
	metaLoc, err := wr.wh.requireInside("metadata-location", req.MetadataLocation)
	if err != nil {
		return err
	}
	ctx := r.Context()
	reg, err := open(ctx, wr, id, metaLoc)
	if err != nil {
		return badRequest("cannot register %s %s: %v", k.noun, id, err)
	}
	if _, err := wr.wh.requireInside(k.noun+" location", reg.entityLocation); err != nil {
		return err
	}
	op := k.op("register")
	err = a.retry(ctx, op, func(int) (bool, error) {
		head, err := a.head(branch)
		if err != nil {
			return false, err
		}
		if _, err := a.requireNamespace(ctx, head, id.Namespace); err != nil {
			return false, err
		}
		existing, err := a.lookup(ctx, head, id.key())
		if err != nil {
			return false, err
		}
		contentID := ""
		if existing != nil {
			if existing.Type != k.typ || !overwrite {
				return false, k.clash(id, existing.Type)
			}
			contentID = existing.ID
		}
		_, err = a.commit(ctx, w, r, branch, head,
			[]versionstore.Operation{{Kind: versionstore.OpPut, Key: id.key(), Content: reg.content(contentID)}},
			commitDescription{op: op, message: "iceberg: register " + k.noun + " " + id.String(),
				props: map[string]string{k.prop: id.String(), icebergtable.PropMetadataLocation: reg.location}}, reg.reply)
		ce := conflictOf(err)
		switch {
		case ce == nil:
			return false, err
		case findConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace) != nil:
			return false, noSuchNamespace(id.Namespace)
		case existing == nil:
			return false, k.clash(id, k.typ)
		}
		return true, commitFailed("%s %s changed concurrently: %v", k.title, id, ce)
	})
	if err != nil {
		return err
	}
	reg.reply.write(w, &a.joins)
	return nil
}

// renameEntity renames a table or view in one atomic commit: delete the
// old key, put the new one with the same content id, so the entity keeps
// its identity (and history) across the rename.
func (a *api) renameEntity(w http.ResponseWriter, r *http.Request, k entityKind) error {
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
	if slices.Equal(src.key(), dst.key()) {
		return k.clash(dst, k.typ)
	}
	op := k.op("rename")
	ctx := r.Context()
	return a.retry(ctx, op, func(int) (bool, error) {
		head, err := a.head(branch)
		if err != nil {
			return false, err
		}
		cur, err := a.lookupEntity(ctx, head, src, k)
		if err != nil {
			return false, err
		}
		if _, err := a.requireNamespace(ctx, head, dst.Namespace); err != nil {
			return false, err
		}
		if existing, err := a.lookup(ctx, head, dst.key()); err != nil {
			return false, err
		} else if existing != nil {
			// Java's wording for a rename onto a view, and of a view onto
			// a table; a table onto a table keeps "Table already exists".
			switch {
			case existing.Type == versionstore.IcebergView:
				return false, newError(http.StatusConflict, typeAlreadyExists, "Cannot rename %s to %s. View already exists", src, dst)
			case existing.Type == versionstore.IcebergTable && k.typ == versionstore.IcebergView:
				return false, newError(http.StatusConflict, typeAlreadyExists, "Cannot rename %s to %s. Table already exists", src, dst)
			}
			return false, k.clash(dst, existing.Type)
		}
		_, err = a.commit(ctx, w, r, branch, head, []versionstore.Operation{
			{Kind: versionstore.OpDelete, Key: src.key()},
			{Kind: versionstore.OpPut, Key: dst.key(), Content: cur},
		}, commitDescription{op: op, message: fmt.Sprintf("iceberg: rename %s %s to %s", k.noun, src, dst),
			props: map[string]string{icebergtable.PropRenamedFrom: src.String(), k.prop: dst.String()}}, noContent())
		ce := conflictOf(err)
		switch {
		case ce == nil:
			if err == nil {
				noContent().write(w, &a.joins)
			}
			return false, err
		case findConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace) != nil:
			return false, noSuchNamespace(dst.Namespace)
		}
		for _, cf := range ce.Conflicts {
			if slices.Equal(cf.Key, dst.key()) {
				return false, k.clash(dst, versionstore.IcebergTable)
			}
		}
		return true, commitFailed("Cannot rename %s %s: it changed concurrently: %v", k.noun, src, ce)
	})
}
