package icebergrest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
)

// Fuzz targets for the request bodies of the Iceberg REST API: each sends
// arbitrary bytes as the body of one route of a real server (a Pebble
// store and a warehouse in a temporary directory, on loopback) that holds
// namespace ns, table ns.t and view ns.v. Whatever the body, the answer is
// never a 5xx; it is a 2xx (the body was a valid request) or a 4xx in the
// Iceberg error model, its code the status. The seed corpora live in
// testdata/fuzz/<FuzzName>/; `make test` runs them, `make fuzz` explores.

// fuzzServer starts the server the targets share and creates what their
// routes act on.
func fuzzServer(f *testing.F) string {
	f.Helper()
	s := testserver.Start(f, testserver.Options{})
	for _, req := range []struct{ path, body string }{
		{"/v1/lake/namespaces", `{"namespace":["ns"]}`},
		{"/v1/lake/namespaces/ns/tables", createTableBody("t", "")},
		{"/v1/lake/namespaces/ns/views", viewBody("v", "select 1")},
	} {
		res, err := http.Post(s.URL+req.path, "application/json", bytes.NewReader([]byte(req.body)))
		if err != nil {
			f.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			f.Fatalf("setup POST %s: status %d", req.path, res.StatusCode)
		}
	}
	return s.URL
}

// fuzzBody runs the target for method and path of the server.
func fuzzBody(f *testing.F, method, path string, seeds ...string) {
	url := fuzzServer(f)
	// A hung request is a finding too: it fails the input, not the run.
	client := &http.Client{Timeout: 10 * time.Second}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := http.NewRequestWithContext(t.Context(), method, url+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s with %q: %v", method, path, body, err)
		}
		defer res.Body.Close()
		data, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case res.StatusCode >= 500:
			t.Fatalf("%s %s with %q: status %d: %s", method, path, body, res.StatusCode, data)
		case res.StatusCode >= 400:
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    int    `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(data, &e); err != nil || e.Error.Code != res.StatusCode || e.Error.Type == "" || e.Error.Message == "" {
				t.Fatalf("%s %s with %q: status %d answers %s, not the Iceberg error model", method, path, body, res.StatusCode, data)
			}
		case res.StatusCode < 200 || res.StatusCode >= 300:
			t.Fatalf("%s %s with %q: status %d: %s", method, path, body, res.StatusCode, data)
		}
	})
}

func FuzzCreateNamespace(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/lake/namespaces",
		`{"namespace":["a"]}`, `{"namespace":["ns","b"],"properties":{"k":"v"}}`, `{"namespace":[]}`, `{"namespace":["x\u0000"]}`)
}

func FuzzUpdateNamespaceProperties(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/lake/namespaces/ns/properties",
		`{"updates":{"k":"v"}}`, `{"removals":["k","missing"]}`, `{"updates":{"k":"v"},"removals":["k"]}`)
}

func FuzzCreateTable(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/lake/namespaces/ns/tables",
		createTableBody("c1", ""),
		createTableBody("c2", `,"partition-spec":{"spec-id":0,"fields":[{"source-id":1,"field-id":1000,"name":"b","transform":"bucket[4]"}]}`),
		createTableBody("c3", `,"write-order":{"order-id":1,"fields":[{"source-id":2,"transform":"identity","direction":"asc","null-order":"nulls-first"}]}`),
		createTableBody("c4", `,"stage-create":true,"properties":{"k":"v"}`))
}

func FuzzUpdateTable(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/lake/namespaces/ns/tables/t",
		commitBody("", `{"action":"set-properties","updates":{"k":"v"}}`),
		commitBody(`{"type":"assert-create"}`, ""),
		commitBody(`{"type":"assert-current-schema-id","current-schema-id":0}`, `{"action":"remove-properties","removals":["k"]}`),
		commitBody("", `{"action":"add-schema","schema":`+schemaJSON+`}`),
		commitBody("", `{"action":"set-current-schema","schema-id":-1}`))
}

func FuzzCommitTransaction(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/lake/transactions/commit",
		`{"table-changes":[{"identifier":{"namespace":["ns"],"name":"t"},"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}]}`,
		`{"table-changes":[]}`)
}

func FuzzRegisterTable(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/lake/namespaces/ns/register",
		`{"name":"r1","metadata-location":"file:///etc/passwd"}`, `{"name":"r2","metadata-location":"/dev/zero"}`,
		`{"name":"r3","metadata-location":"file:///tmp/../etc/passwd","overwrite":true}`)
}

func FuzzRenameTable(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/lake/tables/rename",
		`{"source":{"namespace":["ns"],"name":"t"},"destination":{"namespace":["ns"],"name":"t"}}`,
		`{"source":{"namespace":["ns"],"name":"missing"},"destination":{"namespace":["ns"],"name":"m2"}}`)
}

func FuzzCreateView(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/lake/namespaces/ns/views", viewBody("v1", "select 1"), viewBody("v", "select 2"))
}

func FuzzReplaceView(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/lake/namespaces/ns/views/v",
		`{"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`,
		`{"requirements":[{"type":"assert-view-uuid","uuid":"00000000-0000-0000-0000-000000000000"}],"updates":[]}`)
}

func FuzzRenameView(f *testing.F) {
	fuzzBody(f, http.MethodPost, "/v1/lake/views/rename",
		`{"source":{"namespace":["ns"],"name":"v"},"destination":{"namespace":["ns"],"name":"v"}}`)
}
