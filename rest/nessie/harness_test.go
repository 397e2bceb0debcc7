package nessie_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/rest/nessie"
	"github.com/floe-catalog/floe/versionstore"
)

// testEnv is floe's real server (middleware included) with both the
// Nessie API and the Iceberg REST facade mounted over one Pebble store in
// a temporary directory, served on loopback.
type testEnv struct {
	t     *testing.T
	url   string
	store *versionstore.Store
}

func newEnv(t *testing.T) *testEnv {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with configure, if set, adjusting the Nessie API's
// Deps.
func newEnvWith(t *testing.T, configure func(*nessie.Deps)) *testEnv {
	t.Helper()
	s := testserver.Start(t, testserver.Options{Nessie: func(d *nessie.Deps) {
		if configure != nil {
			configure(d)
		}
		if d.Locations == nil {
			// Content in these tests names metadata files the Nessie API
			// never reads, under file:///w; the Iceberg facade's own
			// warehouse is the server's temporary one.
			wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "w", Location: "file:///w"})
			if err != nil {
				t.Fatal(err)
			}
			d.Locations = wh
		}
	}})
	return &testEnv{t: t, url: s.URL, store: s.Store}
}

func (e *testEnv) with(t *testing.T) *testEnv {
	c := *e
	c.t = t
	return &c
}

type response struct {
	status int
	body   []byte
}

// do sends a request to path (relative to the server root); a string
// body is sent as is, anything else as JSON.
func (e *testEnv) do(method, path string, body any, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: res.StatusCode, body: data}
}

// ok sends a Nessie API request (path below /api/v2), checks the status
// and decodes the body into out when out is not nil.
func (e *testEnv) ok(method, path string, body any, status int, out any) response {
	e.t.Helper()
	res := e.do(method, "/api/v2"+path, body)
	if res.status != status {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, res.status, status, res.body)
	}
	if out != nil {
		if err := json.Unmarshal(res.body, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, res.body, err)
		}
	}
	return res
}

// nessieError is the error body.
type nessieError struct {
	Status       int    `json:"status"`
	Reason       string `json:"reason"`
	Message      string `json:"message"`
	ErrorCode    string `json:"errorCode"`
	ErrorDetails *struct {
		Type      string     `json:"type"`
		Conflicts []conflict `json:"conflicts"`
	} `json:"errorDetails"`
}

type conflict struct {
	ConflictType string `json:"conflictType"`
	Key          *key   `json:"key"`
	Message      string `json:"message"`
}

// fail sends a request expected to fail with status and code.
func (e *testEnv) fail(method, path string, body any, status int, code string) nessieError {
	e.t.Helper()
	var ne nessieError
	e.ok(method, path, body, status, &ne)
	if ne.Status != status || ne.ErrorCode != code || ne.Message == "" || ne.Reason == "" {
		e.t.Fatalf("%s %s: error %+v, want status %d code %s", method, path, ne, status, code)
	}
	return ne
}

type key struct {
	Elements []string `json:"elements"`
}

type reference struct {
	Type     string         `json:"type"`
	Name     string         `json:"name"`
	Hash     string         `json:"hash"`
	Metadata map[string]any `json:"metadata"`
}

type content struct {
	Type             string            `json:"type"`
	ID               string            `json:"id,omitempty"`
	MetadataLocation string            `json:"metadataLocation,omitempty"`
	SnapshotID       *int64            `json:"snapshotId,omitempty"`
	SchemaID         *int32            `json:"schemaId,omitempty"`
	SpecID           *int32            `json:"specId,omitempty"`
	SortOrderID      *int32            `json:"sortOrderId,omitempty"`
	VersionID        *int64            `json:"versionId,omitempty"`
	Elements         []string          `json:"elements,omitempty"`
	Properties       map[string]string `json:"properties,omitempty"`
}

func table(loc string, snap int64) *content {
	z := int32(0)
	return &content{Type: "ICEBERG_TABLE", MetadataLocation: loc, SnapshotID: &snap, SchemaID: &z, SpecID: &z, SortOrderID: &z}
}

func namespace(elems ...string) *content {
	return &content{Type: "NAMESPACE", Elements: elems}
}

type operation struct {
	Type    string   `json:"type"`
	Key     key      `json:"key"`
	Content *content `json:"content,omitempty"`
}

func put(c *content, elems ...string) operation {
	return operation{Type: "PUT", Key: key{elems}, Content: c}
}

func del(elems ...string) operation { return operation{Type: "DELETE", Key: key{elems}} }

type commitResponse struct {
	TargetBranch  reference `json:"targetBranch"`
	AddedContents []struct {
		Key       key    `json:"key"`
		ContentID string `json:"contentId"`
	} `json:"addedContents"`
}

// head returns a reference's current hash.
func (e *testEnv) head(ref string) string {
	e.t.Helper()
	var r struct{ Reference reference }
	e.ok(http.MethodGet, "/trees/"+url.PathEscape(ref), nil, http.StatusOK, &r)
	return r.Reference.Hash
}

// commit commits ops on branch at its current head.
func (e *testEnv) commit(branch, msg string, ops ...operation) commitResponse {
	e.t.Helper()
	var res commitResponse
	e.ok(http.MethodPost, "/trees/"+url.PathEscape(branch+"@"+e.head(branch))+"/history/commit",
		map[string]any{"commitMeta": map[string]any{"message": msg}, "operations": ops}, http.StatusOK, &res)
	return res
}

// branch creates a branch from another reference's head.
func (e *testEnv) branch(name, from string) string {
	e.t.Helper()
	h := e.head(from)
	e.ok(http.MethodPost, "/trees?name="+url.QueryEscape(name)+"&type=BRANCH", reference{Type: "BRANCH", Name: from, Hash: h}, http.StatusOK, nil)
	return h
}

func gzipped(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
