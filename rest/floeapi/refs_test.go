package floeapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/housekeeping/refretention"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore"
)

// securedServer starts a server outside dev mode with floe's default
// policy, static tokens for carol (admins), alice and dave (no groups),
// the retention clock at *clock, and "release/" protected.
func securedServer(t *testing.T, clock *atomic.Int64) *testserver.Server {
	t.Helper()
	var tokens []map[string]any
	for _, p := range []struct {
		id     string
		groups []string
	}{{"carol", []string{"admins"}}, {"alice", nil}, {"dave", nil}} {
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
	cfg := refretention.DefaultConfig()
	cfg.Protected = []string{"release/"}
	return testserver.Start(t, testserver.Options{
		Security:     &assemble.Security{Authn: assemble.Authn{TokenFile: file}, Policy: &assemble.Policy{}},
		RefRetention: &assemble.RefRetention{Config: &cfg},
		Deps:         func(d *assemble.Deps) { d.RefRetentionNow = func() time.Time { return time.Unix(0, clock.Load()) } },
	})
}

// call sends a request to floe's API as principal (the token "tok-"+who)
// and decodes a JSON answer into out when it is 200.
func call(t *testing.T, s *testserver.Server, who, method, path string, body any, out any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+floeapi.Prefix+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok-"+who)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
	return resp.StatusCode, string(data)
}

func createRef(t *testing.T, s *testserver.Server, name string, typ versionstore.RefType) *versionstore.Ref {
	t.Helper()
	ref, err := s.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: name, Type: typ, Target: versionstore.NoAncestor, Principal: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func byName(list floeapi.RefList) map[string]floeapi.RefStatus {
	m := map[string]floeapi.RefStatus{}
	for _, r := range list.References {
		m[r.Name] = r
	}
	return m
}

// TestRefExpiry drives retention through a real server with the default
// policy: per-prefix defaults, own settings, who may change them, and an
// expiry run past an ingest/ branch's age that deletes it (and a tag with
// an age of its own) through the store, never main, a protected branch or
// another tag.
func TestRefExpiry(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	s := securedServer(t, &clock)
	ingest := createRef(t, s, "ingest/shard-07", versionstore.Branch)
	createRef(t, s, "transform/daily-agg", versionstore.Branch)
	createRef(t, s, "users/alice/fix", versionstore.Branch)
	createRef(t, s, "release/2026", versionstore.Branch)
	createRef(t, s, "dev", versionstore.Branch)
	createRef(t, s, "v1", versionstore.Tag)
	createRef(t, s, "v2", versionstore.Tag)

	var list floeapi.RefList
	if st, body := call(t, s, "dave", http.MethodGet, "/refs", nil, &list); st != http.StatusOK {
		t.Fatalf("GET /refs as dave: %d %s", st, body)
	}
	refs := byName(list)
	in := refs["ingest/shard-07"]
	if in.Retention.MaxAge != refretention.Duration(48*time.Hour) || in.Retention.MaxAgeSource != "prefix ingest/" ||
		in.ExpiresAt == nil || !in.ExpiresAt.Equal(ingest.Created.Add(48*time.Hour)) || in.Expired {
		t.Fatalf("ingest/shard-07: %+v; want the ingest/ default of 2d, expiring 2d after creation", in)
	}
	if m := refs["main"]; m.ExpiresAt != nil || !m.Retention.Protected || m.Retention.MaxAgeSource != "main" {
		t.Fatalf("main: %+v; want protected, never expiring", m)
	}
	if d := refs["dev"]; d.ExpiresAt != nil || d.Retention.MaxAgeSource != "default" {
		t.Fatalf("dev: %+v; no rule matches it, so it never expires", d)
	}
	if v := refs["v1"]; v.ExpiresAt != nil || v.Retention.MaxAgeSource != "tag" {
		t.Fatalf("v1: %+v; tags never expire by default", v)
	}

	// Who may change retention: a ref management write on the ref.
	week := refretention.Duration(7 * 24 * time.Hour)
	hour := refretention.Duration(time.Hour)
	for _, c := range []struct {
		who, ref string
		set      refretention.Settings
		status   int
		reason   string
	}{
		{"dave", "transform%2Fdaily-agg", refretention.Settings{MaxAge: &week}, http.StatusForbidden, "no rule allows ref.retention on branch transform/daily-agg"},
		{"carol", "main", refretention.Settings{KeepHistory: &week}, http.StatusForbidden, "main is written only through merges"},
		{"alice", "v2", refretention.Settings{MaxAge: &hour}, http.StatusForbidden, "tags are immutable except for group admins"},
		{"carol", "release%2F2026", refretention.Settings{MaxAge: &week}, http.StatusBadRequest, "protected prefix"},
		{"carol", "nope", refretention.Settings{MaxAge: &week}, http.StatusNotFound, "nope"},
		{"carol", "transform%2Fdaily-agg", refretention.Settings{MaxAge: &hour}, http.StatusOK, ""},
		{"alice", "users%2Falice%2Ffix", refretention.Settings{KeepHistory: &week}, http.StatusOK, ""},
		{"carol", "v2", refretention.Settings{MaxAge: &hour}, http.StatusOK, ""},
	} {
		st, body := call(t, s, c.who, http.MethodPut, "/refs/"+c.ref+"/retention", c.set, nil)
		if st != c.status || !strings.Contains(body, c.reason) {
			t.Errorf("PUT %s retention as %s: %d %s; want %d with %q", c.ref, c.who, st, body, c.status, c.reason)
		}
	}
	var one floeapi.RefStatus
	if st, body := call(t, s, "dave", http.MethodGet, "/refs/transform%2Fdaily-agg/retention", nil, &one); st != http.StatusOK ||
		one.Retention.MaxAge != hour || one.Retention.MaxAgeSource != "own" || one.Own.MaxAge == nil {
		t.Fatalf("GET transform/daily-agg retention: %d %s", st, body)
	}
	if st, body := call(t, s, "carol", http.MethodDelete, "/refs/transform%2Fdaily-agg/retention", nil, &one); st != http.StatusOK ||
		one.Retention.MaxAge != week || one.Retention.MaxAgeSource != "prefix transform/" {
		t.Fatalf("DELETE transform/daily-agg retention: %d %s; want the prefix default back", st, body)
	}
	if st, body := call(t, s, "dave", http.MethodPost, "/refs/expire", nil, nil); st != http.StatusForbidden ||
		!strings.Contains(body, "admin.refs.expire requires group admins") {
		t.Fatalf("expiry run as dave: %d %s; want 403", st, body)
	}

	// Three days on: ingest/shard-07 (2d) and v2 (1h of its own) are
	// expired; a dry run deletes nothing.
	clock.Add(int64(72 * time.Hour))
	var res floeapi.ExpireResult
	if st, body := call(t, s, "carol", http.MethodPost, "/refs/expire?dryRun=true", nil, &res); st != http.StatusOK {
		t.Fatalf("dry run: %d %s", st, body)
	}
	if names := expiredNames(res); names != "ingest/shard-07 v2" || !res.DryRun {
		t.Fatalf("dry run expired %q, want ingest/shard-07 v2", names)
	}
	if _, err := s.Store.GetRef("ingest/shard-07"); err != nil {
		t.Fatalf("a dry run deleted ingest/shard-07: %v", err)
	}
	if st, body := call(t, s, "carol", http.MethodPost, "/refs/expire", nil, &res); st != http.StatusOK || expiredNames(res) != "ingest/shard-07 v2" {
		t.Fatalf("expiry run: %d %s", st, body)
	}
	for _, name := range []string{"ingest/shard-07", "v2"} {
		if _, err := s.Store.GetRef(name); err == nil {
			t.Errorf("%s survived its expiry", name)
		}
	}
	for _, name := range []string{"main", "release/2026", "transform/daily-agg", "users/alice/fix", "dev", "v1"} {
		if _, err := s.Store.GetRef(name); err != nil {
			t.Errorf("%s was deleted: %v", name, err)
		}
	}
	log, _, err := s.Store.RefLog(t.Context(), "ingest/shard-07", 10, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) == 0 || log[0].Op != versionstore.RefLogDelete || log[0].From != ingest.Head ||
		!strings.HasPrefix(log[0].Principal, refretention.Principal+": expired by retention (max age 2d from prefix ingest/") {
		t.Fatalf("reference log of ingest/shard-07: %+v; want its deletion by %s with the reason", log, refretention.Principal)
	}

	// Far in the future, main and the protected branch still stand.
	clock.Add(int64(10 * 365 * 24 * time.Hour))
	if st, body := call(t, s, "carol", http.MethodPost, "/refs/expire", nil, &res); st != http.StatusOK ||
		expiredNames(res) != "transform/daily-agg users/alice/fix" {
		t.Fatalf("expiry run ten years on: %d %s; want the transform/ and users/ branches", st, body)
	}
	for _, name := range []string{"main", "release/2026", "dev", "v1"} {
		if _, err := s.Store.GetRef(name); err != nil {
			t.Errorf("%s was deleted: %v", name, err)
		}
	}

	status, metrics := get(t, s.URL+"/metrics")
	if status != http.StatusOK || !strings.Contains(string(metrics), "floe_ref_expiries_total 4") ||
		!strings.Contains(string(metrics), "floe_ref_expiry_sweep_duration_seconds_count 2") {
		t.Fatalf("/metrics: %d; want floe_ref_expiries_total 4 and two timed sweeps in\n%s", status, grepLines(string(metrics), "floe_ref_"))
	}
}

func expiredNames(res floeapi.ExpireResult) string {
	var names []string
	for _, e := range res.Expired {
		names = append(names, e.Name)
	}
	return strings.Join(names, " ")
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
