package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCLIQueue drives `floe queue` against a real `floe serve`: a
// submitted request merges (--wait), shows in list, show and report; a
// schema change waits in review until approved; a merged request
// cannot be cancelled.
func TestCLIQueue(t *testing.T) {
	e := newCLIEnv(t)
	e.realMetadata = true
	e.put("main", "create db.t1", "v1", "db", "db.t1")
	e.ok(t, "branch", "create", "ingest/a")
	e.put("ingest/a", "add db.t2", "v1", "db.t2")

	out := e.ok(t, "queue", "submit", "ingest/a", "--into", "main", "--wait", "--idempotency-key", "k1")
	if !strings.Contains(out, ": merged (") {
		t.Fatalf("queue submit --wait:\n%s", out)
	}
	id := regexp.MustCompile(`mr-[0-9a-f]+`).FindString(out)
	if id == "" {
		t.Fatalf("no request id in:\n%s", out)
	}
	// The retried submit (same key) answers the same request, though the
	// merged source branch is gone now.
	if out := e.ok(t, "queue", "submit", "ingest/a", "--idempotency-key", "k1"); !strings.Contains(out, id) || !strings.Contains(out, "merged") {
		t.Errorf("retried submit:\n%s", out)
	}
	if out := e.ok(t, "queue", "list", "--state", "merged"); !strings.Contains(out, id) || !strings.Contains(out, "ingest/a") {
		t.Errorf("queue list --state merged:\n%s", out)
	}
	if out := e.ok(t, "queue", "list", "--state", "failed"); strings.Contains(out, id) {
		t.Errorf("queue list --state failed lists a merged request:\n%s", out)
	}
	out = e.ok(t, "queue", "show", id)
	for _, want := range []string{"queued -> validating by floe-queue", "validating -> merged", "landed as", "dropped source branch ingest/a"} {
		if !strings.Contains(out, want) {
			t.Errorf("queue show lacks %q:\n%s", want, out)
		}
	}
	e.fails(t, []string{"queue", "cancel", id}, "request "+id+" is merged")

	// A schema change goes to review.
	e.ok(t, "branch", "create", "users/alex/col")
	e.putTable("users/alex/col", "db.t1", "v2", 1)
	out = e.ok(t, "queue", "submit", "users/alex/col", "--json")
	var r struct{ ID, State string }
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	waitState(t, e, r.ID, "review")
	if out := e.ok(t, "queue", "approve", r.ID, "--reason", "looks right"); !strings.Contains(out, "queued") {
		t.Errorf("queue approve:\n%s", out)
	}
	if out := e.ok(t, "queue", "watch", r.ID); !strings.Contains(out, "merged") || !strings.Contains(out, "looks right") {
		t.Errorf("queue watch:\n%s", out)
	}

	out = e.ok(t, "queue", "report", "--since", "1h")
	// The schema change is no class of its own: only the source changed
	// the table, a fast-forward.
	for _, want := range []string{"CLASS", "ingest", "users", "1 fast-forward"} {
		if !strings.Contains(out, want) {
			t.Errorf("queue report lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "1 fast-forward"); n != 2 {
		t.Errorf("queue report: %d classes of 1 fast-forward, want 2:\n%s", n, out)
	}
	out = e.ok(t, "queue", "report", "--json")
	var rep struct {
		Classes []struct {
			Class string
			Count int
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Classes) != 2 {
		t.Errorf("queue report --json: %v\n%s", err, out)
	}
}

// putTable commits one table with a schema id on branch.
func (e *cliEnv) putTable(branch, key, version string, schemaID int) {
	e.t.Helper()
	elems := strings.Split(key, ".")
	content := map[string]any{"type": "ICEBERG_TABLE", "snapshotId": 1, "schemaId": schemaID, "specId": 0, "sortOrderId": 0,
		"metadataLocation": e.writeMetadata(key, version, schemaID)}
	var entries struct{ Entries []struct{ ContentID string } }
	e.api(http.MethodGet, "/trees/"+url.PathEscape(branch)+"/entries?key="+url.QueryEscape(key), nil, &entries)
	if len(entries.Entries) == 1 {
		content["id"] = entries.Entries[0].ContentID
	}
	ops := []any{map[string]any{"type": "PUT", "key": map[string]any{"elements": elems}, "content": content}}
	e.api(http.MethodPost, "/trees/"+url.PathEscape(branch+"@"+e.head(branch))+"/history/commit",
		map[string]any{"commitMeta": map[string]any{"message": "change " + key, "author": "alex"}, "operations": ops}, nil)
}

// waitState polls a request until it is in state.
func waitState(t *testing.T, e *cliEnv, id, state string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		out := e.ok(t, "queue", "show", id, "--json")
		var r struct{ State string }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.State == state {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("request %s never reached %s", id, state)
}
