package icebergrest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// TestMetadataReplyMatchesJSONReply checks that a reply concatenated from
// a file's body is byte for byte what encoding/json makes of the same
// answer, for a file written indented and with characters encoding/json
// escapes, as files from other writers may be.
func TestMetadataReplyMatchesJSONReply(t *testing.T) {
	e := newInternalEnv(t)
	e.call(t, http.MethodPost, "/v1/lake/namespaces", `{"namespace":["ns"]}`, http.StatusOK)
	e.call(t, http.MethodPost, "/v1/lake/namespaces/ns/tables",
		`{"name":"t","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]},`+
			`"properties":{"comment":"a <b> & \"c\"","unicode":"\u2028é"}}`, http.StatusOK)
	var res struct {
		Location string          `json:"metadata-location"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(e.call(t, http.MethodGet, "/v1/lake/namespaces/ns/tables/t", "", http.StatusOK), &res); err != nil {
		t.Fatal(err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, res.Metadata, "", "  "); err != nil {
		t.Fatal(err)
	}
	// Unescape what encoding/json escaped, as another writer might not
	// have escaped it.
	raw := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(indented.String())
	for _, loc := range []string{res.Location, "file:///lake/a&b/<x>/00001-x.metadata.json"} {
		file, err := icebergtable.ParseTableMetadata(loc, []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		want := jsonReply(http.StatusOK, struct {
			MetadataLocation *string           `json:"metadata-location"`
			Metadata         json.RawMessage   `json:"metadata"`
			Config           map[string]string `json:"config"`
		}{&loc, file.Raw, map[string]string{}})
		if got := metadataReply(loc, file.JSON, []byte("{}")); !bytes.Equal(got.bodyBytes(), want.bodyBytes()) {
			t.Errorf("load reply:\n got %s\nwant %s", got.bodyBytes(), want.bodyBytes())
		}
		want = jsonReply(http.StatusOK, struct {
			MetadataLocation string          `json:"metadata-location"`
			Metadata         json.RawMessage `json:"metadata"`
		}{loc, file.Raw})
		if got := metadataReply(loc, file.JSON, nil); !bytes.Equal(got.bodyBytes(), want.bodyBytes()) {
			t.Errorf("commit reply:\n got %s\nwant %s", got.bodyBytes(), want.bodyBytes())
		}
		// Sent in pieces, it arrives whole, with its length announced.
		rec := httptest.NewRecorder()
		metadataReply(loc, file.JSON, nil).write(rec, &joinBuffers{})
		if !bytes.Equal(rec.Body.Bytes(), want.bodyBytes()) || rec.Header().Get("Content-Length") != fmt.Sprint(len(want.bodyBytes())) {
			t.Errorf("written reply: Content-Length %q, body\n%s\nwant %d bytes\n%s",
				rec.Header().Get("Content-Length"), rec.Body.Bytes(), len(want.bodyBytes()), want.bodyBytes())
		}
	}
}

// countingListener counts the writes made to the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestReplyInPiecesIsOneWrite: an answer carrying a metadata file in
// pieces reaches the socket in two writes (net/http sends its first 4 KiB,
// headers included, on its own), not one per piece; each write is a
// system call and, on loopback, another wake-up of the client. A body in
// one piece takes the same, and both arrive whole.
func TestReplyInPiecesIsOneWrite(t *testing.T) {
	metadata := []byte(`{"format-version":2,"properties":{"k":"` + strings.Repeat("v", 22<<10) + `"}}`)
	joins := &joinBuffers{}
	var writes atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pieces" {
			metadataReply("file:///lake/t/metadata/00001-x.metadata.json", metadata, nil).write(w, joins)
			return
		}
		rawJSONReply(http.StatusOK, metadataReply("file:///lake/t/metadata/00001-x.metadata.json", metadata, nil).bodyBytes()).write(w, joins)
	}))
	srv.Listener = countingListener{Listener: srv.Listener, writes: &writes}
	srv.Start()
	defer srv.Close()
	want := metadataReply("file:///lake/t/metadata/00001-x.metadata.json", metadata, nil).bodyBytes()
	for _, path := range []string{"/pieces", "/whole", "/pieces"} {
		before := writes.Load()
		res, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, want) || res.ContentLength != int64(len(want)) {
			t.Fatalf("%s: %d bytes, Content-Length %d, want %d bytes", path, len(body), res.ContentLength, len(want))
		}
		if n := writes.Load() - before; n > 2 {
			t.Errorf("%s: the answer took %d socket writes, want at most 2", path, n)
		}
	}
}

// TestConcurrentAppendsTakeTurns runs writers appending to one table, each
// re-reading and retrying on 409 as engines do. Commits in one process
// take the table's lock, so the store never refuses one (the next writer
// validates against the new head and fails fast), no server-side retry
// happens, and every append lands.
func TestConcurrentAppendsTakeTurns(t *testing.T) {
	e := newInternalEnv(t)
	e.call(t, http.MethodPost, "/v1/lake/namespaces", `{"namespace":["ns"]}`, http.StatusOK)
	e.call(t, http.MethodPost, "/v1/lake/namespaces/ns/tables",
		`{"name":"t","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]},`+
			`"properties":{"comment":"<&>"}}`, http.StatusOK)
	const writers, appends = 6, 5
	path := "/v1/lake/namespaces/ns/tables/t"
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range appends {
				for attempt := 0; ; attempt++ {
					if attempt > 1000 {
						t.Errorf("writer %d append %d: still refused after %d attempts", w, i, attempt)
						return
					}
					st := e.state(t, path)
					status, body := e.do(t, http.MethodPost, path, appendRequest(st, int64(w*1000+i+1)))
					if status == http.StatusOK {
						break
					}
					if status != http.StatusConflict {
						t.Errorf("writer %d append %d: %d %s", w, i, status, body)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if st := e.state(t, path); len(st.Metadata.Snapshots) != writers*appends {
		t.Fatalf("%d snapshots after %d appends", len(st.Metadata.Snapshots), writers*appends)
	}
	if n := e.counter(t, "floe_iceberg_commit_conflicts_total"); n != 0 {
		t.Errorf("the store refused %v commits of writers in one process", n)
	}
	if n := e.counter(t, "floe_iceberg_commit_retries_total"); n != 0 {
		t.Errorf("%v server-side retries of writers in one process", n)
	}

	// Every file written is cached, so the next commit reads none; that
	// the cached form equals the file is icebergtable's
	// TestWrittenMetadataEqualsParsed.
	if n := e.api.catalog.MetadataCache().Len(); n < writers*appends {
		t.Fatalf("%d files cached, want at least %d", n, writers*appends)
	}
}

// TestMetadataCacheBytes checks catalog.Config.MetadataCacheBytes reaches
// the facade's cache:
// a budget smaller than any metadata file keeps none, a negative one turns
// the cache off, and tables load and commit either way.
func TestMetadataCacheBytes(t *testing.T) {
	for _, tc := range []struct {
		bytes  int64
		cached bool
	}{{0, true}, {100, false}, {-1, false}} {
		e := newInternalEnv(t, func(_ *Deps, c *catalog.Config) { c.MetadataCacheBytes = tc.bytes })
		if (e.api.catalog.MetadataCache() == nil) != (tc.bytes < 0) {
			t.Fatalf("MetadataCacheBytes %d: cache %v", tc.bytes, e.api.catalog.MetadataCache())
		}
		e.call(t, http.MethodPost, "/v1/lake/namespaces", `{"namespace":["ns"]}`, http.StatusOK)
		e.call(t, http.MethodPost, "/v1/lake/namespaces/ns/tables",
			`{"name":"t","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}`, http.StatusOK)
		path := "/v1/lake/namespaces/ns/tables/t"
		e.call(t, http.MethodPost, path, appendRequest(e.state(t, path), 1), http.StatusOK)
		if st := e.state(t, path); len(st.Metadata.Snapshots) != 1 {
			t.Fatalf("MetadataCacheBytes %d: %d snapshots after one append", tc.bytes, len(st.Metadata.Snapshots))
		}
		if got := e.api.catalog.MetadataCache().Len() > 0; got != tc.cached {
			t.Errorf("MetadataCacheBytes %d: %d files cached (%d bytes)", tc.bytes, e.api.catalog.MetadataCache().Len(), e.api.catalog.MetadataCache().Bytes())
		}
		if e.api.catalog.MetadataCache().Bytes() > max(tc.bytes, 0) && tc.bytes != 0 {
			t.Errorf("MetadataCacheBytes %d: the cache holds %d bytes", tc.bytes, e.api.catalog.MetadataCache().Bytes())
		}
	}
}

// internalEnv is the facade alone on a router, for tests that look at its
// state.
type internalEnv struct {
	api *api
	reg *prometheus.Registry
	url string
}

func newInternalEnv(t *testing.T, opts ...func(*Deps, *catalog.Config)) *internalEnv {
	t.Helper()
	dir := t.TempDir()
	be, err := pebblebackend.Open(filepath.Join(dir, "data"), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := versionstore.Open(t.Context(), be, versionstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wh := (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(dir, "warehouse"))}).String()
	reg := prometheus.NewRegistry()
	deps := Deps{Store: store, Metrics: reg, Warehouses: []Warehouse{{Name: "lake", Location: wh}}}
	catCfg := catalog.Config{Warehouses: []catalog.Warehouse{{Name: "lake", Location: wh}}}
	for _, o := range opts {
		o(&deps, &catCfg)
	}
	if deps.Catalog, err = catalog.New(store, catCfg, catalog.Options{}); err != nil {
		t.Fatal(err)
	}
	a, err := newAPI(deps)
	if err != nil {
		t.Fatal(err)
	}
	r := mux.NewRouter().UseEncodedPath()
	a.routes(r)
	hs := httptest.NewServer(r)
	t.Cleanup(func() {
		hs.Close()
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	return &internalEnv{api: a, reg: reg, url: hs.URL}
}

func (e *internalEnv) do(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (e *internalEnv) call(t *testing.T, method, path, body string, want int) []byte {
	t.Helper()
	status, b := e.do(t, method, path, body)
	if status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, status, b, want)
	}
	return b
}

type appendState struct {
	Metadata struct {
		UUID      string `json:"table-uuid"`
		Location  string `json:"location"`
		Current   *int64 `json:"current-snapshot-id"`
		LastSeq   int64  `json:"last-sequence-number"`
		Snapshots []struct {
			ID int64 `json:"snapshot-id"`
		} `json:"snapshots"`
	} `json:"metadata"`
}

func (e *internalEnv) state(t *testing.T, path string) *appendState {
	t.Helper()
	var st appendState
	if err := json.Unmarshal(e.call(t, http.MethodGet, path, "", http.StatusOK), &st); err != nil {
		t.Fatal(err)
	}
	if st.Metadata.Current != nil && *st.Metadata.Current < 0 {
		st.Metadata.Current = nil
	}
	return &st
}

// appendRequest is an engine's append on top of st: a new snapshot, main
// moved to it, and the requirement that main has not moved since st.
func appendRequest(st *appendState, id int64) string {
	parent, parentField := "null", ""
	if p := st.Metadata.Current; p != nil {
		parent = fmt.Sprint(*p)
		parentField = `"parent-snapshot-id":` + parent + ","
	}
	seq := st.Metadata.LastSeq + 1
	return fmt.Sprintf(`{"requirements":[{"type":"assert-table-uuid","uuid":%q},{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":%s}],`+
		`"updates":[{"action":"add-snapshot","snapshot":{"snapshot-id":%d,%s"sequence-number":%d,"timestamp-ms":%d,`+
		`"manifest-list":"%s/metadata/snap-%d.avro","summary":{"operation":"append"},"schema-id":0}},`+
		`{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":%d}]}`,
		st.Metadata.UUID, parent, id, parentField, seq, time.Now().UnixMilli(), st.Metadata.Location, id, id)
}

// counter sums a counter's series across its labels.
func (e *internalEnv) counter(t *testing.T, name string) float64 {
	t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
