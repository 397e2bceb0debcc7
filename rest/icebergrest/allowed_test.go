package icebergrest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/rest/icebergrest"
)

// TestAllowedLocations: an operator's allowed location prefixes let
// clients place tables and views outside the warehouse (create location,
// set-location, write.metadata.path), and files there are written and
// read; a location outside them, or beside one (a look-alike prefix),
// stays refused.
func TestAllowedLocations(t *testing.T) {
	allowed := t.TempDir() + "/allowed"
	e := newEnvAt(t, t.TempDir(), func(d *icebergrest.Deps) {
		d.Warehouses[0].AllowedLocations = []string{"file://" + allowed}
	})
	e.createNamespace("lake", "ns")

	var res loadTableResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("t", `,"location":"file://`+allowed+`/t"`), http.StatusOK, &res)
	if res.MetadataLocation == nil || !strings.HasPrefix(*res.MetadataLocation, "file://"+allowed+"/t/metadata/") {
		t.Fatalf("metadata location %v, want under the allowed location", res.MetadataLocation)
	}
	if got := e.loadTable("lake", "ns", "t"); *got.MetadataLocation != *res.MetadataLocation {
		t.Fatalf("load: metadata location %q, want %q", *got.MetadataLocation, *res.MetadataLocation)
	}
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables/t",
		commitBody("", `{"action":"set-location","location":"`+allowed+`/moved"}`), http.StatusOK, nil)
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("m",
		`,"properties":{"write.metadata.path":"file://`+allowed+`/meta"}`), http.StatusOK, &res)
	if !strings.HasPrefix(*res.MetadataLocation, "file://"+allowed+"/meta/") {
		t.Fatalf("metadata location %q, want under write.metadata.path", *res.MetadataLocation)
	}
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/views", `{"name":"v","location":"file://`+allowed+`/v","schema":`+schemaJSON+`,"view-version":{"version-id":1,"schema-id":0,"timestamp-ms":1,"summary":{},"representations":[{"type":"sql","sql":"select 1","dialect":"spark"}],"default-namespace":["ns"]}}`, http.StatusOK, nil)

	for name, loc := range map[string]string{
		"look-alike": "file://" + allowed + "-evil/x",
		"outside":    "file:///tmp/elsewhere/x",
		"climbing":   "file://" + allowed + "/../x",
		"the prefix": "file://" + allowed,
	} {
		t.Run(name, func(t *testing.T) {
			e := e.with(t)
			checkError(t, e.do(http.MethodPost, "/v1/lake/namespaces/ns/tables", createTableBody("x", `,"location":"`+loc+`"`)), 400, "BadRequestException", "")
			checkError(t, e.do(http.MethodPost, "/v1/lake/namespaces/ns/tables/t",
				commitBody("", `{"action":"set-location","location":"`+loc+`"}`)), 400, "BadRequestException", "")
		})
	}
}
