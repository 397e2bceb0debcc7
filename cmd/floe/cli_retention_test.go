package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCLIRetention drives a ref's retention through the CLI against a real
// `floe serve` with a retention file: set at creation, shown by branch
// list (table and --json), changed and cleared by branch retention, a
// refused second call after a create, and an expiry dry run.
func TestCLIRetention(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "retention.json")
	if err := os.WriteFile(cfgFile, []byte(`{"protected": ["release/"], "branches": [{"prefix": "ingest/", "maxAge": "2d"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, nil, "--addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--warehouse", filepath.Join(dir, "warehouse"),
		"--ref-retention", cfgFile)
	e := &cliEnv{t: t, addr: p.addr, http: &http.Client{Timeout: 10 * time.Second}}

	out := e.ok(t, "branch", "create", "ingest/shard-07", "--max-age", "36h", "--keep-history", "7d")
	if !strings.Contains(out, "Created branch ingest/shard-07 at ") ||
		!regexp.MustCompile(`Retention: max age 36h, history kept 7d; expires .* \(in 1d1[01]h\)`).MatchString(out) {
		t.Errorf("branch create with retention:\n%s", out)
	}
	e.ok(t, "branch", "create", "ingest/plain")
	e.ok(t, "branch", "create", "dev")

	out = e.ok(t, "branch", "list")
	for _, re := range []string{
		`(?m)^NAME +HASH +AGE +EXPIRES$`,
		`(?m)^dev +[0-9a-f]{12} +\d+s +never$`,
		`(?m)^ingest/plain +[0-9a-f]{12} +\d+s +in 1d23h$`,
		`(?m)^ingest/shard-07 +[0-9a-f]{12} +\d+s +in 1d1[01]h$`,
		`(?m)^main +[0-9a-f]{12} +\S+ +never$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("branch list does not match %s:\n%s", re, out)
		}
	}
	for _, args := range [][]string{{"--json", "branch", "list"}, {"branch", "list", "--json"}} {
		var refs struct {
			References []struct {
				Name, Type, Hash string
				Age              string
				ExpiresAt        *time.Time
				Retention        *struct{ MaxAge, MaxAgeSource string }
			}
		}
		if err := json.Unmarshal([]byte(e.ok(t, args...)), &refs); err != nil {
			t.Fatalf("floe %v: %v", args, err)
		}
		got := map[string]string{}
		for _, r := range refs.References {
			exp := "never"
			if r.ExpiresAt != nil {
				exp = "expires"
			}
			if r.Retention == nil || r.Hash == "" || r.Type != "BRANCH" {
				t.Errorf("floe %v: %+v lacks its hash or retention", args, r)
				continue
			}
			got[r.Name] = exp + " " + r.Retention.MaxAge + " " + r.Retention.MaxAgeSource
		}
		want := map[string]string{"dev": "never 0 default", "ingest/plain": "expires 2d prefix ingest/",
			"ingest/shard-07": "expires 36h own", "main": "never 0 main"}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("floe %v: %s is %q, want %q", args, name, got[name], w)
			}
		}
	}

	out = e.ok(t, "branch", "retention", "ingest/shard-07")
	if !regexp.MustCompile(`(?m)^max age +36h +36h +own$`).MatchString(out) || !regexp.MustCompile(`(?m)^keep history +7d +7d +own`).MatchString(out) {
		t.Errorf("branch retention ingest/shard-07:\n%s", out)
	}
	out = e.ok(t, "branch", "retention", "ingest/shard-07", "--max-age", "0")
	if !regexp.MustCompile(`(?m)^max age +0 +never +own$`).MatchString(out) || !regexp.MustCompile(`(?m)^keep history +7d`).MatchString(out) ||
		!strings.Contains(out, "never expires") {
		t.Errorf("branch retention --max-age 0 (keeping the history setting):\n%s", out)
	}
	out = e.ok(t, "branch", "retention", "ingest/shard-07", "--clear")
	if !regexp.MustCompile(`(?m)^max age +\(default\) +2d +prefix ingest/$`).MatchString(out) {
		t.Errorf("branch retention --clear:\n%s", out)
	}
	e.fails(t, []string{"branch", "retention", "main", "--max-age", "1d"}, "default branch")

	// The branch is created through the Nessie API first: when setting
	// its retention is refused, it stays, with its defaults.
	e.fails(t, []string{"branch", "create", "release/2026", "--max-age", "30d"},
		"created branch release/2026, but setting its retention failed", "protected prefix", "floe branch retention release/2026 --max-age 30d")
	if out := e.ok(t, "branch", "list"); !regexp.MustCompile(`(?m)^release/2026 +[0-9a-f]{12} +\d+s +never$`).MatchString(out) {
		t.Errorf("release/2026 after the refused retention:\n%s", out)
	}
	// A typo fails before anything is created.
	e.fails(t, []string{"branch", "create", "ingest/typo", "--max-age", "2weeks"}, "--max-age", "2weeks")
	if out := e.ok(t, "branch", "list"); strings.Contains(out, "ingest/typo") {
		t.Errorf("a create with a bad --max-age made the branch:\n%s", out)
	}

	if out := e.ok(t, "branch", "expire", "--dry-run"); out != "No expired references among 5\n" {
		t.Errorf("branch expire --dry-run = %q", out)
	}
}
