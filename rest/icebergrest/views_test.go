package icebergrest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/versionstore"
)

func viewBody(name, sql string) string {
	return `{"name":"` + name + `","schema":` + schemaJSON + `,"view-version":{"version-id":1,"schema-id":0,"timestamp-ms":1700000000000,` +
		`"summary":{"engine":"test"},"representations":[{"type":"sql","sql":"` + sql + `","dialect":"spark"}],"default-namespace":["ns"]}}`
}

type loadViewResult struct {
	MetadataLocation string         `json:"metadata-location"`
	Metadata         map[string]any `json:"metadata"`
}

func TestViews(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createTable("lake", "ns", "t")
	var created loadViewResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/views", viewBody("v", "select 1"), http.StatusOK, &created)
	if m := metadataFile.FindStringSubmatch(created.MetadataLocation); m == nil || m[1] != "00000" ||
		!strings.HasPrefix(created.MetadataLocation, e.wh+"/ns/v-") {
		t.Fatalf("view metadata location %s", created.MetadataLocation)
	}
	e.ok(http.MethodHead, "/v1/lake/namespaces/ns/views/v", nil, http.StatusNoContent, nil)
	var loaded loadViewResult
	e.ok(http.MethodGet, "/v1/lake/namespaces/ns/views/v", nil, http.StatusOK, &loaded)
	if loaded.MetadataLocation != created.MetadataLocation || loaded.Metadata["view-uuid"] != created.Metadata["view-uuid"] {
		t.Fatalf("loaded %+v", loaded)
	}
	main, _ := e.store.GetRef(versionstore.DefaultBranch)
	content, err := e.store.GetContent(t.Context(), main.Head, versionstore.ContentKey{"ns", "v"})
	if err != nil || content.Type != versionstore.IcebergView || content.VersionID != 1 {
		t.Fatalf("view content %+v %v", content, err)
	}
	var list struct {
		Identifiers []struct {
			Name string `json:"name"`
		} `json:"identifiers"`
	}
	e.ok(http.MethodGet, "/v1/lake/namespaces/ns/views", nil, http.StatusOK, &list)
	if len(list.Identifiers) != 1 || list.Identifiers[0].Name != "v" {
		t.Fatalf("views %+v", list)
	}

	uuid := created.Metadata["view-uuid"].(string)
	replace := `{"requirements":[{"type":"assert-view-uuid","uuid":"` + uuid + `"}],"updates":[` +
		`{"action":"add-view-version","view-version":{"version-id":2,"schema-id":0,"timestamp-ms":1700000000001,"summary":{},` +
		`"representations":[{"type":"sql","sql":"select 2","dialect":"spark"}],"default-namespace":["ns"]}},` +
		`{"action":"set-current-view-version","view-version-id":-1}]}`
	var replaced loadViewResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/views/v", replace, http.StatusOK, &replaced)
	if m := metadataFile.FindStringSubmatch(replaced.MetadataLocation); m == nil || m[1] != "00001" || replaced.Metadata["current-version-id"].(float64) != 2 {
		t.Fatalf("replaced %s %v", replaced.MetadataLocation, replaced.Metadata["current-version-id"])
	}

	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/views", viewBody("w", "select 3"), http.StatusOK, nil)
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		typ, msg           string
	}{
		{"create exists", "POST", "/v1/lake/namespaces/ns/views", viewBody("v", "x"), 409, "AlreadyExistsException", "View already exists: ns.v"},
		{"create over table", "POST", "/v1/lake/namespaces/ns/views", viewBody("t", "x"), 409, "AlreadyExistsException", "Table with same name already exists: ns.t"},
		{"create no namespace", "POST", "/v1/lake/namespaces/missing/views", viewBody("v", "x"), 404, "NoSuchNamespaceException", "Namespace does not exist: missing"},
		{"create no version", "POST", "/v1/lake/namespaces/ns/views", `{"name":"x","schema":` + schemaJSON + `}`, 400, "BadRequestException", "…view-version"},
		{"load missing", "GET", "/v1/lake/namespaces/ns/views/missing", nil, 404, "NoSuchViewException", "View does not exist: ns.missing"},
		{"load table as view", "GET", "/v1/lake/namespaces/ns/views/t", nil, 404, "NoSuchViewException", "View does not exist: ns.t"},
		{"head missing", "HEAD", "/v1/lake/namespaces/ns/views/missing", nil, 404, "", ""},
		{"replace uuid mismatch", "POST", "/v1/lake/namespaces/ns/views/v", `{"requirements":[{"type":"assert-view-uuid","uuid":"00000000-0000-0000-0000-000000000001"}],"updates":[]}`, 409, "CommitFailedException", "…"},
		{"replace unknown update", "POST", "/v1/lake/namespaces/ns/views/v", `{"requirements":[],"updates":[{"action":"shrink"}]}`, 400, "BadRequestException", "malformed JSON"},
		{"replace unknown requirement", "POST", "/v1/lake/namespaces/ns/views/v", `{"requirements":[{"type":"assert-table-uuid","uuid":"` + uuid + `"}],"updates":[]}`, 400, "BadRequestException", "…unknown requirement type"},
		{"replace missing", "POST", "/v1/lake/namespaces/ns/views/missing", `{"requirements":[],"updates":[]}`, 404, "NoSuchViewException", "View does not exist: ns.missing"},
		{"drop missing", "DELETE", "/v1/lake/namespaces/ns/views/missing", nil, 404, "NoSuchViewException", "View does not exist: ns.missing"},
		{"drop table as view", "DELETE", "/v1/lake/namespaces/ns/views/t", nil, 404, "NoSuchViewException", "View does not exist: ns.t"},
		{"rename onto view", "POST", "/v1/lake/views/rename", `{"source":{"namespace":["ns"],"name":"v"},"destination":{"namespace":["ns"],"name":"w"}}`, 409, "AlreadyExistsException", "Cannot rename ns.v to ns.w. View already exists"},
		{"rename onto table", "POST", "/v1/lake/views/rename", `{"source":{"namespace":["ns"],"name":"v"},"destination":{"namespace":["ns"],"name":"t"}}`, 409, "AlreadyExistsException", "Cannot rename ns.v to ns.t. Table already exists"},
		{"rename missing", "POST", "/v1/lake/views/rename", `{"source":{"namespace":["ns"],"name":"missing"},"destination":{"namespace":["ns"],"name":"x"}}`, 404, "NoSuchViewException", "View does not exist: ns.missing"},
		{"rename table as view", "POST", "/v1/lake/views/rename", `{"source":{"namespace":["ns"],"name":"t"},"destination":{"namespace":["ns"],"name":"x"}}`, 404, "NoSuchViewException", "View does not exist: ns.t"},
		{"register exists", "POST", "/v1/lake/namespaces/ns/register-view", `{"name":"w","metadata-location":"` + created.MetadataLocation + `"}`, 409, "AlreadyExistsException", "View already exists: ns.w"},
		{"register over table", "POST", "/v1/lake/namespaces/ns/register-view", `{"name":"t","metadata-location":"` + created.MetadataLocation + `"}`, 409, "AlreadyExistsException", "Table with same name already exists: ns.t"},
		{"register outside", "POST", "/v1/lake/namespaces/ns/register-view", `{"name":"r","metadata-location":"file:///etc/passwd"}`, 400, "BadRequestException", "…outside the warehouse"},
		{"read-only", "POST", "/v1/lake@" + main.Head.String() + "/namespaces/ns/views", viewBody("z", "x"), 403, "ForbiddenException", "…read-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			checkError(t, e.do(tc.method, tc.path, tc.body), tc.status, tc.typ, tc.msg)
		})
	}

	e.ok(http.MethodPost, "/v1/lake/views/rename", `{"source":{"namespace":["ns"],"name":"v"},"destination":{"namespace":["ns"],"name":"v2"}}`, http.StatusNoContent, nil)
	checkError(t, e.do(http.MethodHead, "/v1/lake/namespaces/ns/views/v", nil), 404, "", "")
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/register-view", `{"name":"again","metadata-location":"`+replaced.MetadataLocation+`"}`, http.StatusOK, nil)
	e.ok(http.MethodDelete, "/v1/lake/namespaces/ns/views/v2", nil, http.StatusNoContent, nil)
	checkError(t, e.do(http.MethodGet, "/v1/lake/namespaces/ns/views/v2", nil), 404, "NoSuchViewException", "View does not exist: ns.v2")
	main, _ = e.store.GetRef(versionstore.DefaultBranch)
	c, _ := e.store.ReadCommit(t.Context(), main.Head)
	if c.Properties["iceberg.operation"] != "drop-view" || c.Message != "iceberg: drop view ns.v2" {
		t.Fatalf("commit %q %v", c.Message, c.Properties)
	}
}
