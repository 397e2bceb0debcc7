package icebergrest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/versionstore"
)

// TestSnapshotCommits adds snapshots the way engines do (add-snapshot plus
// set-snapshot-ref) and checks the history, table refs and the 409 for a
// snapshot built on a stale sequence number.
func TestSnapshotCommits(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	created := e.createTable("lake", "ns", "t")
	path := "/v1/lake/namespaces/ns/tables/t"
	now := time.Now().UnixMilli()
	snapshot := func(id, parent, seq int64, op string) string {
		p := ""
		if parent != 0 {
			p = fmt.Sprintf(`"parent-snapshot-id":%d,`, parent)
		}
		return fmt.Sprintf(`{"action":"add-snapshot","snapshot":{"snapshot-id":%d,%s"sequence-number":%d,"timestamp-ms":%d,`+
			`"manifest-list":"%s/ns/t/metadata/snap-%d.avro","summary":{"operation":"%s"},"schema-id":0}}`, id, p, seq, now, e.wh, id, op)
	}
	setRef := func(ref string, id int64) string {
		return fmt.Sprintf(`{"action":"set-snapshot-ref","ref-name":"%s","type":"branch","snapshot-id":%d}`, ref, id)
	}

	e.ok(http.MethodPost, path, commitBody(`{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null}`,
		snapshot(1, 0, 1, "append")+","+setRef("main", 1)), http.StatusOK, nil)
	main, _ := e.store.GetRef(versionstore.DefaultBranch)
	c, _ := e.store.ReadCommit(t.Context(), main.Head)
	if c.Message != "iceberg: append to ns.t" || c.Properties["iceberg.operation"] != "append" ||
		c.Properties["iceberg.snapshot-id"] != "1" || c.Properties["iceberg.ref"] != "main" {
		t.Fatalf("commit %q %v", c.Message, c.Properties)
	}
	content, _ := e.store.GetContent(t.Context(), main.Head, versionstore.ContentKey{"ns", "t"})
	if content.SnapshotID != 1 || content.LastSequenceNumber != 1 {
		t.Fatalf("content %+v", content)
	}

	// A table branch: the catalog records which table ref moved.
	e.ok(http.MethodPost, path, commitBody(`{"type":"assert-ref-snapshot-id","ref":"audit","snapshot-id":null}`,
		snapshot(2, 1, 2, "overwrite")+","+setRef("audit", 2)), http.StatusOK, nil)
	main, _ = e.store.GetRef(versionstore.DefaultBranch)
	c, _ = e.store.ReadCommit(t.Context(), main.Head)
	if c.Message != "iceberg: overwrite ns.t (table refs audit)" || c.Properties["iceberg.ref"] != "audit" {
		t.Fatalf("commit %q %v", c.Message, c.Properties)
	}
	res := e.loadTable("lake", "ns", "t")
	if res.Metadata["current-snapshot-id"].(float64) != 1 {
		t.Fatalf("a table-branch commit moved main: %v", res.Metadata["current-snapshot-id"])
	}
	var refs loadTableResult
	e.ok(http.MethodGet, path+"?snapshots=refs", nil, http.StatusOK, &refs)
	if n := len(refs.Metadata["snapshots"].([]any)); n != 2 {
		t.Fatalf("snapshots=refs kept %d snapshots, want the two ref heads", n)
	}

	// A snapshot on a stale sequence number: the client must retry.
	checkError(t, e.do(http.MethodPost, path, commitBody("", snapshot(3, 1, 1, "append")+","+setRef("main", 3))),
		409, "CommitFailedException", "Validation failed, please retry")
	// A stale ref assertion: 409, table unchanged.
	checkError(t, e.do(http.MethodPost, path, commitBody(`{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null}`,
		snapshot(4, 1, 3, "append")+","+setRef("main", 4))), 409, "CommitFailedException", "…was created concurrently")
	if after := e.loadTable("lake", "ns", "t"); *after.MetadataLocation != *res.MetadataLocation {
		t.Fatal("refused commits changed the table")
	}
	_ = created
}

// TestCommitRecordsEveryChange: a table commit that evolves the schema and
// appends in one request is recorded as both, in order, so that the
// catalog's log shows the schema change and not only "append".
func TestCommitRecordsEveryChange(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createTable("lake", "ns", "t")
	now := time.Now().UnixMilli()
	updates := `{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[` +
		`{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"region","type":"string","required":false},` +
		`{"id":3,"name":"note","type":"string","required":false}]},"last-column-id":3},` +
		`{"action":"set-current-schema","schema-id":-1},` +
		`{"action":"set-properties","updates":{"owner":"etl"}},` +
		fmt.Sprintf(`{"action":"add-snapshot","snapshot":{"snapshot-id":7,"sequence-number":1,"timestamp-ms":%d,`+
			`"manifest-list":"%s/ns/t/metadata/snap-7.avro","summary":{"operation":"append"},"schema-id":1}},`, now, e.wh) +
		`{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":7}`
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables/t", commitBody("", updates), http.StatusOK, nil)
	main, _ := e.store.GetRef(versionstore.DefaultBranch)
	c, _ := e.store.ReadCommit(t.Context(), main.Head)
	if c.Properties["iceberg.operation"] != "append" || c.Properties["iceberg.changes"] != "schema-change,properties,append" ||
		c.Message != "iceberg: append to ns.t (schema-change, properties, append)" {
		t.Fatalf("commit %q %v", c.Message, c.Properties)
	}

	// A multi-table transaction records each table's changes.
	e.createTable("lake", "ns", "u")
	body := `{"table-changes":[` +
		`{"identifier":{"namespace":["ns"],"name":"t"},"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"1"}}]},` +
		`{"identifier":{"namespace":["ns"],"name":"u"},"requirements":[],"updates":[{"action":"upgrade-format-version","format-version":3}]}]}`
	e.ok(http.MethodPost, "/v1/lake/transactions/commit", body, http.StatusNoContent, nil)
	main, _ = e.store.GetRef(versionstore.DefaultBranch)
	c, _ = e.store.ReadCommit(t.Context(), main.Head)
	if c.Properties["iceberg.changes.ns.t"] != "properties" || c.Properties["iceberg.changes.ns.u"] != "format-version-upgrade" {
		t.Fatalf("transaction commit %q %v", c.Message, c.Properties)
	}
}

// TestBadUpdatesAreClientErrors sends updates the metadata builder must
// refuse: each must be a 4xx in the error model, never a 500, and leave the
// table alone.
func TestBadUpdatesAreClientErrors(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createTable("lake", "ns", "t")
	path := "/v1/lake/namespaces/ns/tables/t"
	before := e.loadTable("lake", "ns", "t")
	for _, u := range []string{
		`{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":77}`,
		`{"action":"set-snapshot-ref","ref-name":"main","type":"tag","snapshot-id":77}`,
		`{"action":"set-snapshot-ref","ref-name":"x","type":"twig","snapshot-id":77}`,
		`{"action":"upgrade-format-version","format-version":9}`,
		`{"action":"upgrade-format-version","format-version":1}`,
		`{"action":"add-spec","spec":{"spec-id":1,"fields":[{"source-id":99,"field-id":1001,"name":"p","transform":"identity"}]}}`,
		`{"action":"add-sort-order","sort-order":{"order-id":1,"fields":[{"source-id":99,"transform":"identity","direction":"asc","null-order":"nulls-first"}]}}`,
		`{"action":"set-default-spec","spec-id":5}`,
		`{"action":"set-default-sort-order","sort-order-id":5}`,
		`{"action":"set-current-schema","schema-id":5}`,
		`{"action":"remove-schemas","schema-ids":[0]}`,
		`{"action":"remove-partition-specs","spec-ids":[0]}`,
		`{"action":"add-schema","schema":{"type":"struct","fields":[{"id":1,"name":"x"}]}}`,
		`{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"a","type":"long","required":true},{"id":1,"name":"b","type":"long","required":true}]}}`,
		`{"action":"set-location","location":"relative/path"}`,
		`{"action":"set-location","location":""}`,
		`{"action":"add-snapshot","snapshot":{"sequence-number":1}}`,
		`{"action":"add-snapshot","snapshot":{"snapshot-id":5,"sequence-number":1,"timestamp-ms":1,"manifest-list":"x","summary":{"operation":"append"}}}`,
		`{"action":"add-encryption-key","encryption-key":{"key-id":"k","encrypted-key-metadata":"AA=="}}`,
		`{"action":"set-properties","updates":null}`,
		`{"action":"remove-properties","removals":"x"}`,
		`{"action":"assign-uuid","uuid":"not-a-uuid"}`,
		`{"action":42}`,
		`{}`,
		`[]`,
	} {
		t.Run(u, func(t *testing.T) {
			e := e.with(t)
			r := e.do(http.MethodPost, path, commitBody("", u))
			if r.status < 400 || r.status >= 500 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			checkError(t, r, r.status, map[int]string{400: "", 409: "CommitFailedException", 404: ""}[r.status], "")
			if !strings.Contains(string(r.body), `"type":`) {
				t.Fatalf("not the error model: %s", r.body)
			}
		})
	}
	if after := e.loadTable("lake", "ns", "t"); *after.MetadataLocation != *before.MetadataLocation {
		t.Fatal("a refused update changed the table")
	}
}
