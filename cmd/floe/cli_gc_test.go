package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/housekeeping/gc"
)

// TestCLIGC drives `floe gc` against a real `floe serve`: a dry run names
// an old unreferenced file and deletes nothing; the run deletes it, and
// `floe gc report` shows that run.
func TestCLIGC(t *testing.T) {
	e := newCLIEnv(t)
	dir := strings.TrimPrefix(e.warehouse, "file://")
	stray := filepath.Join(dir, "ns", "t", "data", "orphan.parquet")
	if err := os.MkdirAll(filepath.Dir(stray), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stray, []byte("orphan"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-4 * 24 * time.Hour)
	if err := os.Chtimes(stray, old, old); err != nil {
		t.Fatal(err)
	}
	out := e.ok(t, "gc", "--dry-run", "--explain", "file://"+stray)
	if !strings.Contains(out, "would delete 1 (6 B)") || !strings.Contains(out, "unreferenced") ||
		!strings.Contains(out, "older than the grace period") {
		t.Fatalf("floe gc --dry-run:\n%s", out)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Fatalf("the dry run deleted %s: %v", stray, err)
	}
	out = e.ok(t, "gc", "--json")
	var rep gc.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Deleted != 1 || rep.DryRun {
		t.Fatalf("floe gc --json: %v\n%s", err, out)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("%s survived the run: %v", stray, err)
	}
	out = e.ok(t, "gc", "report")
	if !strings.Contains(out, rep.ID) || !strings.Contains(out, "deleted 1 (6 B)") {
		t.Fatalf("floe gc report:\n%s", out)
	}
}
