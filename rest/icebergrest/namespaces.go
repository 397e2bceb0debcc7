package icebergrest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// decodeBody reads a JSON request body into v. Malformed JSON, an empty
// body or trailing data is a 400; unknown fields are ignored, as clients of
// newer spec versions send them.
func decodeBody(r *http.Request, v any) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeJSONBody(data, v)
}

// readBody reads a request's whole body, which must not be empty.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, badRequest("the request body is empty")
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, badRequest("reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, badRequest("the request body is empty")
	}
	return data, nil
}

// decodeJSONBody decodes a request body read by readBody into v.
func decodeJSONBody(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed JSON request body: %v", err)
	}
	// Not dec.More(), which is false before a ']' or '}': only JSON
	// whitespace may follow the value.
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return badRequest("malformed JSON request body: data after the JSON value at byte %d", len(data)-len(rest))
	}
	return nil
}

// lookup returns the content at key, or nil when absent.
func (a *api) lookup(ctx context.Context, at versionstore.Hash, key versionstore.ContentKey) (*versionstore.Content, error) {
	c, err := a.store.GetContent(ctx, at, key)
	if errors.Is(err, versionstore.ErrContentNotFound) {
		return nil, nil
	}
	return c, err
}

// requireNamespace fails with 404 unless ns is a namespace at the commit.
func (a *api) requireNamespace(ctx context.Context, at versionstore.Hash, ns []string) (*versionstore.Content, error) {
	c, err := a.lookup(ctx, at, ns)
	if err != nil {
		return nil, err
	}
	if c == nil || c.Type != versionstore.Namespace {
		return nil, noSuchNamespace(ns)
	}
	return c, nil
}

type namespaceResponse struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

// namespaceLocationProp is the namespace property Iceberg's catalogs keep a
// namespace's location in.
const namespaceLocationProp = "location"

// namespaceProps are the properties a namespace's answer reports: its own,
// and, when it sets no location, the folder floe puts its tables in, as
// Hive, Hadoop and JDBC catalogs report one. Trino 476 needs it: without a
// namespace location it creates a table for real instead of staging it,
// then finds that table's first metadata file in the folder and refuses
// "a non-empty location". The location is reported, never stored, so the
// namespace's own properties (and what the Nessie API shows) are unchanged.
func namespaceProps(wh *warehouse, ns []string, c *versionstore.Content) map[string]string {
	if _, ok := c.Properties[namespaceLocationProp]; ok {
		return c.Properties
	}
	p := make(map[string]string, len(c.Properties)+1)
	maps.Copy(p, c.Properties)
	p[namespaceLocationProp] = wh.files.DefaultNamespaceLocation(ns)
	return p
}

func (a *api) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return err
	}
	p, err := parsePaging(r)
	if err != nil {
		return err
	}
	var parent []string
	if q := r.URL.Query().Get("parent"); q != "" {
		if parent, err = splitNamespace(q); err != nil {
			return err
		}
		if _, err := a.requireNamespace(r.Context(), wr.hash, parent); err != nil {
			return err
		}
	}
	children, more, err := a.listChildren(r.Context(), wr.hash, parent, versionstore.Namespace, p)
	if err != nil {
		return err
	}
	resp := struct {
		Namespaces    [][]string `json:"namespaces"`
		NextPageToken string     `json:"next-page-token,omitempty"`
	}{Namespaces: make([][]string, 0, len(children))}
	for _, ch := range children {
		resp.Namespaces = append(resp.Namespaces, append(slices.Clone(parent), ch.name))
	}
	if more {
		resp.NextPageToken = nextToken(children[len(children)-1].name)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (a *api) createNamespace(w http.ResponseWriter, r *http.Request) error {
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return err
	}
	var req struct {
		Namespace  []string          `json:"namespace"`
		Properties map[string]string `json:"properties"`
	}
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if len(req.Namespace) == 0 {
		return badRequest("cannot create a namespace with no levels")
	}
	if err := checkNewKey("namespace", req.Namespace); err != nil {
		return err
	}
	branch, err := a.writeBranch(r, wr, policy.ActionCreateNamespace, content(req.Namespace, policy.TypeNamespace, policy.ChangeCreate))
	if err != nil {
		return err
	}
	ctx := r.Context()
	head, err := a.head(branch)
	if err != nil {
		return err
	}
	if existing, err := a.lookup(ctx, head, req.Namespace); err != nil {
		return err
	} else if existing != nil {
		return namespaceClash(req.Namespace, existing.Type)
	}
	if len(req.Namespace) > 1 {
		if _, err := a.requireNamespace(ctx, head, req.Namespace[:len(req.Namespace)-1]); err != nil {
			return err
		}
	}
	content := &versionstore.Content{Type: versionstore.Namespace, Properties: req.Properties}
	rp := jsonReply(http.StatusOK, namespaceResponse{Namespace: req.Namespace, Properties: namespaceProps(wr.wh, req.Namespace, content)})
	_, err = a.commit(ctx, w, r, branch, head, []versionstore.Operation{{Kind: versionstore.OpPut, Key: req.Namespace, Content: content}},
		commitDescription{op: "create-namespace", message: "iceberg: create namespace " + dotted(req.Namespace),
			props: map[string]string{icebergtable.PropNamespace: dotted(req.Namespace)}}, rp)
	if ce := conflictOf(err); ce != nil {
		if cf := findConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace); cf != nil {
			return noSuchNamespace(cf.Key)
		}
		return newError(http.StatusConflict, typeAlreadyExists, "Namespace already exists: %s", dotted(req.Namespace))
	}
	if err != nil {
		return err
	}
	rp.write(w, &a.joins)
	return nil
}

// namespaceClash is the 409 for creating a namespace over an existing key.
func namespaceClash(ns []string, existing versionstore.ContentType) error {
	switch existing {
	case versionstore.IcebergTable:
		return newError(http.StatusConflict, typeAlreadyExists, "Cannot create namespace %s: a table with the same name exists", dotted(ns))
	case versionstore.IcebergView:
		return newError(http.StatusConflict, typeAlreadyExists, "Cannot create namespace %s: a view with the same name exists", dotted(ns))
	}
	return newError(http.StatusConflict, typeAlreadyExists, "Namespace already exists: %s", dotted(ns))
}

func (a *api) loadNamespace(w http.ResponseWriter, r *http.Request) error {
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return err
	}
	ns, err := namespaceVar(r)
	if err != nil {
		return err
	}
	content, err := a.requireNamespace(r.Context(), wr.hash, ns)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, namespaceResponse{Namespace: ns, Properties: namespaceProps(wr.wh, ns, content)})
	return nil
}

func (a *api) namespaceExists(w http.ResponseWriter, r *http.Request) error {
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return err
	}
	ns, err := namespaceVar(r)
	if err != nil {
		return err
	}
	if _, err := a.requireNamespace(r.Context(), wr.hash, ns); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) dropNamespace(w http.ResponseWriter, r *http.Request) error {
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return err
	}
	ns, err := namespaceVar(r)
	if err != nil {
		return err
	}
	branch, err := a.writeBranch(r, wr, policy.ActionDropNamespace, content(ns, policy.TypeNamespace, policy.ChangeDelete))
	if err != nil {
		return err
	}
	ctx := r.Context()
	err = a.retry(ctx, "drop-namespace", func(int) (bool, error) {
		head, err := a.head(branch)
		if err != nil {
			return false, err
		}
		if _, err := a.requireNamespace(ctx, head, ns); err != nil {
			return false, err
		}
		_, err = a.commit(ctx, w, r, branch, head, []versionstore.Operation{{Kind: versionstore.OpDelete, Key: ns}},
			commitDescription{op: "drop-namespace", message: "iceberg: drop namespace " + dotted(ns),
				props: map[string]string{icebergtable.PropNamespace: dotted(ns)}}, noContent())
		ce := conflictOf(err)
		switch {
		case ce == nil:
			return false, err
		case findConflict(ce, versionstore.ConflictNamespaceNotEmpty) != nil:
			return false, newError(http.StatusConflict, typeNamespaceNotEmpty, "Namespace not empty: %s is not empty, it still holds tables, views or namespaces", dotted(ns))
		case findConflict(ce, versionstore.ConflictKeyDoesNotExist) != nil:
			return false, noSuchNamespace(ns)
		}
		return true, commitFailed("Namespace %s changed concurrently: %v", dotted(ns), ce)
	})
	if err != nil {
		return err
	}
	noContent().write(w, &a.joins)
	return nil
}

func (a *api) updateNamespaceProperties(w http.ResponseWriter, r *http.Request) error {
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return err
	}
	ns, err := namespaceVar(r)
	if err != nil {
		return err
	}
	var req struct {
		Removals []string          `json:"removals"`
		Updates  map[string]string `json:"updates"`
	}
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	var both []string
	for _, k := range req.Removals {
		if _, ok := req.Updates[k]; ok {
			both = append(both, k)
		}
	}
	if len(both) > 0 {
		return newError(http.StatusUnprocessableEntity, typeUnprocessable,
			"Cannot update and remove the same properties: %v", both)
	}
	branch, err := a.writeBranch(r, wr, policy.ActionWriteNamespace, content(ns, policy.TypeNamespace, policy.ChangeUpdate))
	if err != nil {
		return err
	}
	ctx := r.Context()
	var resp struct {
		Updated []string `json:"updated"`
		Removed []string `json:"removed"`
		Missing []string `json:"missing,omitempty"`
	}
	var rp *reply
	err = a.retry(ctx, "update-namespace", func(int) (bool, error) {
		head, err := a.head(branch)
		if err != nil {
			return false, err
		}
		cur, err := a.requireNamespace(ctx, head, ns)
		if err != nil {
			return false, err
		}
		next := maps.Clone(cur.Properties)
		if next == nil {
			next = map[string]string{}
		}
		resp.Updated, resp.Removed, resp.Missing = slices.Sorted(maps.Keys(req.Updates)), []string{}, nil
		for _, k := range req.Removals {
			if _, ok := next[k]; ok {
				delete(next, k)
				resp.Removed = append(resp.Removed, k)
			} else {
				resp.Missing = append(resp.Missing, k)
			}
		}
		maps.Copy(next, req.Updates)
		if resp.Updated == nil {
			resp.Updated = []string{}
		}
		rp = jsonReply(http.StatusOK, resp)
		if maps.Equal(next, cur.Properties) || (len(next) == 0 && len(cur.Properties) == 0) {
			return false, nil
		}
		content := &versionstore.Content{Type: versionstore.Namespace, ID: cur.ID, Properties: next}
		_, err = a.commit(ctx, w, r, branch, head, []versionstore.Operation{{Kind: versionstore.OpPut, Key: ns, Content: content}},
			commitDescription{op: "update-namespace", message: "iceberg: update properties of namespace " + dotted(ns),
				props: map[string]string{icebergtable.PropNamespace: dotted(ns)}}, rp)
		if ce := conflictOf(err); ce != nil {
			return true, commitFailed("Namespace %s changed concurrently: %v", dotted(ns), ce)
		}
		return false, err
	})
	if err != nil {
		return err
	}
	rp.write(w, &a.joins)
	return nil
}
