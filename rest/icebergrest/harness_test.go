package icebergrest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/versionstore"
)

// testEnv is floe's real server (middleware included) with the Iceberg REST
// facade, served on loopback, over Pebble in a
// temporary directory and a file:// warehouse "lake" in another.
type testEnv struct {
	t     *testing.T
	url   string
	store *versionstore.Store
	dir   string // holds the store ("data") and the warehouse
	whDir string // the warehouse directory
	wh    string // its file:// URL
	// stop shuts the server down and closes the store; it runs at the end
	// of the test if not before.
	stop func()
}

func newEnv(t *testing.T) *testEnv {
	t.Helper()
	return newEnvAt(t, t.TempDir(), nil)
}

// newEnvAt starts a server over the store and warehouse in dir, created if
// new, so a test can stop a server and start another on the same data.
// configure, if set, adjusts the facade's Deps.
func newEnvAt(t *testing.T, dir string, configure func(*icebergrest.Deps)) *testEnv {
	t.Helper()
	return newEnvWith(t, dir, configure, nil)
}

// newEnvWith is newEnvAt that also adjusts the catalog's Config.
func newEnvWith(t *testing.T, dir string, configure func(*icebergrest.Deps), configureCatalog func(*catalog.Config)) *testEnv {
	t.Helper()
	s := testserver.Start(t, testserver.Options{Dir: dir, Catalog: configureCatalog, Iceberg: func(d *icebergrest.Deps) {
		// "other" lies beside "lake", so lake's directory holds only what tests write.
		d.Warehouses = append(d.Warehouses, icebergrest.Warehouse{Name: "other", Location: d.Warehouses[0].Location + "-other"})
		if configure != nil {
			configure(d)
		}
	}})
	return &testEnv{t: t, url: s.URL, store: s.Store, dir: s.Dir, whDir: s.WarehouseDir, wh: s.Warehouse, stop: s.Stop}
}

// with returns e reporting to t, for use inside subtests.
func (e *testEnv) with(t *testing.T) *testEnv {
	c := *e
	c.t = t
	return &c
}

// response is one HTTP answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request. body is sent as is when it is a string, else as
// JSON; nil sends no body.
func (e *testEnv) do(method, path string, body any, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
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
	return response{status: res.StatusCode, header: res.Header, body: data}
}

// ok sends a request that must answer with status and decodes the body
// into out (if non-nil).
func (e *testEnv) ok(method, path string, body any, status int, out any) response {
	e.t.Helper()
	r := e.do(method, path, body)
	if r.status != status {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.body)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			e.t.Fatalf("%s %s: decoding %s: %v", method, path, r.body, err)
		}
	}
	return r
}

type errorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

// checkError asserts an error response: status, type and message prefix
// (or substring, when msg starts with "…").
func checkError(t *testing.T, r response, status int, typ, msg string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if typ == "" {
		return
	}
	var eb errorBody
	if err := json.Unmarshal(r.body, &eb); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	if eb.Error.Type != typ || eb.Error.Code != status {
		t.Fatalf("error %+v, want type %s code %d", eb.Error, typ, status)
	}
	if sub, ok := strings.CutPrefix(msg, "…"); ok {
		if !strings.Contains(eb.Error.Message, sub) {
			t.Fatalf("message %q does not contain %q", eb.Error.Message, sub)
		}
	} else if !strings.HasPrefix(eb.Error.Message, msg) {
		t.Fatalf("message %q does not start with %q", eb.Error.Message, msg)
	}
}

const schemaJSON = `{"type":"struct","schema-id":0,"fields":[
	{"id":1,"name":"id","type":"long","required":true},
	{"id":2,"name":"region","type":"string","required":false}]}`

func createTableBody(name string, extra string) string {
	return `{"name":"` + name + `","schema":` + schemaJSON + extra + `}`
}

// loadTableResult is what the facade answers for create, load and update.
type loadTableResult struct {
	MetadataLocation *string        `json:"metadata-location"`
	Metadata         map[string]any `json:"metadata"`
}

func (e *testEnv) createNamespace(prefix string, levels ...string) {
	e.t.Helper()
	e.ok(http.MethodPost, "/v1/"+prefix+"/namespaces", map[string]any{"namespace": levels}, http.StatusOK, nil)
}

func (e *testEnv) createTable(prefix, ns, name string) loadTableResult {
	e.t.Helper()
	var res loadTableResult
	e.ok(http.MethodPost, "/v1/"+prefix+"/namespaces/"+ns+"/tables", createTableBody(name, ""), http.StatusOK, &res)
	return res
}

func (e *testEnv) loadTable(prefix, ns, name string) loadTableResult {
	e.t.Helper()
	var res loadTableResult
	e.ok(http.MethodGet, "/v1/"+prefix+"/namespaces/"+ns+"/tables/"+name, nil, http.StatusOK, &res)
	return res
}

// fileURLPath is the local path of a file:// URL.
func fileURLPath(t *testing.T, loc string) string {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "file" {
		t.Fatalf("not a file URL: %q", loc)
	}
	return filepath.FromSlash(u.Path)
}
