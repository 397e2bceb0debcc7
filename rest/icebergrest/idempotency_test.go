package icebergrest_test

import (
	"bufio"
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/versionstore"
)

// newKey is a fresh Idempotency-Key, a UUIDv7 as the spec's clients send.
func newKey(t *testing.T) string {
	t.Helper()
	k, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return k.String()
}

// doKeyed sends a request with an Idempotency-Key.
func (e *testEnv) doKeyed(key, method, path string, body any) response {
	e.t.Helper()
	return e.do(method, path, body, "Idempotency-Key", key)
}

// commits is the length of main's history.
func (e *testEnv) commits() int {
	e.t.Helper()
	main, err := e.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		e.t.Fatal(err)
	}
	log, _, err := e.store.Log(e.t.Context(), main.Head, versionstore.LogOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(log)
}

// metric reads one series from /metrics, e.g.
// `floe_iceberg_idempotency_records_total{written="alone"}`; absent is 0.
func (e *testEnv) metric(series string) float64 {
	e.t.Helper()
	r := e.do(http.MethodGet, "/metrics", nil)
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				e.t.Fatalf("metric %s: %v", series, err)
			}
			return f
		}
	}
	return 0
}

const (
	metricReplays      = "floe_iceberg_idempotent_replays_total"
	metricWaits        = "floe_iceberg_idempotency_inflight_waits_total"
	metricReuses       = "floe_iceberg_idempotency_key_reuses_total"
	metricWithCommit   = `floe_iceberg_idempotency_records_total{written="with-commit"}`
	metricRecordsAlone = `floe_iceberg_idempotency_records_total{written="alone"}`
)

// sameResponse asserts that a replay is the original: status, body byte for
// byte, and the headers clients read.
func sameResponse(t *testing.T, got, want response) {
	t.Helper()
	if got.status != want.status || !bytes.Equal(got.body, want.body) {
		t.Fatalf("replay %d %s\nwant %d %s", got.status, got.body, want.status, want.body)
	}
	for _, h := range []string{"Content-Type", "ETag", "X-Content-Type-Options"} {
		if got.header.Get(h) != want.header.Get(h) {
			t.Errorf("replayed %s %q, want %q", h, got.header.Get(h), want.header.Get(h))
		}
	}
}

func TestIdempotencyConfig(t *testing.T) {
	for _, tc := range []struct {
		lifetime time.Duration
		want     string
	}{
		{0, "PT30M"},
		{90 * time.Minute, "PT1H30M"},
		{24 * time.Hour, "PT24H"},
		{1500 * time.Millisecond, "PT1.5S"},
		{-1, ""},
	} {
		t.Run(tc.lifetime.String(), func(t *testing.T) {
			e := newEnvAt(t, t.TempDir(), func(d *icebergrest.Deps) { d.IdempotencyKeyLifetime = tc.lifetime })
			var cfg configResponse
			e.ok(http.MethodGet, "/v1/config", nil, http.StatusOK, &cfg)
			if cfg.IdempotencyKeyLifetime != tc.want {
				t.Fatalf("idempotency-key-lifetime %q, want %q", cfg.IdempotencyKeyLifetime, tc.want)
			}
		})
	}

	// Turned off, keys are ignored: a repeated request runs again.
	e := newEnvAt(t, t.TempDir(), func(d *icebergrest.Deps) { d.IdempotencyKeyLifetime = -1 })
	key := newKey(t)
	e.ok(http.MethodPost, "/v1/lake/namespaces", `{"namespace":["ns"]}`, http.StatusOK, nil)
	body := `{"namespace":["n2"]}`
	if r := e.doKeyed(key, http.MethodPost, "/v1/lake/namespaces", body); r.status != http.StatusOK {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	checkError(t, e.doKeyed(key, http.MethodPost, "/v1/lake/namespaces", body), 409, "AlreadyExistsException", "Namespace already exists: n2")
	checkError(t, e.doKeyed("not-a-uuid", http.MethodPost, "/v1/lake/namespaces", `{"namespace":["n3"]}`), 200, "", "")
}

// TestIdempotentReplay sends every keyed mutation twice with the same key:
// the second answer is the first byte for byte, and the catalog history
// gains nothing.
func TestIdempotentReplay(t *testing.T) {
	viewUpdate := `{"requirements":[],"updates":[` +
		`{"action":"add-view-version","view-version":{"version-id":2,"schema-id":0,"timestamp-ms":1700000000001,"summary":{},` +
		`"representations":[{"type":"sql","sql":"select 2","dialect":"spark"}],"default-namespace":["ns"]}},` +
		`{"action":"set-current-view-version","view-version-id":-1}]}`
	for _, tc := range []struct {
		name         string
		method, path string
		body         func(e *testEnv) any
		status       int
		commits      int // commits the first request makes
	}{
		{"createNamespace", "POST", "/v1/lake/namespaces", func(*testEnv) any { return `{"namespace":["n2"],"properties":{"a":"1"}}` }, 200, 1},
		{"updateProperties", "POST", "/v1/lake/namespaces/ns/properties", func(*testEnv) any { return `{"updates":{"a":"1"},"removals":["zz"]}` }, 200, 1},
		{"updateProperties no-op", "POST", "/v1/lake/namespaces/ns/properties", func(*testEnv) any { return `{"removals":["zz"]}` }, 200, 0},
		{"dropNamespace", "DELETE", "/v1/lake/namespaces/empty", nil, 204, 1},
		{"createTable", "POST", "/v1/lake/namespaces/ns/tables", func(*testEnv) any { return createTableBody("t2", "") }, 200, 1},
		{"createTable staged", "POST", "/v1/lake/namespaces/ns/tables", func(*testEnv) any { return createTableBody("t2", `,"stage-create":true`) }, 200, 0},
		{"updateTable", "POST", "/v1/lake/namespaces/ns/tables/t", func(*testEnv) any {
			return commitBody("", `{"action":"set-properties","updates":{"a":"1"}}`)
		}, 200, 1},
		{"updateTable no-op", "POST", "/v1/lake/namespaces/ns/tables/t", func(*testEnv) any { return commitBody("", "") }, 200, 0},
		{"dropTable", "DELETE", "/v1/lake/namespaces/ns/tables/t?purgeRequested=true", nil, 204, 1},
		{"unregisterTable", "POST", "/v1/lake/namespaces/ns/tables/t/unregister", nil, 200, 1},
		{"registerTable", "POST", "/v1/lake/namespaces/ns/register", func(e *testEnv) any {
			return `{"name":"copy","metadata-location":"` + *e.loadTable("lake", "ns", "t").MetadataLocation + `"}`
		}, 200, 1},
		{"renameTable", "POST", "/v1/lake/tables/rename", func(*testEnv) any {
			return `{"source":{"namespace":["ns"],"name":"t"},"destination":{"namespace":["ns"],"name":"u"}}`
		}, 204, 1},
		{"transactions/commit", "POST", "/v1/lake/transactions/commit", func(*testEnv) any {
			return `{"table-changes":[{"identifier":{"namespace":["ns"],"name":"t"},"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"1"}}]}]}`
		}, 204, 1},
		{"createView", "POST", "/v1/lake/namespaces/ns/views", func(*testEnv) any { return viewBody("v2", "select 1") }, 200, 1},
		{"replaceView", "POST", "/v1/lake/namespaces/ns/views/v", func(*testEnv) any { return viewUpdate }, 200, 1},
		{"dropView", "DELETE", "/v1/lake/namespaces/ns/views/v", nil, 204, 1},
		{"renameView", "POST", "/v1/lake/views/rename", func(*testEnv) any {
			return `{"source":{"namespace":["ns"],"name":"v"},"destination":{"namespace":["ns"],"name":"w"}}`
		}, 204, 1},
		{"registerView", "POST", "/v1/lake/namespaces/ns/register-view", func(e *testEnv) any {
			var v loadViewResult
			e.ok(http.MethodGet, "/v1/lake/namespaces/ns/views/v", nil, http.StatusOK, &v)
			return `{"name":"copy","metadata-location":"` + v.MetadataLocation + `"}`
		}, 200, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.createNamespace("lake", "ns")
			e.createNamespace("lake", "empty")
			e.createTable("lake", "ns", "t")
			e.ok(http.MethodPost, "/v1/lake/namespaces/ns/views", viewBody("v", "select 1"), http.StatusOK, nil)
			var body any
			if tc.body != nil {
				body = tc.body(e)
			}
			key := newKey(t)
			before := e.commits()
			first := e.doKeyed(key, tc.method, tc.path, body)
			if first.status != tc.status {
				t.Fatalf("first: %d %s", first.status, first.body)
			}
			if got := e.commits() - before; got != tc.commits {
				t.Fatalf("the first request made %d commits, want %d", got, tc.commits)
			}
			// Committing requests record their outcome in the commit.
			if got := e.metric(metricWithCommit); got != float64(tc.commits) {
				t.Errorf("outcomes recorded with a commit: %v, want %d", got, tc.commits)
			}
			for range 2 {
				sameResponse(t, e.doKeyed(key, tc.method, tc.path, body), first)
			}
			if got := e.commits() - before; got != tc.commits {
				t.Fatalf("replays made commits: %d in all, want %d", got, tc.commits)
			}
			if got := e.metric(metricReplays); got != 2 {
				t.Errorf("%s = %v, want 2", metricReplays, got)
			}
		})
	}
}

// TestIdempotentRetryAfterRestart is the case keys exist for: the request
// committed but its answer never reached the client (here: the server went
// away). The retry with the same key, on a new server over the same data,
// replays the original answer and commits nothing.
func TestIdempotentRetryAfterRestart(t *testing.T) {
	dir := t.TempDir()
	e := newEnvAt(t, dir, nil)
	e.createNamespace("lake", "ns")
	requests := []struct {
		key          string
		method, path string
		body         string
	}{
		{newKey(t), http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("t", "")},
		{newKey(t), http.MethodPost, "/v1/lake/namespaces/ns/tables/t", commitBody("", `{"action":"set-properties","updates":{"a":"1"}}`)},
		{newKey(t), http.MethodPost, "/v1/lake/transactions/commit",
			`{"table-changes":[{"identifier":{"namespace":["ns"],"name":"t"},"requirements":[],"updates":[{"action":"set-properties","updates":{"b":"2"}}]}]}`},
	}
	var answers []response
	for _, rq := range requests {
		r := e.doKeyed(rq.key, rq.method, rq.path, rq.body)
		if r.status >= 300 {
			t.Fatalf("%s %s: %d %s", rq.method, rq.path, r.status, r.body)
		}
		answers = append(answers, r)
	}
	if got := e.metric(metricWithCommit); got != 3 {
		t.Fatalf("outcomes recorded with their commit: %v, want 3", got)
	}
	if got := e.metric(metricRecordsAlone); got != 0 {
		t.Fatalf("outcomes recorded apart from their commit: %v, want 0", got)
	}
	commits := e.commits()
	e.stop()

	e = newEnvAt(t, dir, nil)
	for i, rq := range requests {
		sameResponse(t, e.doKeyed(rq.key, rq.method, rq.path, rq.body), answers[i])
	}
	if got := e.commits(); got != commits {
		t.Fatalf("retries after the restart made commits: %d, want %d", got, commits)
	}
	if got := e.metric(metricReplays); got != 3 {
		t.Fatalf("%s = %v, want 3", metricReplays, got)
	}
}

// TestIdempotencyKeyReuse checks that a key names one request: sent again
// with another body or another table it is refused and nothing happens;
// on another route or catalog it is another key.
func TestIdempotencyKeyReuse(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createTable("lake", "ns", "t")
	e.createTable("lake", "ns", "u")
	key := newKey(t)
	path := "/v1/lake/namespaces/ns/tables/t"
	first := e.doKeyed(key, http.MethodPost, path, commitBody("", `{"action":"set-properties","updates":{"a":"1"}}`))
	if first.status != http.StatusOK {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	commits := e.commits()
	for _, tc := range []struct{ name, path, body string }{
		{"other body", path, commitBody("", `{"action":"set-properties","updates":{"a":"2"}}`)},
		{"other table", "/v1/lake/namespaces/ns/tables/u", commitBody("", `{"action":"set-properties","updates":{"a":"1"}}`)},
		{"other query", path + "?x=1", commitBody("", `{"action":"set-properties","updates":{"a":"1"}}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			checkError(t, e.doKeyed(key, http.MethodPost, tc.path, tc.body), 422, "UnprocessableEntityException", "Idempotency-Key was already used for a different request")
		})
	}
	if got := e.commits(); got != commits {
		t.Fatalf("refused requests made commits: %d, want %d", got, commits)
	}
	if p := e.loadTable("lake", "ns", "t").Metadata["properties"].(map[string]any)["a"]; p != "1" {
		t.Fatalf("property a = %v after refused requests", p)
	}
	if props, _ := e.loadTable("lake", "ns", "u").Metadata["properties"].(map[string]any); props["a"] != nil {
		t.Fatal("a refused request changed table u")
	}
	if got := e.metric(metricReuses); got != 3 {
		t.Errorf("%s = %v, want 3", metricReuses, got)
	}
	// The original request still replays.
	sameResponse(t, e.doKeyed(key, http.MethodPost, path, commitBody("", `{"action":"set-properties","updates":{"a":"1"}}`)), first)

	// Another route or another catalog prefix scopes the key apart.
	e.ok(http.MethodPost, "/v1/lake/namespaces", `{"namespace":["n2"]}`, http.StatusOK, nil)
	if r := e.doKeyed(key, http.MethodDelete, "/v1/lake/namespaces/n2", nil); r.status != http.StatusNoContent {
		t.Fatalf("same key on another route: %d %s", r.status, r.body)
	}
	if r := e.doKeyed(key, http.MethodPost, "/v1/main%7Clake/namespaces/ns/tables/t", commitBody("", `{"action":"set-properties","updates":{"a":"3"}}`)); r.status != http.StatusOK {
		t.Fatalf("same key under another prefix: %d %s", r.status, r.body)
	}
}

// TestIdempotentConcurrent sends one keyed request from many clients at
// once: exactly one runs, every client gets its answer.
func TestIdempotentConcurrent(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"createTable", "/v1/lake/namespaces/ns/tables", createTableBody("t2", "")},
		{"updateTable", "/v1/lake/namespaces/ns/tables/t", commitBody("", `{"action":"set-properties","updates":{"a":"1"}}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.createNamespace("lake", "ns")
			e.createTable("lake", "ns", "t")
			before := e.commits()
			key := newKey(t)
			const clients = 16
			answers := make([]response, clients)
			var wg sync.WaitGroup
			for i := range clients {
				wg.Go(func() { answers[i] = e.doKeyed(key, http.MethodPost, tc.path, tc.body) })
			}
			wg.Wait()
			if answers[0].status != http.StatusOK {
				t.Fatalf("%d %s", answers[0].status, answers[0].body)
			}
			for _, r := range answers[1:] {
				sameResponse(t, r, answers[0])
			}
			if got := e.commits() - before; got != 1 {
				t.Fatalf("%d commits, want 1", got)
			}
			if got := e.metric(metricReplays); got != clients-1 {
				t.Errorf("%s = %v, want %d", metricReplays, got, clients-1)
			}
			t.Logf("%v of %d requests waited for the one in flight", e.metric(metricWaits), clients-1)
		})
	}
}

// TestIdempotentClientErrors checks which failures are final: a 4xx is
// replayed even after the catalog changed so that the request would now
// succeed; a 403 (a tag is read-only) is not.
func TestIdempotentClientErrors(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createTable("lake", "ns", "t")

	// 404: the namespace does not exist yet.
	key404 := newKey(t)
	create := createTableBody("t", "")
	first := e.doKeyed(key404, http.MethodPost, "/v1/lake/namespaces/later/tables", create)
	checkError(t, first, 404, "NoSuchNamespaceException", "Namespace does not exist: later")
	// 409: a requirement fails.
	key409 := newKey(t)
	stale := commitBody(`{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":42}`, `{"action":"set-properties","updates":{"a":"1"}}`)
	conflict := e.doKeyed(key409, http.MethodPost, "/v1/lake/namespaces/ns/tables/t", stale)
	checkError(t, conflict, 409, "CommitFailedException", "")
	// 400: malformed.
	key400 := newKey(t)
	bad := e.doKeyed(key400, http.MethodPost, "/v1/lake/namespaces", `{"namespace":`)
	checkError(t, bad, 400, "BadRequestException", "malformed JSON")
	// 422: a key both updated and removed.
	key422 := newKey(t)
	both := e.doKeyed(key422, http.MethodPost, "/v1/lake/namespaces/ns/properties", `{"updates":{"a":"1"},"removals":["a"]}`)
	checkError(t, both, 422, "UnprocessableEntityException", "")
	if got := e.metric(metricRecordsAlone); got != 4 {
		t.Errorf("outcomes recorded alone: %v, want 4", got)
	}

	e.createNamespace("lake", "later")
	commits := e.commits()
	sameResponse(t, e.doKeyed(key404, http.MethodPost, "/v1/lake/namespaces/later/tables", create), first)
	sameResponse(t, e.doKeyed(key409, http.MethodPost, "/v1/lake/namespaces/ns/tables/t", stale), conflict)
	sameResponse(t, e.doKeyed(key400, http.MethodPost, "/v1/lake/namespaces", `{"namespace":`), bad)
	sameResponse(t, e.doKeyed(key422, http.MethodPost, "/v1/lake/namespaces/ns/properties", `{"updates":{"a":"1"},"removals":["a"]}`), both)
	if got := e.commits(); got != commits {
		t.Fatalf("replayed errors made commits: %d, want %d", got, commits)
	}
	checkError(t, e.do(http.MethodGet, "/v1/lake/namespaces/later/tables/t", nil), 404, "NoSuchTableException", "")

	// 403 is not final: once v1 is a branch, the same request runs.
	main, err := e.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := e.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "v1", Type: versionstore.Tag, Target: main.Head}); err != nil {
		t.Fatal(err)
	}
	key403 := newKey(t)
	ns := `{"namespace":["n403"]}`
	checkError(t, e.doKeyed(key403, http.MethodPost, "/v1/lake@v1/namespaces", ns), 403, "ForbiddenException", "")
	if err := e.store.DeleteRef(ctx, versionstore.DeleteRefRequest{Name: "v1", Expected: main.Head}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "v1", Type: versionstore.Branch, Target: main.Head}); err != nil {
		t.Fatal(err)
	}
	if r := e.doKeyed(key403, http.MethodPost, "/v1/lake@v1/namespaces", ns); r.status != http.StatusOK {
		t.Fatalf("after a 403 the retry did not run: %d %s", r.status, r.body)
	}
}

// fakeClock is a settable clock for Deps.Now.
type fakeClock struct{ now atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.now.Store(time.Now().UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.now.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.now.Add(int64(d)) }

func TestIdempotencyExpiry(t *testing.T) {
	clock := newFakeClock()
	e := newEnvAt(t, t.TempDir(), func(d *icebergrest.Deps) {
		d.Now = clock.Now
		d.IdempotencyKeyLifetime = 10 * time.Minute
	})
	key := newKey(t)
	body := `{"namespace":["ns"]}`
	first := e.doKeyed(key, http.MethodPost, "/v1/lake/namespaces", body)
	if first.status != http.StatusOK {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	clock.Advance(9 * time.Minute)
	sameResponse(t, e.doKeyed(key, http.MethodPost, "/v1/lake/namespaces", body), first)
	clock.Advance(time.Minute)
	// Expired: the request runs again, and finds the namespace there.
	checkError(t, e.doKeyed(key, http.MethodPost, "/v1/lake/namespaces", body), 409, "AlreadyExistsException", "Namespace already exists: ns")
}

func TestIdempotencyBadKey(t *testing.T) {
	e := newEnv(t)
	commits := e.commits()
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"short", []string{"abc"}},
		{"long", []string{uuid.NewString() + "0"}},
		{"not hex", []string{"zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz"}},
		{"no dashes", []string{strings.ReplaceAll(uuid.NewString(), "-", "") + "abcd"}},
		{"two", []string{uuid.NewString(), uuid.NewString()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/v1/lake/namespaces", strings.NewReader(`{"namespace":["ns"]}`))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.keys {
				req.Header.Add("Idempotency-Key", k)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var buf bytes.Buffer
			if _, err := buf.ReadFrom(res.Body); err != nil {
				t.Fatal(err)
			}
			checkError(t, response{status: res.StatusCode, header: res.Header, body: buf.Bytes()}, 400, "BadRequestException", "…Idempotency-Key")
		})
	}
	if got := e.commits(); got != commits {
		t.Fatalf("requests with bad keys made commits: %d, want %d", got, commits)
	}
	// Keys are UUIDs: case does not matter.
	key := newKey(t)
	first := e.doKeyed(strings.ToUpper(key), http.MethodPost, "/v1/lake/namespaces", `{"namespace":["ns"]}`)
	if first.status != http.StatusOK {
		t.Fatalf("%d %s", first.status, first.body)
	}
	sameResponse(t, e.doKeyed(key, http.MethodPost, "/v1/lake/namespaces", `{"namespace":["ns"]}`), first)
}
