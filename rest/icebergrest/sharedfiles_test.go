package icebergrest_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// checkSharedFileProps asserts that metadata (a decoded answer's or
// file's) carries gc.enabled=false and
// write.metadata.delete-after-commit.enabled=false.
func checkSharedFileProps(t *testing.T, what string, metadata map[string]any) {
	t.Helper()
	props, _ := metadata["properties"].(map[string]any)
	if props["gc.enabled"] != "false" || props["write.metadata.delete-after-commit.enabled"] != "false" {
		t.Fatalf("%s: properties %v, want gc.enabled=false and write.metadata.delete-after-commit.enabled=false", what, props)
	}
}

// readMetadataFile decodes the metadata file at a file:// location.
func readMetadataFile(t *testing.T, loc string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(fileURLPath(t, loc))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// sharedFilesMsg is the part of every refusal that says why and what to
// use instead.
const sharedFilesMsg = "…catalog branches share data and metadata files, so an engine deleting files"

func TestSharedFilePropertiesOnCreate(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")

	created := e.createTable("lake", "ns", "plain")
	checkSharedFileProps(t, "create answer", created.Metadata)
	checkSharedFileProps(t, "created file", readMetadataFile(t, *created.MetadataLocation))
	checkSharedFileProps(t, "load", e.loadTable("lake", "ns", "plain").Metadata)

	// Explicit false, in any case, is accepted and written as false.
	var res loadTableResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables",
		createTableBody("explicit", `,"properties":{"gc.enabled":"FALSE","owner":"me"}`), http.StatusOK, &res)
	checkSharedFileProps(t, "create with gc.enabled=FALSE", res.Metadata)
	if res.Metadata["properties"].(map[string]any)["owner"] != "me" {
		t.Fatalf("properties %v", res.Metadata["properties"])
	}

	// A staged create (CTAS, RTAS, createTransaction) answers with them,
	// and the assert-create commit writes them even if it does not send
	// them back.
	var staged loadTableResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("staged", `,"stage-create":true`), http.StatusOK, &staged)
	checkSharedFileProps(t, "stage-create answer", staged.Metadata)
	commit := commitBody(`{"type":"assert-create"}`, `
		{"action":"assign-uuid","uuid":"`+staged.Metadata["table-uuid"].(string)+`"},
		{"action":"upgrade-format-version","format-version":2},
		{"action":"add-schema","schema":`+schemaJSON+`},
		{"action":"set-current-schema","schema-id":-1},
		{"action":"add-spec","spec":{"spec-id":0,"fields":[]}},
		{"action":"set-default-spec","spec-id":-1},
		{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},
		{"action":"set-default-sort-order","sort-order-id":-1}`)
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables/staged", commit, http.StatusOK, &res)
	checkSharedFileProps(t, "assert-create answer", res.Metadata)
	checkSharedFileProps(t, "assert-create file", readMetadataFile(t, *res.MetadataLocation))

	for _, tc := range []struct {
		name, body, msg string
	}{
		{"gc true", createTableBody("r1", `,"properties":{"gc.enabled":"true"}`), "cannot create table ns.r1 with gc.enabled=true: "},
		{"gc TRUE staged", createTableBody("r2", `,"stage-create":true,"properties":{"gc.enabled":"TRUE"}`), "cannot create table ns.r2 with gc.enabled=TRUE: "},
		{"delete-after-commit", createTableBody("r3", `,"properties":{"write.metadata.delete-after-commit.enabled":"yes"}`),
			"cannot create table ns.r3 with write.metadata.delete-after-commit.enabled=yes: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			r := e.do(http.MethodPost, "/v1/lake/namespaces/ns/tables", tc.body)
			checkError(t, r, 400, "BadRequestException", tc.msg)
			checkError(t, r, 400, "BadRequestException", sharedFilesMsg)
			checkError(t, r, 400, "BadRequestException", "…`floe gc` deletes the files")
		})
	}
	checkError(t, e.do(http.MethodHead, "/v1/lake/namespaces/ns/tables/r1", nil), 404, "", "")
}

// writeOldMetadata writes a metadata file as another catalog (or floe
// before it set the shared-file properties) would: without them, or with
// the given properties, and returns its location.
func writeOldMetadata(t *testing.T, e *testEnv, name string, props iceberg.Properties) string {
	t.Helper()
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	dir := filepath.Join(e.whDir, "ns", name)
	meta, err := table.NewMetadata(schema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, e.wh+"/ns/"+name, props)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "metadata"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := "00000-" + uuid.NewString() + ".metadata.json"
	if err := os.WriteFile(filepath.Join(dir, "metadata", file), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return e.wh + "/ns/" + name + "/metadata/" + file
}

// TestSharedFilePropertiesOfExistingTables: a table whose metadata file
// lacks the properties (registered here; equally one created by an older
// floe or put through the Nessie API) is served with them without its file
// being rewritten, and gets them in its next metadata file.
func TestSharedFilePropertiesOfExistingTables(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	for _, tc := range []struct {
		name  string
		props iceberg.Properties
	}{
		{"none", iceberg.Properties{"owner": "old"}},
		// Registering keeps the client's file, whatever it says: served
		// and written as false all the same.
		{"gc-on", iceberg.Properties{"owner": "old", "gc.enabled": "true", "write.metadata.delete-after-commit.enabled": "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			loc := writeOldMetadata(t, e, tc.name, tc.props)
			before, err := os.ReadFile(fileURLPath(t, loc))
			if err != nil {
				t.Fatal(err)
			}
			var reg loadTableResult
			e.ok(http.MethodPost, "/v1/lake/namespaces/ns/register", `{"name":"`+tc.name+`","metadata-location":"`+loc+`"}`, http.StatusOK, &reg)
			if *reg.MetadataLocation != loc {
				t.Fatalf("registered at %s, want %s", *reg.MetadataLocation, loc)
			}
			checkSharedFileProps(t, "register answer", reg.Metadata)

			path := "/v1/lake/namespaces/ns/tables/" + tc.name
			for _, q := range []string{"", "?snapshots=refs"} {
				var res loadTableResult
				e.ok(http.MethodGet, path+q, nil, http.StatusOK, &res)
				checkSharedFileProps(t, "load"+q, res.Metadata)
				if *res.MetadataLocation != loc || res.Metadata["properties"].(map[string]any)["owner"] != "old" ||
					res.Metadata["table-uuid"] != reg.Metadata["table-uuid"] {
					t.Fatalf("load%s: %s %v", q, *res.MetadataLocation, res.Metadata)
				}
			}
			if after, _ := os.ReadFile(fileURLPath(t, loc)); string(after) != string(before) {
				t.Fatal("loading rewrote the metadata file")
			}

			// A commit that changes nothing writes nothing and still
			// answers with the properties.
			var res loadTableResult
			e.ok(http.MethodPost, path, commitBody("", ""), http.StatusOK, &res)
			if *res.MetadataLocation != loc {
				t.Fatalf("a no-op commit wrote %s", *res.MetadataLocation)
			}
			checkSharedFileProps(t, "no-op commit answer", res.Metadata)

			// The next commit writes them.
			e.ok(http.MethodPost, path, commitBody("", `{"action":"set-properties","updates":{"stage":"1"}}`), http.StatusOK, &res)
			if *res.MetadataLocation == loc {
				t.Fatal("the commit wrote no metadata file")
			}
			checkSharedFileProps(t, "commit answer", res.Metadata)
			written := readMetadataFile(t, *res.MetadataLocation)
			checkSharedFileProps(t, "committed file", written)
			if p := written["properties"].(map[string]any); p["owner"] != "old" || p["stage"] != "1" {
				t.Fatalf("committed properties %v", p)
			}
		})
	}
}

func TestCommitRefusesGC(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createTable("lake", "ns", "t")
	e.createTable("lake", "ns", "u")
	path := "/v1/lake/namespaces/ns/tables/t"
	before := e.loadTable("lake", "ns", "t")

	for _, tc := range []struct {
		name, updates, msg string
	}{
		{"gc true", `{"action":"set-properties","updates":{"gc.enabled":"true"}}`, "cannot set gc.enabled=true on table ns.t: "},
		{"gc True", `{"action":"set-properties","updates":{"owner":"x","gc.enabled":"True"}}`, "cannot set gc.enabled=True on table ns.t: "},
		{"delete-after-commit", `{"action":"set-properties","updates":{"write.metadata.delete-after-commit.enabled":"true"}}`,
			"cannot set write.metadata.delete-after-commit.enabled=true on table ns.t: "},
		{"gc garbage", `{"action":"set-properties","updates":{"gc.enabled":"1"}}`, "cannot set gc.enabled=1 on table ns.t: "},
		{"remove gc", `{"action":"remove-properties","removals":["gc.enabled"]}`, "cannot remove gc.enabled from table ns.t: "},
		{"remove delete-after-commit", `{"action":"set-properties","updates":{"a":"1"}},{"action":"remove-properties","removals":["write.metadata.delete-after-commit.enabled"]}`,
			"cannot remove write.metadata.delete-after-commit.enabled from table ns.t: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			r := e.do(http.MethodPost, path, commitBody("", tc.updates))
			checkError(t, r, 400, "BadRequestException", tc.msg)
			checkError(t, r, 400, "BadRequestException", sharedFilesMsg)
			checkError(t, r, 400, "BadRequestException", "…may corrupt other branches' tables")
			checkError(t, r, 400, "BadRequestException", "…`floe gc` deletes the files")

			// In a transaction, nothing changes, not even the other table.
			tx := `{"table-changes":[` +
				`{"identifier":{"namespace":["ns"],"name":"u"},"requirements":[],"updates":[{"action":"set-properties","updates":{"p":"1"}}]},` +
				`{"identifier":{"namespace":["ns"],"name":"t"},"requirements":[],"updates":[` + tc.updates + `]}]}`
			checkError(t, e.do(http.MethodPost, "/v1/lake/transactions/commit", tx), 400, "BadRequestException", tc.msg)
			if p := e.loadTable("lake", "ns", "u").Metadata["properties"].(map[string]any); p["p"] != nil {
				t.Fatalf("a refused transaction changed ns.u: %v", p)
			}
		})
	}
	if after := e.loadTable("lake", "ns", "t"); *after.MetadataLocation != *before.MetadataLocation {
		t.Fatal("a refused commit changed ns.t")
	}

	// Other properties, and an explicit false, commit and keep the two.
	var res loadTableResult
	e.ok(http.MethodPost, path, commitBody("", `{"action":"set-properties","updates":{"owner":"x","gc.enabled":"false"}},`+
		`{"action":"remove-properties","removals":["nothing"]}`), http.StatusOK, &res)
	checkSharedFileProps(t, "commit answer", res.Metadata)
	checkSharedFileProps(t, "committed file", readMetadataFile(t, *res.MetadataLocation))
	if res.Metadata["properties"].(map[string]any)["owner"] != "x" {
		t.Fatalf("properties %v", res.Metadata["properties"])
	}
}
