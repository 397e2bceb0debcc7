package icebergrest_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestRequirementMessagesJavaWording: failed requirements answer 409 with
// the message Java's UpdateRequirement gives, which Java clients and the
// Iceberg REST compatibility kit match on.
func TestRequirementMessagesJavaWording(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	created := e.createTable("lake", "ns", "t")
	uuid := created.Metadata["table-uuid"].(string)
	path := "/v1/lake/namespaces/ns/tables/t"
	// A second schema and spec, so the current ids are 1 and the last
	// assigned ids have moved on.
	e.ok(http.MethodPost, path, commitBody("", `{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[
		{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"region","type":"string","required":false},
		{"id":3,"name":"extra","type":"int","required":false}]},"last-column-id":3},{"action":"set-current-schema","schema-id":-1},
		{"action":"add-spec","spec":{"fields":[{"source-id":1,"field-id":1000,"name":"id_b","transform":"bucket[4]"}]}},
		{"action":"set-default-spec","spec-id":-1}`), http.StatusOK, nil)
	var res loadTableResult
	e.ok(http.MethodGet, path, nil, http.StatusOK, &res)
	snap := `{"action":"add-snapshot","snapshot":{"snapshot-id":7,"sequence-number":1,"timestamp-ms":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + `,"manifest-list":"` +
		res.Metadata["location"].(string) + `/metadata/snap-7.avro","summary":{"operation":"append"},"schema-id":1}},
		{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":7}`
	e.ok(http.MethodPost, path, commitBody("", snap), http.StatusOK, nil)

	for _, tc := range []struct{ name, requirement, msg string }{
		{"uuid", `{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000001"}`,
			"Requirement failed: UUID does not match: expected 00000000-0000-0000-0000-000000000001 != " + uuid},
		{"schema", `{"type":"assert-current-schema-id","current-schema-id":0}`, "Requirement failed: current schema changed: expected id 0 != 1"},
		{"field id", `{"type":"assert-last-assigned-field-id","last-assigned-field-id":2}`, "Requirement failed: last assigned field id changed: expected id 2 != 3"},
		{"spec", `{"type":"assert-default-spec-id","default-spec-id":0}`, "Requirement failed: default partition spec changed: expected id 0 != 1"},
		{"partition id", `{"type":"assert-last-assigned-partition-id","last-assigned-partition-id":999}`, "Requirement failed: last assigned partition id changed: expected id 999 != 1000"},
		{"sort order", `{"type":"assert-default-sort-order-id","default-sort-order-id":5}`, "Requirement failed: default sort order changed: expected id 5 != 0"},
		{"branch moved", `{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":6}`, "Requirement failed: branch main has changed: expected id 6 != 7"},
		{"branch created", `{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null}`, "Requirement failed: branch main was created concurrently"},
		{"branch missing", `{"type":"assert-ref-snapshot-id","ref":"dev","snapshot-id":6}`, "Requirement failed: branch or tag dev is missing, expected 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.with(t).do(http.MethodPost, path, commitBody(tc.requirement, `{"action":"set-properties","updates":{"k":"v"}}`))
			checkError(t, r, http.StatusConflict, "CommitFailedException", tc.msg)
		})
	}

	var view struct {
		Metadata map[string]any `json:"metadata"`
	}
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/views", viewBody("v", "select 1"), http.StatusOK, &view)
	r := e.do(http.MethodPost, "/v1/lake/namespaces/ns/views/v", `{"requirements":[{"type":"assert-view-uuid","uuid":"00000000-0000-0000-0000-000000000002"}],"updates":[]}`)
	checkError(t, r, http.StatusConflict, "CommitFailedException",
		"Requirement failed: view UUID does not match: expected 00000000-0000-0000-0000-000000000002 != "+view.Metadata["view-uuid"].(string))
}
