package icebergrest_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/floe-catalog/floe/versionstore"
)

func commitBody(requirements, updates string) string {
	return `{"requirements":[` + requirements + `],"updates":[` + updates + `]}`
}

func TestUpdateTable(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	created := e.createTable("lake", "ns", "t")
	uuid := created.Metadata["table-uuid"].(string)
	path := "/v1/lake/namespaces/ns/tables/t"

	r := e.ok(http.MethodPost, path, commitBody(`{"type":"assert-table-uuid","uuid":"`+uuid+`"}`,
		`{"action":"set-properties","updates":{"a":"1"}}`), http.StatusOK, nil)
	if r.header.Get("ETag") == "" {
		t.Error("update answered without an ETag")
	}
	var res loadTableResult
	e.ok(http.MethodGet, path, nil, http.StatusOK, &res)
	m := metadataFile.FindStringSubmatch(*res.MetadataLocation)
	if m == nil || m[1] != "00001" {
		t.Fatalf("second metadata file %q", *res.MetadataLocation)
	}
	log := res.Metadata["metadata-log"].([]any)
	if len(log) != 1 || log[0].(map[string]any)["metadata-file"] != *created.MetadataLocation {
		t.Fatalf("metadata-log %v", log)
	}
	if res.Metadata["properties"].(map[string]any)["a"] != "1" {
		t.Fatalf("properties %v", res.Metadata["properties"])
	}
	main, _ := e.store.GetRef(versionstore.DefaultBranch)
	c, _ := e.store.ReadCommit(t.Context(), main.Head)
	if c.Message != "iceberg: update ns.t (properties)" || c.Properties["iceberg.operation"] != "update" ||
		c.Properties["iceberg.changes"] != "properties" || c.Properties["iceberg.metadata-location"] != *res.MetadataLocation {
		t.Fatalf("commit %q %v", c.Message, c.Properties)
	}

	// A commit without updates writes nothing and commits nothing.
	e.ok(http.MethodPost, path, commitBody(`{"type":"assert-table-uuid","uuid":"`+uuid+`"}`, ""), http.StatusOK, nil)
	if again, _ := e.store.GetRef(versionstore.DefaultBranch); again.Head != main.Head {
		t.Fatal("a no-op update made a commit")
	}

	for _, tc := range []struct {
		name     string
		path     string
		body     string
		status   int
		typ, msg string
	}{
		{"unknown update", path, commitBody("", `{"action":"make-it-fast"}`), 400, "BadRequestException", "…unknown update action: make-it-fast"},
		{"unknown requirement", path, commitBody(`{"type":"assert-lucky"}`, ""), 400, "BadRequestException", "…unknown requirement type: assert-lucky"},
		{"update missing field", path, commitBody("", `{"action":"set-location"}`), 400, "BadRequestException", "…requires field"},
		{"malformed", path, `{"requirements":[`, 400, "BadRequestException", "malformed JSON"},
		{"uuid mismatch", path, commitBody(`{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000001"}`, ""), 409, "CommitFailedException", "Requirement failed: UUID does not match: expected 00000000-0000-0000-0000-000000000001 != "},
		{"field id changed", path, commitBody(`{"type":"assert-last-assigned-field-id","last-assigned-field-id":7}`, ""), 409, "CommitFailedException", "…last assigned field id"},
		{"ref moved", path, commitBody(`{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":42}`, ""), 409, "CommitFailedException", "…is missing"},
		{"create existing", path, commitBody(`{"type":"assert-create"}`, ""), 409, "CommitFailedException", "Requirement failed: table already exists: ns.t"},
		{"missing table", "/v1/lake/namespaces/ns/tables/missing", commitBody("", `{"action":"set-properties","updates":{"a":"1"}}`), 404, "NoSuchTableException", "Table does not exist: ns.missing"},
		{"identifier mismatch", path, `{"identifier":{"namespace":["ns"],"name":"other"},"requirements":[],"updates":[]}`, 400, "BadRequestException", "…names table ns.other"},
		{"location outside", path, commitBody("", `{"action":"set-location","location":"file:///tmp/elsewhere"}`), 400, "BadRequestException", "…outside the warehouse"},
		{"reserved property", path, commitBody("", `{"action":"set-properties","updates":{"format-version":"3"}}`), 400, "IllegalArgumentException", "cannot apply set-properties to ns.t"},
		{"bad schema id", path, commitBody("", `{"action":"set-current-schema","schema-id":9}`), 400, "IllegalArgumentException", "cannot apply set-current-schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			checkError(t, e.do(http.MethodPost, tc.path, tc.body), tc.status, tc.typ, tc.msg)
		})
	}
	// None of the refused commits left a metadata file behind.
	files, err := filepath.Glob(filepath.Join(filepath.Dir(fileURLPath(t, *res.MetadataLocation)), "*.metadata.json"))
	if err != nil || len(files) != 2 {
		t.Fatalf("metadata files %v %v", files, err)
	}
}

func TestMetadataLogTrimmed(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("t", `,"properties":{"write.metadata.previous-versions-max":"2"}`), http.StatusOK, nil)
	for i := range 4 {
		e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables/t", commitBody("", fmt.Sprintf(`{"action":"set-properties","updates":{"k":"%d"}}`, i)), http.StatusOK, nil)
	}
	res := e.loadTable("lake", "ns", "t")
	if m := metadataFile.FindStringSubmatch(*res.MetadataLocation); m == nil || m[1] != "00004" {
		t.Fatalf("metadata location %s", *res.MetadataLocation)
	}
	log := res.Metadata["metadata-log"].([]any)
	if len(log) != 2 || !strings.Contains(log[1].(map[string]any)["metadata-file"].(string), "/00003-") {
		t.Fatalf("metadata-log %v", log)
	}
}

// TestStagedCreate is the create transaction: a staged create writes
// nothing; the later commit with assert-create creates the table.
func TestStagedCreate(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	var staged loadTableResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("s", `,"stage-create":true`), http.StatusOK, &staged)
	if staged.MetadataLocation != nil {
		t.Fatalf("staged create has metadata-location %q", *staged.MetadataLocation)
	}
	checkError(t, e.do(http.MethodHead, "/v1/lake/namespaces/ns/tables/s", nil), 404, "", "")
	if entries, _ := os.ReadDir(e.whDir); len(entries) != 0 {
		t.Fatalf("staged create wrote files: %v", entries)
	}

	uuid := staged.Metadata["table-uuid"].(string)
	body := commitBody(`{"type":"assert-create"}`, `
		{"action":"assign-uuid","uuid":"`+uuid+`"},
		{"action":"upgrade-format-version","format-version":2},
		{"action":"add-schema","schema":`+schemaJSON+`},
		{"action":"set-current-schema","schema-id":-1},
		{"action":"add-spec","spec":{"spec-id":0,"fields":[]}},
		{"action":"set-default-spec","spec-id":-1},
		{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},
		{"action":"set-default-sort-order","sort-order-id":-1},
		{"action":"set-properties","updates":{"created-by":"stage"}}`)
	var res loadTableResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables/s", body, http.StatusOK, &res)
	if res.Metadata["table-uuid"] != uuid || !strings.HasPrefix(res.Metadata["location"].(string), e.wh+"/ns/s-") {
		t.Fatalf("created %v", res.Metadata)
	}
	if m := metadataFile.FindStringSubmatch(*res.MetadataLocation); m == nil || m[1] != "00000" {
		t.Fatalf("metadata location %s", *res.MetadataLocation)
	}
	e.ok(http.MethodHead, "/v1/lake/namespaces/ns/tables/s", nil, http.StatusNoContent, nil)
	main, _ := e.store.GetRef(versionstore.DefaultBranch)
	c, _ := e.store.ReadCommit(t.Context(), main.Head)
	if c.Properties["iceberg.operation"] != "create" {
		t.Fatalf("commit %v", c.Properties)
	}
	// Committing the create again fails: the table exists now.
	checkError(t, e.do(http.MethodPost, "/v1/lake/namespaces/ns/tables/s", body), 409, "CommitFailedException", "Requirement failed: table already exists: ns.s")
	// A create commit into a missing namespace is a 404.
	checkError(t, e.do(http.MethodPost, "/v1/lake/namespaces/missing/tables/s", body), 404, "NoSuchNamespaceException", "Namespace does not exist: missing")
}

func TestTransactions(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	t1 := e.createTable("lake", "ns", "t1")
	e.createTable("lake", "ns", "t2")
	change := func(name, requirements, updates string) string {
		return `{"identifier":{"namespace":["ns"],"name":"` + name + `"},"requirements":[` + requirements + `],"updates":[` + updates + `]}`
	}
	setProp := func(v string) string { return `{"action":"set-properties","updates":{"p":"` + v + `"}}` }

	e.ok(http.MethodPost, "/v1/lake/transactions/commit", `{"table-changes":[`+change("t1", "", setProp("1"))+","+change("t2", "", setProp("1"))+`]}`, http.StatusNoContent, nil)
	main, _ := e.store.GetRef(versionstore.DefaultBranch)
	c, _ := e.store.ReadCommit(t.Context(), main.Head)
	if len(c.Operations) != 2 || c.Properties["iceberg.operation"] != "transaction" || c.Properties["iceberg.tables"] != "ns.t1,ns.t2" ||
		c.Message != "iceberg: transaction on ns.t1, ns.t2" {
		t.Fatalf("transaction commit %q %v", c.Message, c.Properties)
	}
	before1, before2 := e.loadTable("lake", "ns", "t1"), e.loadTable("lake", "ns", "t2")

	// One failing requirement: nothing changes, no file is left behind.
	bad := `{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000001"}`
	r := e.do(http.MethodPost, "/v1/lake/transactions/commit", `{"table-changes":[`+change("t1", "", setProp("2"))+","+change("t2", bad, setProp("2"))+`]}`)
	checkError(t, r, 409, "CommitFailedException", "Requirement failed")
	after1, after2 := e.loadTable("lake", "ns", "t1"), e.loadTable("lake", "ns", "t2")
	if *after1.MetadataLocation != *before1.MetadataLocation || *after2.MetadataLocation != *before2.MetadataLocation {
		t.Fatal("a failed transaction changed a table")
	}
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(fileURLPath(t, *t1.MetadataLocation)), "*.metadata.json"))
	if len(files) != 2 {
		t.Fatalf("t1 has metadata files %v", files)
	}

	for _, tc := range []struct {
		name, body string
		status     int
		typ, msg   string
	}{
		{"empty", `{"table-changes":[]}`, 400, "BadRequestException", "a transaction needs at least one table change"},
		{"no identifier", `{"table-changes":[{"requirements":[],"updates":[]}]}`, 400, "BadRequestException", "table change 0 has no identifier"},
		{"duplicate", `{"table-changes":[` + change("t1", "", setProp("3")) + "," + change("t1", "", setProp("4")) + `]}`, 400, "BadRequestException", "table ns.t1 appears more than once"},
		{"missing table", `{"table-changes":[` + change("t1", "", setProp("3")) + "," + change("nope", "", setProp("3")) + `]}`, 404, "NoSuchTableException", "Table does not exist: ns.nope"},
		{"unknown update", `{"table-changes":[` + change("t1", "", `{"action":"fly"}`) + `]}`, 400, "BadRequestException", "…unknown update action: fly"},
		{"malformed", `{"table-changes":`, 400, "BadRequestException", "malformed JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			checkError(t, e.do(http.MethodPost, "/v1/lake/transactions/commit", tc.body), tc.status, tc.typ, tc.msg)
		})
	}
	if after := e.loadTable("lake", "ns", "t1"); *after.MetadataLocation != *before1.MetadataLocation {
		t.Fatal("a refused transaction changed t1")
	}
}

// TestServerSideRetry has many writers commit to one table at once with no
// requirements: whenever the store refuses one because the table moved, the
// server re-applies it on the new head, so every commit succeeds.
func TestServerSideRetry(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createTable("lake", "ns", "hot")
	const writers = 8
	var wg sync.WaitGroup
	statuses := make([]int, writers)
	for i := range writers {
		wg.Go(func() {
			r := e.do(http.MethodPost, "/v1/lake/namespaces/ns/tables/hot",
				commitBody("", fmt.Sprintf(`{"action":"set-properties","updates":{"w%d":"x"}}`, i)))
			statuses[i] = r.status
		})
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Errorf("writer %d: status %d", i, s)
		}
	}
	res := e.loadTable("lake", "ns", "hot")
	props := res.Metadata["properties"].(map[string]any)
	for i := range writers {
		if props[fmt.Sprintf("w%d", i)] != "x" {
			t.Errorf("property of writer %d lost: %v", i, props)
		}
	}
	if n := len(res.Metadata["metadata-log"].([]any)); n != writers {
		t.Errorf("metadata-log has %d entries, want %d", n, writers)
	}
	// Attempts the store refused left no metadata file behind.
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(fileURLPath(t, *res.MetadataLocation)), "*.metadata.json"))
	if len(files) != writers+1 {
		t.Errorf("%d metadata files, want %d", len(files), writers+1)
	}

	r := e.do(http.MethodGet, "/metrics", nil)
	for _, name := range []string{
		`floe_iceberg_commits_total{operation="update",outcome="ok"} 8`,
		`floe_iceberg_commits_total{operation="create",outcome="ok"} 1`,
		"floe_iceberg_commit_retries_total",
		"floe_iceberg_commit_conflicts_total",
	} {
		if name == "floe_iceberg_commit_retries_total" || name == "floe_iceberg_commit_conflicts_total" {
			// Only present once a retry happened; whether one did depends
			// on scheduling.
			continue
		}
		if !strings.Contains(string(r.body), name) {
			t.Errorf("metrics lack %q", name)
		}
	}
}
