package nessie_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// TestIcebergRESTInterop checks that the Nessie API and the Iceberg REST
// facade share one catalog: what one writes, the other reads.
func TestIcebergRESTInterop(t *testing.T) {
	e := newEnv(t)
	iceberg := func(method, path string, body any, status int, out any) {
		t.Helper()
		r := e.do(method, "/v1/"+path, body)
		if r.status != status {
			t.Fatalf("%s /v1/%s: status %d, want %d: %s", method, path, r.status, status, r.body)
		}
		if out != nil {
			if err := json.Unmarshal(r.body, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	iceberg(http.MethodPost, "lake/namespaces", map[string]any{"namespace": []string{"sales"}}, http.StatusOK, nil)
	var created struct {
		MetadataLocation string `json:"metadata-location"`
		Metadata         struct {
			TableUUID         string `json:"table-uuid"`
			CurrentSnapshotID *int64 `json:"current-snapshot-id"`
		} `json:"metadata"`
	}
	iceberg(http.MethodPost, "lake/namespaces/sales/tables", `{"name":"orders","schema":{"type":"struct","schema-id":0,"fields":[
		{"id":1,"name":"id","type":"long","required":true}]}}`, http.StatusOK, &created)

	// Iceberg → Nessie.
	var c struct {
		Content            content
		EffectiveReference reference
	}
	e.ok(http.MethodGet, "/trees/main/contents/sales.orders", nil, http.StatusOK, &c)
	if c.Content.Type != "ICEBERG_TABLE" || c.Content.MetadataLocation != created.MetadataLocation || c.Content.ID == "" {
		t.Errorf("table via Nessie %+v, Iceberg metadata at %s", c.Content, created.MetadataLocation)
	}
	var entries entriesResponse
	e.ok(http.MethodGet, "/trees/main/entries", nil, http.StatusOK, &entries)
	if !slices.Equal(names(entries.Entries), []string{"sales", "sales.orders"}) {
		t.Errorf("entries %v", names(entries.Entries))
	}

	// Nessie → Iceberg: a branch, a namespace committed on it, and the
	// table visible through the branch-qualified warehouse.
	e.branch("dev", "main")
	e.commit("dev", "add namespace", put(&content{Type: "NAMESPACE", Elements: []string{"staging"}, Properties: map[string]string{"owner": "etl"}}, "staging"))
	var nsList struct {
		Namespaces [][]string `json:"namespaces"`
	}
	iceberg(http.MethodGet, "lake@dev/namespaces", nil, http.StatusOK, &nsList)
	if !slices.ContainsFunc(nsList.Namespaces, func(n []string) bool { return slices.Equal(n, []string{"staging"}) }) {
		t.Errorf("namespaces on dev via Iceberg: %v", nsList.Namespaces)
	}
	var ns struct {
		Properties map[string]string `json:"properties"`
	}
	iceberg(http.MethodGet, "lake@dev/namespaces/staging", nil, http.StatusOK, &ns)
	if ns.Properties["owner"] != "etl" {
		t.Errorf("namespace properties via Iceberg: %v", ns.Properties)
	}
	iceberg(http.MethodGet, "lake/namespaces/staging", nil, http.StatusNotFound, nil)
	iceberg(http.MethodHead, "lake@dev/namespaces/sales/tables/orders", nil, http.StatusNoContent, nil)

	// Merge dev into main through Nessie; Iceberg sees the namespace on main.
	var m mergeResp
	e.ok(http.MethodPost, "/trees/main@"+e.head("main")+"/history/merge", map[string]any{"fromRefName": "dev", "fromHash": e.head("dev")}, http.StatusOK, &m)
	if !m.WasApplied {
		t.Fatalf("merge %+v", m)
	}
	iceberg(http.MethodGet, "lake/namespaces/staging", nil, http.StatusOK, nil)

	// The Iceberg facade's commits show in the Nessie log.
	var l struct {
		LogEntries []struct {
			CommitMeta map[string]any
			Operations []operation
		}
	}
	e.ok(http.MethodGet, "/trees/main/history?fetch=ALL", nil, http.StatusOK, &l)
	if len(l.LogEntries) < 3 {
		t.Errorf("log has %d entries", len(l.LogEntries))
	}
}
