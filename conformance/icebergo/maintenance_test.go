package icebergo

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/housekeeping/maintenance"
	"github.com/floe-catalog/floe/versionstore"
)

// testClock is the maintenance locks' clock in these tests: leases expire
// when the test moves it, never by sleeping.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func withMaintenanceClock(c *testClock) floeOption {
	return func(o *testserver.Options) {
		o.Maintenance = func(m *maintenance.Options) { m.Now = c.Now }
	}
}

// floeAPI calls floe's own API with an optional bearer token and extra
// headers (name, value pairs), returning the status and body.
func (f *floeServer) floeAPI(t *testing.T, method, path, token string, body any, headers ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+f.addr+"/api/floe/v1"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

type floeError struct {
	Error struct {
		Status  int             `json:"status"`
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	} `json:"error"`
}

func decodeJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
}

// rewriteManifests commits iceberg-go's manifest rewrite, a replace
// snapshot, on tbl.
func rewriteManifests(t *testing.T, tbl *table.Table) (*table.Table, error) {
	t.Helper()
	tx := tbl.NewTransaction()
	res, err := tx.RewriteManifests(t.Context())
	if err != nil {
		t.Fatalf("rewrite manifests of %v: %v", tbl.Identifier(), err)
	}
	if res.IsNoOp() {
		t.Fatalf("rewrite manifests of %v: nothing to rewrite", tbl.Identifier())
	}
	return tx.Commit(t.Context())
}

// expireSnapshot commits a snapshot expiry (remove-snapshots) of snapshot
// id through the REST API as the spec spells it. It is sent by hand, not
// with iceberg-go's ExpireSnapshots, which refuses tables whose
// gc.enabled is false (as floe's are) before asking the catalog.
func (f *floeServer) expireSnapshot(t *testing.T, ns, name string, id int64, headers ...string) (int, []byte) {
	t.Helper()
	body := `{"requirements":[],"updates":[{"action":"remove-snapshots","snapshot-ids":[` + jsonInt(id) + `]}]}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
		"http://"+f.addr+"/v1/lake/namespaces/"+url.PathEscape(ns)+"/tables/"+url.PathEscape(name), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func jsonInt(v int64) string { b, _ := json.Marshal(v); return string(b) }

// TestMaintenanceLock drives the lock with iceberg-go writers: while a
// job holds sales.orders' lock, another writer's manifest rewrite (a
// replace snapshot) and snapshot expiry fail with 409 naming the holder,
// appends continue, the holder's own rewrite and expiry (its token in the
// catalog's headers) land, and once the lease expires anyone's do.
func TestMaintenanceLock(t *testing.T) {
	t.Parallel()
	clk := &testClock{now: time.Now()}
	f := startFloe(t, withMaintenanceClock(clk))
	ctx := t.Context()
	cat := f.catalog(t, "lake")
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("sales"), nil); err != nil {
		t.Fatal(err)
	}
	ident := catalog.ToIdentifier("sales", "orders")
	tbl := createTable(t, cat, ident)
	tbl = appendRows(t, tbl, []row{{1, "eu", 1}})
	tbl = appendRows(t, tbl, []row{{2, "us", 2}})
	first := tbl.Metadata().Snapshots()[0].SnapshotID

	status, body := f.floeAPI(t, http.MethodPost, "/maintenance/locks", "",
		map[string]any{"table": []string{"sales", "orders"}, "job": "nightly-compaction", "ttl": "1h"})
	if status != http.StatusCreated {
		t.Fatalf("acquire: %d %s", status, body)
	}
	var lease maintenance.Lease
	decodeJSON(t, body, &lease)
	expires := lease.Expires.UTC().Format(time.RFC3339)

	// A second job skips: 409 in floe's error model, naming the holder.
	status, body = f.floeAPI(t, http.MethodPost, "/maintenance/locks", "",
		map[string]any{"table": []string{"sales", "orders"}, "job": "other-job"})
	var fe floeError
	decodeJSON(t, body, &fe)
	if status != http.StatusConflict || fe.Error.Code != "CONFLICT" || !strings.Contains(fe.Error.Message, `"nightly-compaction"`) {
		t.Fatalf("second acquire: %d %s, want 409 CONFLICT naming the job", status, body)
	}
	var heldBy maintenance.Lock
	decodeJSON(t, fe.Error.Details, &heldBy)
	if heldBy.Holder.Job != "nightly-compaction" || heldBy.ID != lease.ID || !heldBy.Expires.Equal(lease.Expires) {
		t.Fatalf("409 details %+v, want the lease", heldBy)
	}

	// Another writer's maintenance fails fast, naming holder, job and expiry.
	_, err := rewriteManifests(t, tbl)
	if !errors.Is(err, rest.ErrCommitFailed) {
		t.Fatalf("rewrite manifests under another's lock: %v, want CommitFailedException", err)
	}
	for _, want := range []string{"anonymous", `"nightly-compaction"`, expires, "sales.orders", maintenance.TokenHeader} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %s", err, want)
		}
	}
	if status, body := f.expireSnapshot(t, "sales", "orders", first); status != http.StatusConflict ||
		!strings.Contains(string(body), "CommitFailedException") || !strings.Contains(string(body), "snapshot expiry") {
		t.Fatalf("expiry under another's lock: %d %s, want 409 CommitFailedException", status, body)
	}
	// So does a writer with a wrong token.
	wrong := f.catalog(t, "lake", rest.WithHeaders(map[string]string{maintenance.TokenHeader: "fml_not-the-token"}))
	wrongTbl, err := wrong.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rewriteManifests(t, wrongTbl); !errors.Is(err, rest.ErrCommitFailed) {
		t.Fatalf("rewrite with a wrong token: %v, want CommitFailedException", err)
	}

	// Ingestion does not take part in the lock.
	tbl, err = cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tbl = appendRows(t, tbl, []row{{3, "eu", 3}})

	// The holder's maintenance lands.
	holder := f.catalog(t, "lake", rest.WithHeaders(map[string]string{maintenance.TokenHeader: lease.Token}))
	htbl, err := holder.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	htbl, err = rewriteManifests(t, htbl)
	if err != nil {
		t.Fatalf("the holder's rewrite: %v", err)
	}
	if op := htbl.CurrentSnapshot().Summary.Operation; op != table.OpReplace {
		t.Fatalf("the holder's rewrite committed a %s snapshot, want replace", op)
	}
	if status, body := f.expireSnapshot(t, "sales", "orders", first, maintenance.TokenHeader, lease.Token); status != http.StatusOK {
		t.Fatalf("the holder's expiry: %d %s", status, body)
	}
	rowsEqual(t, scanRows(t, htbl, ""), []row{{1, "eu", 1}, {2, "us", 2}, {3, "eu", 3}})

	// Statistics see the snapshots by operation and the lock.
	status, body = f.floeAPI(t, http.MethodGet, "/tables/stats?table=sales.orders&since=1h", "", nil)
	if status != http.StatusOK {
		t.Fatalf("stats: %d %s", status, body)
	}
	var st maintenance.TableStats
	decodeJSON(t, body, &st)
	// The expiry removed the first append: two appends and the rewrite remain.
	if st.Snapshots["append"].Count != 2 || st.Snapshots["replace"].Count != 1 || st.SnapshotsTotal != 3 ||
		st.Current == nil || st.Current.Records == nil || *st.Current.Records != 3 || st.Lock == nil || st.Lock.Holder.Job != "nightly-compaction" {
		t.Fatalf("stats %s", body)
	}

	// A crashed holder's lease expires: anyone's maintenance lands again.
	tbl = appendRows(t, htbl, []row{{4, "us", 4}})
	clk.advance(time.Hour)
	if _, err := rewriteManifests(t, tbl); err != nil {
		t.Fatalf("rewrite after the lease expired: %v", err)
	}
	if status, body := f.floeAPI(t, http.MethodDelete, "/maintenance/locks/"+lease.ID, "", nil, maintenance.TokenHeader, lease.Token); status != http.StatusNotFound {
		t.Fatalf("release of an expired lease: %d %s, want 404", status, body)
	}

	m := f.metrics(t)
	for series, want := range map[string]float64{
		`floe_maintenance_commits_refused_total{kind="rewrite"}`:                 2,
		`floe_maintenance_commits_refused_total{kind="expire"}`:                  1,
		`floe_maintenance_lock_acquisitions_total`:                               1,
		`floe_maintenance_lock_skips_total`:                                      1,
		`floe_iceberg_snapshots_total{operation="append",table="sales.orders"}`:  4,
		`floe_iceberg_snapshots_total{operation="replace",table="sales.orders"}`: 2,
	} {
		if m[series] != want {
			t.Errorf("%s = %v, want %v", series, m[series], want)
		}
	}
}

// TestMaintenanceLockPolicy: with floe's default policy, group ingest
// may hold maintenance locks on ingest/ branches but not on main, which
// answers 403 in floe's error model with the policy's reason.
func TestMaintenanceLockPolicy(t *testing.T) {
	t.Parallel()
	f := startFloe(t, withAuth(t))
	ctx := t.Context()
	if _, err := f.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "ingest/daily", Type: versionstore.Branch, Target: versionstore.NoAncestor}); err != nil {
		t.Fatal(err)
	}
	ingest := f.catalog(t, "lake@ingest/daily", rest.WithCredential("etl:etl-secret"))
	if err := ingest.CreateNamespace(ctx, catalog.ToIdentifier("raw"), nil); err != nil {
		t.Fatal(err)
	}
	createTable(t, ingest, catalog.ToIdentifier("raw", "events"))
	token := f.oauthToken(t, "etl", "etl-secret")

	req := map[string]any{"branch": "main", "table": []string{"raw", "events"}, "job": "compact"}
	status, body := f.floeAPI(t, http.MethodPost, "/maintenance/locks", token, req)
	var fe floeError
	decodeJSON(t, body, &fe)
	if status != http.StatusForbidden || fe.Error.Code != "FORBIDDEN" || fe.Error.Status != http.StatusForbidden ||
		!strings.Contains(fe.Error.Message, "no rule allows maintenance.lock on branch main") {
		t.Fatalf("lock on main by group ingest: %d %s, want 403 FORBIDDEN with the policy's reason", status, body)
	}
	if status, body := f.floeAPI(t, http.MethodPost, "/maintenance/locks", "", req); status != http.StatusUnauthorized {
		t.Fatalf("lock without a token: %d %s, want 401", status, body)
	}
	req["branch"] = "ingest/daily"
	status, body = f.floeAPI(t, http.MethodPost, "/maintenance/locks", token, req)
	if status != http.StatusCreated {
		t.Fatalf("lock on ingest/daily by group ingest: %d %s", status, body)
	}
	var lease maintenance.Lease
	decodeJSON(t, body, &lease)
	if lease.Holder.Principal != "etl-bot" {
		t.Fatalf("holder %+v, want the authenticated principal etl-bot", lease.Holder)
	}
}

// oauthToken gets a bearer token with the client-credentials flow.
func (f *floeServer) oauthToken(t *testing.T, id, secret string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	resp, err := http.PostForm("http://"+f.addr+"/v1/oauth/tokens", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %v", resp.StatusCode, err)
	}
	return tok.AccessToken
}

// TestMaintenanceLockRace: two jobs ask for a free table's lock at once
// through floe's API; exactly one gets it, the other is told who did.
func TestMaintenanceLockRace(t *testing.T) {
	t.Parallel()
	f := startFloe(t)
	cat := f.catalog(t, "lake")
	if err := cat.CreateNamespace(t.Context(), catalog.ToIdentifier("sales"), nil); err != nil {
		t.Fatal(err)
	}
	createTable(t, cat, catalog.ToIdentifier("sales", "orders"))
	for round := range 5 {
		table := []string{"sales", "orders"}
		var (
			wg       sync.WaitGroup
			start    = make(chan struct{})
			statuses [2]int
			bodies   [2][]byte
		)
		for i := range 2 {
			wg.Go(func() {
				<-start
				statuses[i], bodies[i] = f.floeAPI(t, http.MethodPost, "/maintenance/locks", "",
					map[string]any{"table": table, "job": []string{"a", "b"}[i], "ttl": "1m"})
			})
		}
		close(start)
		wg.Wait()
		won, lost := 0, 1
		if statuses[1] == http.StatusCreated {
			won, lost = 1, 0
		}
		if statuses[won] != http.StatusCreated || statuses[lost] != http.StatusConflict {
			t.Fatalf("round %d: answers %d and %d, want one 201 and one 409: %s %s", round, statuses[0], statuses[1], bodies[0], bodies[1])
		}
		var lease maintenance.Lease
		decodeJSON(t, bodies[won], &lease)
		var fe floeError
		decodeJSON(t, bodies[lost], &fe)
		if !strings.Contains(fe.Error.Message, `(job "`+lease.Holder.Job+`")`) {
			t.Fatalf("round %d: the loser was told %q; %q won", round, fe.Error.Message, lease.Holder.Job)
		}
		if status, body := f.floeAPI(t, http.MethodDelete, "/maintenance/locks/"+lease.ID, "", nil, maintenance.TokenHeader, lease.Token); status != http.StatusNoContent {
			t.Fatalf("round %d: release: %d %s", round, status, body)
		}
	}
}
