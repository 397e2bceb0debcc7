package icebergrest_test

import (
	"net/http"
	"testing"
)

// TestTrailingJSON: on every endpoint that takes a body, bytes after the
// JSON value are a 400 and nothing changes; trailing whitespace is fine.
func TestTrailingJSON(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	created := e.createTable("lake", "ns", "t")
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/views", viewBody("v", "select 1"), http.StatusOK, nil)
	var view loadViewResult
	e.ok(http.MethodGet, "/v1/lake/namespaces/ns/views/v", nil, http.StatusOK, &view)
	noop := commitBody("", `{"action":"set-properties","updates":{"k":"v"}}`)
	for _, tc := range []struct {
		name, path, body string
		status           int // of the body without trailing bytes
	}{
		{"create namespace", "/v1/lake/namespaces", `{"namespace":["trail"]}`, http.StatusOK},
		{"update namespace properties", "/v1/lake/namespaces/ns/properties", `{"updates":{"k":"v"}}`, http.StatusOK},
		{"create table", "/v1/lake/namespaces/ns/tables", createTableBody("t2", ""), http.StatusOK},
		{"register table", "/v1/lake/namespaces/ns/register", `{"name":"t3","metadata-location":"` + *created.MetadataLocation + `"}`, http.StatusOK},
		{"update table", "/v1/lake/namespaces/ns/tables/t", noop, http.StatusOK},
		{"report metrics", "/v1/lake/namespaces/ns/tables/t/metrics", `{"report-type":"scan-report","table-name":"ns.t","snapshot-id":1,"filter":true,"schema-id":0,"projected-field-ids":[],"projected-field-names":[],"metrics":{}}`, http.StatusNoContent},
		{"rename table", "/v1/lake/tables/rename", `{"source":{"namespace":["ns"],"name":"t"},"destination":{"namespace":["ns"],"name":"t4"}}`, http.StatusNoContent},
		{"commit transaction", "/v1/lake/transactions/commit", `{"table-changes":[{"identifier":{"namespace":["ns"],"name":"t2"},"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}]}`, http.StatusNoContent},
		{"create view", "/v1/lake/namespaces/ns/views", viewBody("v2", "select 2"), http.StatusOK},
		{"register view", "/v1/lake/namespaces/ns/register-view", `{"name":"v3","metadata-location":"` + view.MetadataLocation + `"}`, http.StatusOK},
		{"replace view", "/v1/lake/namespaces/ns/views/v", `{"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`, http.StatusOK},
		{"rename view", "/v1/lake/views/rename", `{"source":{"namespace":["ns"],"name":"v"},"destination":{"namespace":["ns"],"name":"v4"}}`, http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			for _, tail := range []string{"]]]}}", "}", "]", "x", " {}", `"s"`, "\x00"} {
				r := e.do(http.MethodPost, tc.path, tc.body+tail)
				checkError(t, r, http.StatusBadRequest, "BadRequestException", "malformed JSON request body")
			}
			e.ok(http.MethodPost, tc.path, tc.body+" \r\n\t", tc.status, nil)
		})
	}
}

// TestHeadErrorContentType: a HEAD error has no body but the content type
// of the error model, as the spec lists for every HEAD 404.
func TestHeadErrorContentType(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/v1/lake/namespaces/nope", "/v1/lake/namespaces/nope/tables/t", "/v1/lake/namespaces/nope/views/v"} {
		r := e.do(http.MethodHead, path, nil)
		if r.status != http.StatusNotFound || r.header.Get("Content-Type") != "application/json" || len(r.body) != 0 {
			t.Fatalf("HEAD %s: %d %q %q", path, r.status, r.header.Get("Content-Type"), r.body)
		}
	}
}
