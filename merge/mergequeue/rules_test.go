package mergequeue

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRules: the documented example file loads and means what the
// defaults mean; unknown fields and the queue's own prefix are refused;
// the longest prefix wins and a prefix names its class.
func TestRules(t *testing.T) {
	r, err := LoadRules(filepath.Join("..", "..", "deploy", "merge-queue.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.protected("main") || r.ageLimit() != 15*time.Minute || r.maxBatch() != 8 || r.SchemaChanges != SchemaChangesReview {
		t.Fatalf("deploy/merge-queue.json: %+v", r)
	}
	for _, c := range []struct {
		source, class  string
		batch, dropped bool
		tag            string
	}{
		{"ingest/shard-07", "ingest", true, true, ""},
		{"users/alex/fix", "users", true, false, ""},
		{"backfill/2026-h1", "backfill", false, true, "merged/backfill/2026-h1"},
		{"hotfix", "other", true, false, ""},
	} {
		rule, class := r.ruleFor(c.source)
		if class != c.class || rule.Batch != c.batch || rule.DropAfterMerge != c.dropped || tagName(rule.Tag, c.source, "mr-1") != c.tag {
			t.Errorf("%s: class %s, rule %+v", c.source, class, rule)
		}
	}
	r.Prefixes = append(r.Prefixes, PrefixRule{Prefix: "ingest/eu/", Batch: false})
	if rule, class := r.ruleFor("ingest/eu/7"); rule.Batch || class != "ingest/eu" {
		t.Errorf("longest prefix: %+v %s", rule, class)
	}

	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown field":   `{"protected": ["main"], "prefixs": []}`,
		"queue's prefix":  `{"prefixes": [{"prefix": "floe-queue/x/"}]}`,
		"negative batch":  `{"maxBatch": -1}`,
		"bad branch name": `{"protected": ["main/"]}`,
		"schema changes":  `{"schemaChanges": "sometimes"}`,
	} {
		f := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".json")
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadRules(f); err == nil {
			t.Errorf("%s: loaded %s", name, body)
		}
	}
	if d := DefaultRules(); d.Validate() != nil {
		t.Errorf("default rules: %v", d.Validate())
	}
}
