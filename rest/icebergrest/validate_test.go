package icebergrest_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wideSchema has a column of most types, for transform rules.
const wideSchema = `{"type":"struct","schema-id":0,"fields":[
	{"id":1,"name":"i","type":"int","required":true},
	{"id":2,"name":"s","type":"string","required":false},
	{"id":3,"name":"b","type":"boolean","required":false},
	{"id":4,"name":"st","type":{"type":"struct","fields":[{"id":5,"name":"x","type":"int","required":false}]},"required":false},
	{"id":6,"name":"d","type":"double","required":false},
	{"id":7,"name":"dt","type":"date","required":false},
	{"id":8,"name":"ts","type":"timestamp","required":false},
	{"id":9,"name":"l","type":{"type":"list","element-id":10,"element":"int","element-required":false},"required":false}]}`

func specJSON(fields ...string) string {
	return `{"spec-id":0,"fields":[` + strings.Join(fields, ",") + `]}`
}

func orderJSON(fields ...string) string {
	return `{"order-id":1,"fields":[` + strings.Join(fields, ",") + `]}`
}

// badSpecs, badOrders and badSchemas are what Iceberg's Java
// implementation refuses; each must be a 400 wherever a client sends it.
var badSpecs = map[string]string{
	"bucket[-1]":         `{"source-id":1,"field-id":1000,"name":"p","transform":"bucket[-1]"}`,
	"bucket[0]":          `{"source-id":1,"field-id":1000,"name":"p","transform":"bucket[0]"}`,
	"truncate[-5]":       `{"source-id":2,"field-id":1000,"name":"p","transform":"truncate[-5]"}`,
	"unknown transform":  `{"source-id":1,"field-id":1000,"name":"p","transform":"zorder"}`,
	"bucket of boolean":  `{"source-id":3,"field-id":1000,"name":"p","transform":"bucket[4]"}`,
	"truncate of date":   `{"source-id":7,"field-id":1000,"name":"p","transform":"truncate[4]"}`,
	"truncate of double": `{"source-id":6,"field-id":1000,"name":"p","transform":"truncate[4]"}`,
	"year of int":        `{"source-id":1,"field-id":1000,"name":"p","transform":"year"}`,
	"hour of date":       `{"source-id":7,"field-id":1000,"name":"p","transform":"hour"}`,
	"identity of struct": `{"source-id":4,"field-id":1000,"name":"p","transform":"identity"}`,
	"identity of list":   `{"source-id":9,"field-id":1000,"name":"p","transform":"identity"}`,
	"missing source":     `{"source-id":99,"field-id":1000,"name":"p","transform":"identity"}`,
	"duplicate names":    `{"source-id":1,"field-id":1000,"name":"p","transform":"identity"},{"source-id":2,"field-id":1001,"name":"p","transform":"identity"}`,
	"empty name":         `{"source-id":1,"field-id":1000,"name":"","transform":"identity"}`,
}

var badOrders = map[string]string{
	"bucket[-1]":        `{"source-id":1,"transform":"bucket[-1]","direction":"asc","null-order":"nulls-first"}`,
	"bad direction":     `{"source-id":1,"transform":"identity","direction":"sideways","null-order":"nulls-first"}`,
	"bad null order":    `{"source-id":1,"transform":"identity","direction":"asc","null-order":"nulls-middle"}`,
	"missing source":    `{"source-id":99,"transform":"identity","direction":"asc","null-order":"nulls-first"}`,
	"bucket of boolean": `{"source-id":3,"transform":"bucket[4]","direction":"asc","null-order":"nulls-first"}`,
	"sort by struct":    `{"source-id":4,"transform":"identity","direction":"asc","null-order":"nulls-first"}`,
}

var badSchemas = map[string]string{
	"duplicate ids": `{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"a","type":"int","required":false},{"id":1,"name":"b","type":"int","required":false}]}`,
	"nested duplicate id": `{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"a","type":"int","required":false},` +
		`{"id":2,"name":"st","type":{"type":"struct","fields":[{"id":1,"name":"x","type":"int","required":false}]},"required":false}]}`,
	"duplicate names":           `{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"a","type":"int","required":false},{"id":2,"name":"a","type":"long","required":false}]}`,
	"identifier optional":       `{"type":"struct","schema-id":1,"identifier-field-ids":[1],"fields":[{"id":1,"name":"a","type":"int","required":false}]}`,
	"identifier double":         `{"type":"struct","schema-id":1,"identifier-field-ids":[1],"fields":[{"id":1,"name":"a","type":"double","required":true}]}`,
	"identifier missing":        `{"type":"struct","schema-id":1,"identifier-field-ids":[7],"fields":[{"id":1,"name":"a","type":"int","required":true}]}`,
	"identifier struct":         `{"type":"struct","schema-id":1,"identifier-field-ids":[2],"fields":[{"id":2,"name":"st","type":{"type":"struct","fields":[{"id":3,"name":"x","type":"int","required":true}]},"required":true}]}`,
	"identifier in list":        `{"type":"struct","schema-id":1,"identifier-field-ids":[3],"fields":[{"id":2,"name":"l","type":{"type":"list","element-id":3,"element":"int","element-required":true},"required":true}]}`,
	"identifier under optional": `{"type":"struct","schema-id":1,"identifier-field-ids":[3],"fields":[{"id":2,"name":"st","type":{"type":"struct","fields":[{"id":3,"name":"x","type":"int","required":true}]},"required":false}]}`,
}

// TestClientMetadataValidated: partition specs, sort orders and schemas a
// client sends are refused with a 400 when Iceberg's Java implementation
// would refuse them, in createTable, updateTable and views, and nothing is
// written.
func TestClientMetadataValidated(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	tables := "/v1/lake/namespaces/ns/tables"
	e.ok(http.MethodPost, tables, `{"name":"t","schema":`+wideSchema+`}`, http.StatusOK, nil)
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/views", viewBody("v0", "select 1"), http.StatusOK, nil)
	noNewFiles := snapshotFiles(t, e.whDir)

	for name, f := range badSpecs {
		t.Run("create spec "+name, func(t *testing.T) {
			r := e.with(t).do(http.MethodPost, tables, `{"name":"c","schema":`+wideSchema+`,"partition-spec":`+specJSON(f)+`}`)
			checkError(t, r, http.StatusBadRequest, "", "")
		})
		t.Run("add-spec "+name, func(t *testing.T) {
			r := e.with(t).do(http.MethodPost, tables+"/t", commitBody("", `{"action":"add-spec","spec":`+specJSON(f)+`}`))
			checkError(t, r, http.StatusBadRequest, "", "")
		})
	}
	for name, f := range badOrders {
		t.Run("create order "+name, func(t *testing.T) {
			r := e.with(t).do(http.MethodPost, tables, `{"name":"c","schema":`+wideSchema+`,"write-order":`+orderJSON(f)+`}`)
			checkError(t, r, http.StatusBadRequest, "", "")
		})
		t.Run("add-sort-order "+name, func(t *testing.T) {
			r := e.with(t).do(http.MethodPost, tables+"/t", commitBody("", `{"action":"add-sort-order","sort-order":`+orderJSON(f)+`}`))
			checkError(t, r, http.StatusBadRequest, "", "")
		})
	}
	for name, s := range badSchemas {
		t.Run("create schema "+name, func(t *testing.T) {
			r := e.with(t).do(http.MethodPost, tables, `{"name":"c","schema":`+s+`}`)
			checkError(t, r, http.StatusBadRequest, "", "")
		})
		t.Run("add-schema "+name, func(t *testing.T) {
			r := e.with(t).do(http.MethodPost, tables+"/t", commitBody("", `{"action":"add-schema","schema":`+s+`}`))
			checkError(t, r, http.StatusBadRequest, "", "")
		})
		t.Run("view add-schema "+name, func(t *testing.T) {
			r := e.with(t).do(http.MethodPost, "/v1/lake/namespaces/ns/views/v0", `{"updates":[{"action":"add-schema","schema":`+s+`}]}`)
			checkError(t, r, http.StatusBadRequest, "", "")
		})
		t.Run("create view schema "+name, func(t *testing.T) {
			body := strings.Replace(viewBody("v", "select 1"), schemaJSON, strings.Replace(s, `"schema-id":1`, `"schema-id":0`, 1), 1)
			r := e.with(t).do(http.MethodPost, "/v1/lake/namespaces/ns/views", body)
			checkError(t, r, http.StatusBadRequest, "", "")
		})
	}
	if got := snapshotFiles(t, e.whDir); len(got) != len(noNewFiles) {
		t.Fatalf("refused requests wrote files: %d before, %d after", len(noNewFiles), len(got))
	}
	// What is valid still passes.
	good := specJSON(`{"source-id":1,"field-id":1000,"name":"i_bucket","transform":"bucket[16]"}`,
		`{"source-id":2,"field-id":1001,"name":"s_trunc","transform":"truncate[4]"}`,
		`{"source-id":8,"field-id":1002,"name":"ts_hour","transform":"hour"}`,
		`{"source-id":3,"field-id":1003,"name":"b_void","transform":"void"}`,
		`{"source-id":5,"field-id":1004,"name":"x","transform":"identity"}`)
	order := orderJSON(`{"source-id":2,"transform":"truncate[2]","direction":"desc","null-order":"nulls-last"}`)
	e.ok(http.MethodPost, tables, `{"name":"ok","schema":`+wideSchema+`,"partition-spec":`+good+`,"write-order":`+order+`}`, http.StatusOK, nil)
	e.ok(http.MethodPost, tables+"/t", commitBody("", `{"action":"add-spec","spec":`+good+`},{"action":"add-sort-order","sort-order":`+order+`}`), http.StatusOK, nil)
}

// snapshotFiles lists every file below dir.
func snapshotFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
