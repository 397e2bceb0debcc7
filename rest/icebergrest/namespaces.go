package icebergrest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"

	"github.com/floe-catalog/floe/catalog"
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

// requireNamespace fails with 404 unless ns is a namespace at the commit.
func (a *api) requireNamespace(ctx context.Context, at versionstore.Hash, ns []string) (*versionstore.Content, error) {
	return a.catalog.RequireNamespace(ctx, at, ns)
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
	if err := catalog.CheckNamespaceCreate(req.Namespace); err != nil {
		return err
	}
	branch, err := a.writeBranch(r, wr, policy.ActionCreateNamespace, content(req.Namespace, policy.TypeNamespace, policy.ChangeCreate))
	if err != nil {
		return err
	}
	_, err = a.write(w, r, wr, branch, func(done *catalog.Written) *reply {
		return jsonReply(http.StatusOK, namespaceResponse{Namespace: req.Namespace, Properties: namespaceProps(wr.wh, req.Namespace, done.Content)})
	}, func(ctx context.Context, cw catalog.Write) (*catalog.Written, error) {
		return a.catalog.CreateNamespace(ctx, cw, req.Namespace, req.Properties)
	})
	return err
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
	_, err = a.write(w, r, wr, branch, func(*catalog.Written) *reply { return noContent() }, func(ctx context.Context, cw catalog.Write) (*catalog.Written, error) {
		return a.catalog.DropNamespace(ctx, cw, ns)
	})
	return err
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
	if err := catalog.CheckPropertyChanges(req.Removals, req.Updates); err != nil {
		return err
	}
	branch, err := a.writeBranch(r, wr, policy.ActionWriteNamespace, content(ns, policy.TypeNamespace, policy.ChangeUpdate))
	if err != nil {
		return err
	}
	_, err = a.write(w, r, wr, branch, func(done *catalog.Written) *reply {
		return jsonReply(http.StatusOK, struct {
			Updated []string `json:"updated"`
			Removed []string `json:"removed"`
			Missing []string `json:"missing,omitempty"`
		}{done.Properties.Updated, done.Properties.Removed, done.Properties.Missing})
	}, func(ctx context.Context, cw catalog.Write) (*catalog.Written, error) {
		return a.catalog.UpdateNamespaceProperties(ctx, cw, ns, req.Removals, req.Updates)
	})
	return err
}
