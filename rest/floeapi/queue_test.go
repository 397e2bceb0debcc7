package floeapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore"
)

// queueServer starts a server with floe's default policy and tokens for
// pat (publishers), rev (reviewers) and alice (no groups), with the
// merge queue stepped by the test (Manual).
func queueServer(t *testing.T) *testserver.Server {
	t.Helper()
	var tokens []map[string]any
	for _, p := range []struct {
		id     string
		groups []string
	}{{"pat", []string{"publishers"}}, {"rev", []string{"reviewers"}}, {"alice", nil}} {
		tokens = append(tokens, map[string]any{"sha256": authn.HashSecret("tok-" + p.id), "principal": p.id, "groups": p.groups})
	}
	b, err := json.Marshal(map[string]any{"tokens": tokens})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return testserver.Start(t, testserver.Options{
		Security: &assemble.Security{Authn: assemble.Authn{TokenFile: file}, Policy: &assemble.Policy{}},
		MergeQueue: func(c *assemble.MergeQueue) {
			rules := mergequeue.DefaultRules()
			rules.Protected = []string{"main"}
			c.Manual, c.Rules = true, &rules
		},
	})
}

// branchWith makes a branch at main's head with one commit putting keys
// (a namespace for one element, a table with schemaID for more).
func branchWith(t *testing.T, s *testserver.Server, name string, schemaID int32, keys ...string) {
	t.Helper()
	ctx := t.Context()
	main, err := s.Store.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	if name != "main" {
		if _, err := s.Store.CreateRef(ctx, versionstore.CreateRefRequest{Name: name, Type: versionstore.Branch, Target: main.Head}); err != nil {
			t.Fatal(err)
		}
	}
	head, _ := s.Store.GetRef(name)
	var ops []versionstore.Operation
	for _, k := range keys {
		key := versionstore.ContentKey(strings.Split(k, "."))
		c := &versionstore.Content{Type: versionstore.Namespace}
		if len(key) > 1 {
			loc := fmt.Sprintf("%s/%s/%s-%d.metadata.json", s.Warehouse, k, strings.ReplaceAll(name, "/", "-"), schemaID)
			testserver.WriteTableMetadata(t, loc, int(schemaID))
			c = &versionstore.Content{Type: versionstore.IcebergTable, MetadataLocation: loc, SchemaID: schemaID}
			if old, err := s.Store.GetContent(ctx, head.Head, key); err == nil {
				c.ID = old.ID
			}
		}
		ops = append(ops, versionstore.Operation{Kind: versionstore.OpPut, Key: key, Content: c})
	}
	if _, err := s.Store.Commit(ctx, versionstore.CommitRequest{Branch: name, Expected: head.Head, Operations: ops, Committer: "test"}); err != nil {
		t.Fatal(err)
	}
}

func process(t *testing.T, s *testserver.Server) {
	t.Helper()
	if _, err := s.Queue.Process(t.Context(), "main"); err != nil {
		t.Fatal(err)
	}
}

// wantError checks an answer in the error model.
func wantError(t *testing.T, what string, status int, body string, wantStatus int, code, text string) {
	t.Helper()
	var eb floeapi.ErrorBody
	if err := json.Unmarshal([]byte(body), &eb); status != wantStatus || err != nil || eb.Error.Code != code || !strings.Contains(eb.Error.Message, text) {
		t.Fatalf("%s: %d %s; want %d %s naming %q", what, status, body, wantStatus, code, text)
	}
}

// TestMergeRequestsHTTP drives /merge-requests through a real server with
// the default policy: who may submit, approve and cancel, idempotent
// submits, filters, the error model, the report and the metrics.
func TestMergeRequestsHTTP(t *testing.T) {
	s := queueServer(t)
	branchWith(t, s, "main", 0, "db", "db.t")
	branchWith(t, s, "ingest/a", 0, "db.a")
	branchWith(t, s, "users/alice/col", 1, "db.t")
	branchWith(t, s, "users/alice/b", 0, "db.b")

	status, body := call(t, s, "alice", http.MethodPost, "/merge-requests", map[string]any{"source": "ingest/a", "target": "main"}, nil)
	wantError(t, "alice submits into main", status, body, http.StatusForbidden, floeapi.CodeForbidden, "main is written only through merges by group publishers")

	var a mergequeue.Request
	status, body = call(t, s, "pat", http.MethodPost, "/merge-requests", map[string]any{"source": "ingest/a", "target": "main", "idempotencyKey": "k"}, nil)
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &a) != nil || a.State != mergequeue.StateQueued || a.Principal != "pat" || a.Class != "ingest" {
		t.Fatalf("pat submits: %d %s", status, body)
	}
	var again mergequeue.Request
	if status, body := call(t, s, "pat", http.MethodPost, "/merge-requests", map[string]any{"source": "ingest/a", "target": "main", "idempotencyKey": "k"}, &again); status != http.StatusOK || again.ID != a.ID {
		t.Fatalf("idempotent submit: %d %s; want 200 with %s", status, body, a.ID)
	}
	status, body = call(t, s, "pat", http.MethodPost, "/merge-requests", map[string]any{"source": "users/alice/b", "target": "main", "idempotencyKey": "k"}, nil)
	wantError(t, "key reused for another merge", status, body, http.StatusConflict, floeapi.CodeConflict, "idempotency key")
	for _, bad := range []struct {
		body any
		want int
	}{
		{map[string]any{"source": "ingest/a"}, http.StatusBadRequest},
		{map[string]any{"source": "ingest/a", "target": "main", "tabels": []string{"x"}}, http.StatusBadRequest},
		{map[string]any{"source": "nope", "target": "main"}, http.StatusNotFound},
		{map[string]any{"source": "ingest/a", "target": "main", "tables": []string{"nodot"}}, http.StatusBadRequest},
	} {
		if status, body := call(t, s, "pat", http.MethodPost, "/merge-requests", bad.body, nil); status != bad.want {
			t.Errorf("submit %v: %d %s; want %d", bad.body, status, body, bad.want)
		}
	}
	process(t, s)

	var got mergequeue.Request
	if status, body := call(t, s, "alice", http.MethodGet, "/merge-requests/"+a.ID, nil, &got); status != http.StatusOK || got.State != mergequeue.StateMerged || got.LandedCommit == "" {
		t.Fatalf("GET the merged request: %d %s", status, body)
	}
	// The process validates with mergecheck: its built-in checks and the
	// bundle's merge rules ran on the candidate that landed.
	checks := map[string]bool{}
	if n := len(got.Validations); n > 0 && got.Validations[n-1].Candidate == got.LandedCommit {
		for _, r := range got.Validations[n-1].Results {
			checks[r.Name] = r.Passed
		}
	}
	for _, name := range []string{"lineage", "schema", "policy"} {
		if passed, ran := checks[name]; !ran || !passed {
			t.Errorf("check %s on the landed candidate: ran %v, passed %v (results %v)", name, ran, passed, checks)
		}
	}
	status, body = call(t, s, "alice", http.MethodGet, "/merge-requests/mr-nope", nil, nil)
	wantError(t, "unknown request", status, body, http.StatusNotFound, floeapi.CodeNotFound, "mr-nope")
	status, body = call(t, s, "pat", http.MethodPost, "/merge-requests/"+a.ID+"/cancel", nil, nil)
	wantError(t, "cancel a merged request", status, body, http.StatusConflict, floeapi.CodeConflict, "merged")

	// A structural change waits for a reviewer.
	var col mergequeue.Request
	status, body = call(t, s, "pat", http.MethodPost, "/merge-requests", map[string]any{"source": "users/alice/col", "target": "main"}, nil)
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &col) != nil {
		t.Fatalf("submit col: %d %s", status, body)
	}
	process(t, s)
	if r, _ := s.Queue.Get(col.ID); r.State != mergequeue.StateReview {
		t.Fatalf("structural request is %s, want review", r.State)
	}
	status, body = call(t, s, "pat", http.MethodPost, "/merge-requests/"+col.ID+"/approve", nil, nil)
	wantError(t, "a publisher approves", status, body, http.StatusForbidden, floeapi.CodeForbidden, "reviewing merge requests requires group admins or reviewers")
	if status, body := call(t, s, "rev", http.MethodPost, "/merge-requests/"+col.ID+"/approve", map[string]any{"reason": "ok"}, &got); status != http.StatusOK || got.State != mergequeue.StateQueued || !got.Approved {
		t.Fatalf("reviewer approves: %d %s", status, body)
	}
	status, body = call(t, s, "rev", http.MethodPost, "/merge-requests/"+col.ID+"/reject", nil, nil)
	wantError(t, "reject a queued request", status, body, http.StatusConflict, floeapi.CodeConflict, "not in review")
	process(t, s)

	// Cancel: the submitter or a reviewer, nobody else.
	var b mergequeue.Request
	status, body = call(t, s, "pat", http.MethodPost, "/merge-requests", map[string]any{"source": "users/alice/b", "target": "main"}, nil)
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &b) != nil {
		t.Fatalf("submit b: %d %s", status, body)
	}
	status, body = call(t, s, "alice", http.MethodPost, "/merge-requests/"+b.ID+"/cancel", nil, nil)
	wantError(t, "alice cancels pat's request", status, body, http.StatusForbidden, floeapi.CodeForbidden, "reviewing merge requests")
	if status, body := call(t, s, "pat", http.MethodPost, "/merge-requests/"+b.ID+"/cancel", map[string]any{"reason": "not today"}, &got); status != http.StatusOK ||
		got.State != mergequeue.StateCancelled || got.Reason != "not today" {
		t.Fatalf("pat cancels: %d %s", status, body)
	}

	var list floeapi.MergeRequestList
	if status, body := call(t, s, "alice", http.MethodGet, "/merge-requests?state=merged&target=main&sourcePrefix=users/", nil, &list); status != http.StatusOK ||
		len(list.Requests) != 1 || list.Requests[0].ID != col.ID {
		t.Fatalf("list merged from users/: %d %s; want only %s", status, body, col.ID)
	}
	if status, body := call(t, s, "alice", http.MethodGet, "/merge-requests?since=1h", nil, &list); status != http.StatusOK || len(list.Requests) != 3 {
		t.Fatalf("list since 1h: %d %s; want 3", status, body)
	}
	status, body = call(t, s, "alice", http.MethodGet, "/merge-requests?limit=x", nil, nil)
	wantError(t, "bad limit", status, body, http.StatusBadRequest, floeapi.CodeBadRequest, "limit")

	var rep mergequeue.Report
	if status, body := call(t, s, "alice", http.MethodGet, "/merge-requests/report?since=24h", nil, &rep); status != http.StatusOK ||
		rep.States[mergequeue.StateMerged] != 2 || rep.States[mergequeue.StateCancelled] != 1 || len(rep.Classes) != 2 {
		t.Fatalf("report: %d %s", status, body)
	}

	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`floe_queue_outcomes_total{class="users",outcome="merged",reason=""} 1`,
		`floe_queue_outcomes_total{class="users",outcome="cancelled",reason="cancelled"} 1`,
		`floe_queue_wait_seconds_count{class="ingest"} 1`,
		`floe_queue_merge_seconds_count{class="users"} 1`,
		`floe_queue_bypass_commits_total{target="main"}`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
