package icebergrest_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/versionstore"
)

var metadataFile = regexp.MustCompile(`/metadata/(\d{5})-[0-9a-f-]{36}\.metadata\.json$`)

func TestCreateAndLoadTable(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")

	r := e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("t1",
		`,"partition-spec":{"spec-id":0,"fields":[{"source-id":2,"field-id":1000,"name":"region","transform":"identity"}]}`+
			`,"write-order":{"order-id":1,"fields":[{"source-id":1,"transform":"identity","direction":"asc","null-order":"nulls-first"}]}`+
			`,"properties":{"owner":"me","format-version":"2"}`), http.StatusOK, nil)
	var res loadTableResult
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	if r.header.Get("ETag") == "" {
		t.Error("create answered without an ETag")
	}
	loc := res.Metadata["location"].(string)
	if !strings.HasPrefix(loc, e.wh+"/ns/t1-"+res.Metadata["table-uuid"].(string)) {
		t.Fatalf("default location %q, want %s/ns/t1-<uuid>", loc, e.wh)
	}
	m := metadataFile.FindStringSubmatch(*res.MetadataLocation)
	if m == nil || m[1] != "00000" || !strings.HasPrefix(*res.MetadataLocation, loc+"/metadata/") {
		t.Fatalf("metadata location %q", *res.MetadataLocation)
	}
	if _, err := os.Stat(fileURLPath(t, *res.MetadataLocation)); err != nil {
		t.Fatalf("metadata file not written: %v", err)
	}
	if res.Metadata["properties"].(map[string]any)["owner"] != "me" {
		t.Errorf("properties %v", res.Metadata["properties"])
	}
	specs := res.Metadata["partition-specs"].([]any)
	if len(specs[0].(map[string]any)["fields"].([]any)) != 1 {
		t.Errorf("partition spec %v", specs)
	}
	if res.Metadata["default-sort-order-id"].(float64) != 1 {
		t.Errorf("sort order %v", res.Metadata["default-sort-order-id"])
	}

	// The version store holds the table's summary.
	main, _ := e.store.GetRef(versionstore.DefaultBranch)
	content, err := e.store.GetContent(t.Context(), main.Head, versionstore.ContentKey{"ns", "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if content.Type != versionstore.IcebergTable || content.MetadataLocation != *res.MetadataLocation ||
		content.UUID != res.Metadata["table-uuid"] || content.SnapshotID != -1 || content.ID == "" {
		t.Fatalf("content %+v", content)
	}
	c, _ := e.store.ReadCommit(t.Context(), main.Head)
	if c.Message != "iceberg: create table ns.t1" || c.Properties["iceberg.operation"] != "create" ||
		c.Properties["iceberg.table"] != "ns.t1" || c.Committer != "anonymous" {
		t.Fatalf("commit %q %v by %q", c.Message, c.Properties, c.Committer)
	}

	// Load, with ETags per snapshots mode and 304 on a match.
	r = e.ok(http.MethodGet, "/v1/lake/namespaces/ns/tables/t1", nil, http.StatusOK, nil)
	tagAll := r.header.Get("ETag")
	r = e.ok(http.MethodGet, "/v1/lake/namespaces/ns/tables/t1?snapshots=refs", nil, http.StatusOK, nil)
	tagRefs := r.header.Get("ETag")
	if tagAll == "" || tagRefs == "" || tagAll == tagRefs {
		t.Fatalf("ETags all=%q refs=%q", tagAll, tagRefs)
	}
	r = e.do(http.MethodGet, "/v1/lake/namespaces/ns/tables/t1", nil, "If-None-Match", tagAll)
	if r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Fatalf("If-None-Match: %d %s", r.status, r.body)
	}
	r = e.do(http.MethodGet, "/v1/lake/namespaces/ns/tables/t1?snapshots=refs", nil, "If-None-Match", tagAll)
	if r.status != http.StatusOK {
		t.Fatalf("If-None-Match of another mode: %d", r.status)
	}
	e.ok(http.MethodHead, "/v1/lake/namespaces/ns/tables/t1", nil, http.StatusNoContent, nil)

	var creds struct {
		StorageCredentials []any `json:"storage-credentials"`
	}
	e.ok(http.MethodGet, "/v1/lake/namespaces/ns/tables/t1/credentials", nil, http.StatusOK, &creds)
	if creds.StorageCredentials == nil || len(creds.StorageCredentials) != 0 {
		t.Fatalf("credentials %+v", creds)
	}
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables/t1/metrics", `{"report-type":"scan-report","table-name":"ns.t1","snapshot-id":1}`, http.StatusNoContent, nil)
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables/t1/metrics", `{"report-type":"commit-report"}`, http.StatusNoContent, nil)

	// An explicit location inside the warehouse is kept.
	var custom loadTableResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("t2", `,"location":"`+e.wh+`/custom/t2/"`), http.StatusOK, &custom)
	if custom.Metadata["location"] != e.wh+"/custom/t2" {
		t.Fatalf("location %v", custom.Metadata["location"])
	}
	// Fresh field ids, as Java assigns them.
	var fresh loadTableResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables", `{"name":"t3","schema":{"type":"struct","schema-id":7,"fields":[
		{"id":10,"name":"a","type":"int","required":true},{"id":20,"name":"b","type":"string","required":false}]}}`, http.StatusOK, &fresh)
	fields := fresh.Metadata["schemas"].([]any)[0].(map[string]any)["fields"].([]any)
	if fields[0].(map[string]any)["id"].(float64) != 1 || fields[1].(map[string]any)["id"].(float64) != 2 || fresh.Metadata["last-column-id"].(float64) != 2 {
		t.Fatalf("field ids not fresh: %v", fields)
	}

	var list struct {
		Identifiers []struct {
			Name string `json:"name"`
		} `json:"identifiers"`
	}
	e.ok(http.MethodGet, "/v1/lake/namespaces/ns/tables", nil, http.StatusOK, &list)
	if len(list.Identifiers) != 3 {
		t.Fatalf("listed %v", list.Identifiers)
	}
}

func TestTableErrors(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createTable("lake", "ns", "t")
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/views", `{"name":"v","schema":`+schemaJSON+`,"view-version":{"version-id":1,"schema-id":0,"timestamp-ms":1,"summary":{},"representations":[{"type":"sql","sql":"select 1","dialect":"spark"}],"default-namespace":["ns"]}}`, http.StatusOK, nil)
	outside := strings.TrimSuffix(e.wh, "/warehouse") + "/elsewhere/t"

	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		typ, msg           string
	}{
		{"create exists", "POST", "/v1/lake/namespaces/ns/tables", createTableBody("t", ""), 409, "AlreadyExistsException", "Table already exists: ns.t"},
		{"create over view", "POST", "/v1/lake/namespaces/ns/tables", createTableBody("v", ""), 409, "AlreadyExistsException", "View with same name already exists: ns.v"},
		{"create no namespace", "POST", "/v1/lake/namespaces/missing/tables", createTableBody("t", ""), 404, "NoSuchNamespaceException", "Namespace does not exist: missing"},
		{"create no schema", "POST", "/v1/lake/namespaces/ns/tables", `{"name":"x"}`, 400, "BadRequestException", "…schema is missing"},
		{"create no name", "POST", "/v1/lake/namespaces/ns/tables", `{"schema":` + schemaJSON + `}`, 400, "BadRequestException", ""},
		{"create malformed", "POST", "/v1/lake/namespaces/ns/tables", `{"name":"x","schema":`, 400, "BadRequestException", "malformed JSON"},
		{"create outside warehouse", "POST", "/v1/lake/namespaces/ns/tables", createTableBody("x", `,"location":"`+outside+`"`), 400, "BadRequestException", "…outside the warehouse"},
		{"create dotdot", "POST", "/v1/lake/namespaces/ns/tables", createTableBody("x", `,"location":"`+e.wh+`/ns/../../escape"`), 400, "BadRequestException", "…\"..\" segment"},
		{"create encoded dotdot", "POST", "/v1/lake/namespaces/ns/tables", createTableBody("x", `,"location":"`+e.wh+`/ns/%2e%2e/%2E%2E/escape"`), 400, "BadRequestException", "…\"..\" segment"},
		{"create warehouse root", "POST", "/v1/lake/namespaces/ns/tables", createTableBody("x", `,"location":"`+e.wh+`"`), 400, "BadRequestException", "…outside the warehouse"},
		{"create other scheme", "POST", "/v1/lake/namespaces/ns/tables", createTableBody("x", `,"location":"s3://bucket/t"`), 400, "BadRequestException", "…outside the warehouse"},
		{"create remote host", "POST", "/v1/lake/namespaces/ns/tables", createTableBody("x", `,"location":"file://host/x"`), 400, "BadRequestException", "…remote host"},
		{"create sibling prefix", "POST", "/v1/lake/namespaces/ns/tables", createTableBody("x", `,"location":"`+e.wh+`2/x"`), 400, "BadRequestException", "…outside the warehouse"},
		{"create bad partition", "POST", "/v1/lake/namespaces/ns/tables", createTableBody("x", `,"partition-spec":{"spec-id":0,"fields":[{"source-id":99,"field-id":1000,"name":"p","transform":"identity"}]}`), 400, "IllegalArgumentException", "cannot create table ns.x"},
		{"create metadata path outside", "POST", "/v1/lake/namespaces/ns/tables", createTableBody("x", `,"properties":{"write.metadata.path":"`+outside+`"}`), 400, "BadRequestException", "…outside the warehouse"},
		{"load missing", "GET", "/v1/lake/namespaces/ns/tables/missing", nil, 404, "NoSuchTableException", "Table does not exist: ns.missing"},
		{"load missing namespace", "GET", "/v1/lake/namespaces/missing/tables/t", nil, 404, "NoSuchTableException", "Table does not exist: missing.t"},
		{"load metadata table", "GET", "/v1/lake/namespaces/ns%1Ft/tables/files", nil, 404, "NoSuchTableException", "Table does not exist: ns.t.files"},
		{"load view as table", "GET", "/v1/lake/namespaces/ns/tables/v", nil, 404, "NoSuchTableException", "Table does not exist: ns.v"},
		{"load bad snapshots", "GET", "/v1/lake/namespaces/ns/tables/t?snapshots=some", nil, 400, "BadRequestException", "snapshots must be"},
		{"head missing", "HEAD", "/v1/lake/namespaces/ns/tables/missing", nil, 404, "", ""},
		{"drop missing", "DELETE", "/v1/lake/namespaces/ns/tables/missing", nil, 404, "NoSuchTableException", "Table does not exist: ns.missing"},
		{"drop bad purge", "DELETE", "/v1/lake/namespaces/ns/tables/t?purgeRequested=maybe", nil, 400, "BadRequestException", "…purgeRequested"},
		{"credentials missing", "GET", "/v1/lake/namespaces/ns/tables/missing/credentials", nil, 404, "NoSuchTableException", "Table does not exist: ns.missing"},
		{"metrics bad type", "POST", "/v1/lake/namespaces/ns/tables/t/metrics", `{"report-type":"guess"}`, 400, "BadRequestException", "unknown metrics report-type"},
		{"metrics no type", "POST", "/v1/lake/namespaces/ns/tables/t/metrics", `{}`, 400, "BadRequestException", "metrics report has no report-type"},
		{"metrics missing table", "POST", "/v1/lake/namespaces/ns/tables/missing/metrics", `{"report-type":"scan-report"}`, 404, "NoSuchTableException", "Table does not exist: ns.missing"},
		{"unregister missing", "POST", "/v1/lake/namespaces/ns/tables/missing/unregister", nil, 404, "NoSuchTableException", "Table does not exist: ns.missing"},
		{"rename missing", "POST", "/v1/lake/tables/rename", `{"source":{"namespace":["ns"],"name":"missing"},"destination":{"namespace":["ns"],"name":"x"}}`, 404, "NoSuchTableException", "Table does not exist: ns.missing"},
		{"rename onto table", "POST", "/v1/lake/tables/rename", `{"source":{"namespace":["ns"],"name":"t"},"destination":{"namespace":["ns"],"name":"t"}}`, 409, "AlreadyExistsException", "Table already exists: ns.t"},
		{"rename onto view", "POST", "/v1/lake/tables/rename", `{"source":{"namespace":["ns"],"name":"t"},"destination":{"namespace":["ns"],"name":"v"}}`, 409, "AlreadyExistsException", "Cannot rename ns.t to ns.v. View already exists"},
		{"rename no namespace", "POST", "/v1/lake/tables/rename", `{"source":{"namespace":["ns"],"name":"t"},"destination":{"namespace":["missing"],"name":"t"}}`, 404, "NoSuchNamespaceException", "Namespace does not exist: missing"},
		{"rename malformed", "POST", "/v1/lake/tables/rename", `{"source":{}}`, 400, "BadRequestException", ""},
		{"register outside", "POST", "/v1/lake/namespaces/ns/register", `{"name":"r","metadata-location":"` + outside + `/m.metadata.json"}`, 400, "BadRequestException", "…outside the warehouse"},
		{"register missing file", "POST", "/v1/lake/namespaces/ns/register", `{"name":"r","metadata-location":"` + e.wh + `/nothing.metadata.json"}`, 400, "BadRequestException", "cannot register table ns.r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			checkError(t, e.do(tc.method, tc.path, tc.body), tc.status, tc.typ, tc.msg)
		})
	}
}

func TestDropRenameRegister(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createNamespace("lake", "other")
	created := e.createTable("lake", "ns", "t")
	main, _ := e.store.GetRef(versionstore.DefaultBranch)
	before, err := e.store.GetContent(t.Context(), main.Head, versionstore.ContentKey{"ns", "t"})
	if err != nil {
		t.Fatal(err)
	}

	// Rename keeps the content id and the metadata; one commit.
	e.ok(http.MethodPost, "/v1/lake/tables/rename", `{"source":{"namespace":["ns"],"name":"t"},"destination":{"namespace":["other"],"name":"u"}}`, http.StatusNoContent, nil)
	checkError(t, e.do(http.MethodGet, "/v1/lake/namespaces/ns/tables/t", nil), 404, "NoSuchTableException", "Table does not exist: ns.t")
	renamed := e.loadTable("lake", "other", "u")
	if *renamed.MetadataLocation != *created.MetadataLocation {
		t.Fatalf("rename moved the metadata: %s", *renamed.MetadataLocation)
	}
	main, _ = e.store.GetRef(versionstore.DefaultBranch)
	after, err := e.store.GetContent(t.Context(), main.Head, versionstore.ContentKey{"other", "u"})
	if err != nil {
		t.Fatal(err)
	}
	if after.ID != before.ID {
		t.Fatalf("content id changed by rename: %s -> %s", before.ID, after.ID)
	}
	c, _ := e.store.ReadCommit(t.Context(), main.Head)
	if len(c.Operations) != 2 || c.Properties["iceberg.operation"] != "rename" || c.Message != "iceberg: rename table ns.t to other.u" {
		t.Fatalf("rename commit %q %v %v", c.Message, c.Properties, c.Operations)
	}

	// Unregister answers with the metadata and removes the key only.
	var unreg struct {
		MetadataLocation string         `json:"metadata-location"`
		Metadata         map[string]any `json:"metadata"`
	}
	e.ok(http.MethodPost, "/v1/lake/namespaces/other/tables/u/unregister", nil, http.StatusOK, &unreg)
	if unreg.MetadataLocation != *created.MetadataLocation || unreg.Metadata["table-uuid"] != created.Metadata["table-uuid"] {
		t.Fatalf("unregister %+v", unreg)
	}
	checkError(t, e.do(http.MethodHead, "/v1/lake/namespaces/other/tables/u", nil), 404, "", "")

	// Register it back, then again without and with overwrite.
	body := `{"name":"back","metadata-location":"` + unreg.MetadataLocation + `"}`
	var reg loadTableResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/register", body, http.StatusOK, &reg)
	if *reg.MetadataLocation != unreg.MetadataLocation {
		t.Fatalf("registered %s", *reg.MetadataLocation)
	}
	checkError(t, e.do(http.MethodPost, "/v1/lake/namespaces/ns/register", body), 409, "AlreadyExistsException", "Table already exists: ns.back")
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/register", `{"name":"back","overwrite":true,"metadata-location":"`+unreg.MetadataLocation+`"}`, http.StatusOK, nil)
	checkError(t, e.do(http.MethodPost, "/v1/lake/namespaces/missing/register", body), 404, "NoSuchNamespaceException", "Namespace does not exist: missing")

	// Drop with purge: the key goes, every file stays.
	metaPath := fileURLPath(t, unreg.MetadataLocation)
	e.ok(http.MethodDelete, "/v1/lake/namespaces/ns/tables/back?purgeRequested=true", nil, http.StatusNoContent, nil)
	checkError(t, e.do(http.MethodGet, "/v1/lake/namespaces/ns/tables/back", nil), 404, "NoSuchTableException", "Table does not exist: ns.back")
	if _, err := os.Stat(metaPath); err != nil {
		t.Fatalf("purge deleted files: %v", err)
	}
	main, _ = e.store.GetRef(versionstore.DefaultBranch)
	c, _ = e.store.ReadCommit(t.Context(), main.Head)
	if c.Properties["iceberg.operation"] != "drop" || c.Properties["iceberg.purge-requested"] != "true" {
		t.Fatalf("drop commit %v", c.Properties)
	}
	if _, err := os.Stat(path.Dir(metaPath)); err != nil {
		t.Fatal(err)
	}
}
