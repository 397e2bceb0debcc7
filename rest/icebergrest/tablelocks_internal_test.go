package icebergrest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
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

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

func TestTableLocksSerialize(t *testing.T) {
	locks := newTableLocks()
	var inside, total atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				unlock, err := locks.lock(t.Context(), []string{"main\x00ns\x1ft"})
				if err != nil {
					t.Error(err)
					return
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d holders of one table's lock", n)
				}
				total.Add(1)
				inside.Add(-1)
				unlock()
			}
		})
	}
	wg.Wait()
	if total.Load() != 16*50 {
		t.Fatalf("%d critical sections, want %d", total.Load(), 16*50)
	}
	if n := locks.size(); n != 0 {
		t.Fatalf("%d keys left in the lock map after every holder unlocked", n)
	}
}

// TestTableLocksOrder takes overlapping sets of keys named in opposite
// orders from many goroutines: sorting the keys must keep them from
// deadlocking.
func TestTableLocksOrder(t *testing.T) {
	locks := newTableLocks()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sets := [][]string{{"a", "b"}, {"b", "a"}, {"c", "b", "a"}, {"a", "c"}, {"b", "b"}}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			for range 200 {
				unlock, err := locks.lock(ctx, sets[(i+rand.IntN(len(sets)))%len(sets)])
				if err != nil {
					t.Errorf("lock: %v (deadlock?)", err)
					return
				}
				unlock()
			}
		})
	}
	wg.Wait()
	if n := locks.size(); n != 0 {
		t.Fatalf("%d keys left in the lock map", n)
	}
}

func TestTableLocksContext(t *testing.T) {
	locks := newTableLocks()
	unlock, err := locks.lock(t.Context(), []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	// "0" is free and sorts first: it must be released again when the
	// wait for "a" gives up.
	if _, err := locks.lock(ctx, []string{"a", "0"}); err == nil {
		t.Fatal("a held lock was taken twice")
	}
	if n := locks.size(); n != 1 {
		t.Fatalf("%d keys in the lock map after a cancelled wait, want 1", n)
	}
	unlock()
	unlock() // idempotent
	if n := locks.size(); n != 0 {
		t.Fatalf("%d keys in the lock map after unlock", n)
	}
	unlock0, err := locks.lock(t.Context(), []string{"0", "a"})
	if err != nil {
		t.Fatalf("locks not free after a cancelled wait: %v", err)
	}
	unlock0()
}

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
		l, err := parseMetadata(loc, []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		want := jsonReply(http.StatusOK, struct {
			MetadataLocation *string           `json:"metadata-location"`
			Metadata         json.RawMessage   `json:"metadata"`
			Config           map[string]string `json:"config"`
		}{&loc, l.raw, map[string]string{}})
		if got := metadataReply(loc, l.body, true); !bytes.Equal(got.body, want.body) {
			t.Errorf("load reply:\n got %s\nwant %s", got.body, want.body)
		}
		want = jsonReply(http.StatusOK, struct {
			MetadataLocation string          `json:"metadata-location"`
			Metadata         json.RawMessage `json:"metadata"`
		}{loc, l.raw})
		if got := metadataReply(loc, l.body, false); !bytes.Equal(got.body, want.body) {
			t.Errorf("commit reply:\n got %s\nwant %s", got.body, want.body)
		}
	}
}

// TestConcurrentAppendsTakeTurns runs writers appending to one table, each
// re-reading and retrying on 409 as engines do. Commits in one process
// take the table's lock, so the store never refuses one (the next writer
// validates against the new head and fails fast), no server-side retry
// happens, every append lands, and every file the cache holds is what a
// reader parsing it from storage would see.
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
	if n := e.api.tables.size(); n != 0 {
		t.Errorf("%d keys left in the table lock map", n)
	}

	// writeMetadata keeps the Metadata it encoded instead of parsing the
	// file again: it must be what parsing the file gives.
	e.api.files.mu.Lock()
	cached := make([]*loaded, 0, len(e.api.files.byLoc))
	for _, l := range e.api.files.byLoc {
		cached = append(cached, l)
	}
	e.api.files.mu.Unlock()
	if len(cached) < writers*appends {
		t.Fatalf("%d files cached, want at least %d", len(cached), writers*appends)
	}
	for _, l := range cached {
		raw, err := readFile(t.Context(), l.location)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := parseMetadata(l.location, raw)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(parsed.raw, l.raw) || !bytes.Equal(parsed.body, l.body) {
			t.Errorf("%s: cached bytes differ from the file", l.location)
		}
		if !parsed.meta.Equals(l.meta) {
			t.Errorf("%s: the cached metadata is not equal to the parsed file", l.location)
		}
		again, err := json.Marshal(l.meta)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, raw) {
			t.Errorf("%s: the cached metadata encodes differently from the file", l.location)
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

func newInternalEnv(t *testing.T) *internalEnv {
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
	a, err := newAPI(Deps{Store: store, Metrics: reg, Warehouses: []Warehouse{{Name: "lake", Location: wh}}})
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
