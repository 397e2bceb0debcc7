package icebergrest_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/versionstore"
)

type configResponse struct {
	Defaults  map[string]string `json:"defaults"`
	Overrides map[string]string `json:"overrides"`
	Endpoints []string          `json:"endpoints"`

	IdempotencyKeyLifetime string `json:"idempotency-key-lifetime"`
}

func TestConfig(t *testing.T) {
	e := newEnv(t)
	main, err := e.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"etl/daily", "dev"} {
		if _, err := e.store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: name, Type: versionstore.Branch, Target: main.Head}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: "v1", Type: versionstore.Tag, Target: main.Head}); err != nil {
		t.Fatal(err)
	}
	hash := main.Head.String()

	for _, tc := range []struct {
		warehouse string
		prefix    string
	}{
		{"", "lake"},
		{"lake", "lake"},
		{"lake@dev", "lake@dev"},
		{"lake@etl/daily", "lake@etl%2Fdaily"},
		{"lake@v1", "lake@v1"},
		{"lake@" + hash, "lake@" + hash},
		{"lake@" + hash[:12], "lake@" + hash[:12]},
		{"lake@main@" + hash, "lake@main@" + hash},
		{"other", "other"},
	} {
		t.Run(tc.warehouse, func(t *testing.T) {
			e := e.with(t)
			var cfg configResponse
			e.ok(http.MethodGet, "/v1/config?warehouse="+strings.ReplaceAll(tc.warehouse, "/", "%2F"), nil, http.StatusOK, &cfg)
			if got := cfg.Overrides["prefix"]; got != tc.prefix {
				t.Errorf("prefix %q, want %q", got, tc.prefix)
			}
			if got := cfg.Overrides["namespace-separator"]; got != "%1F" {
				t.Errorf("namespace-separator %q", got)
			}
			if cfg.Defaults == nil || len(cfg.Defaults) != 0 {
				t.Errorf("defaults %v, want {}", cfg.Defaults)
			}
			if !slices.Equal(cfg.Endpoints, icebergrest.Endpoints()) {
				t.Errorf("endpoints %v", cfg.Endpoints)
			}
		})
	}

	var cfg configResponse
	e.ok(http.MethodGet, "/v1/config", nil, http.StatusOK, &cfg)
	if cfg.IdempotencyKeyLifetime != "PT30M" {
		t.Errorf("idempotency-key-lifetime %q, want PT30M", cfg.IdempotencyKeyLifetime)
	}
	for _, want := range []string{
		"HEAD /v1/{prefix}/namespaces/{namespace}",
		"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
		"HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
		"POST /v1/{prefix}/transactions/commit",
		"POST /v1/{prefix}/tables/rename",
		"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister",
	} {
		if !slices.Contains(cfg.Endpoints, want) {
			t.Errorf("endpoint %q not advertised", want)
		}
	}

	for _, tc := range []struct {
		warehouse string
		status    int
		typ, msg  string
	}{
		// The spec lists no 404 for getConfig: 400, as for other bad
		// parameters (the other routes answer 404 NoSuchWarehouse).
		{"nowhere", 400, "BadRequestException", "Warehouse does not exist: nowhere"},
		// A branch not made yet says how to make it.
		{"lake@nosuch", 400, "BadRequestException", "…reference \"nosuch\" does not exist; create the branch first, e.g. `floe branch create nosuch --from main`"},
		// A branch name with a slash, as ETL branches are often named, and
		// expressions that pin a commit or step back on a missing branch:
		// the command names the branch alone.
		{"lake@etl/new", 400, "BadRequestException", "…reference \"etl/new\" does not exist; create the branch first, e.g. `floe branch create etl/new --from main`"},
		{"lake@nosuch~1", 400, "BadRequestException", "…reference \"nosuch\" does not exist; create the branch first, e.g. `floe branch create nosuch --from main`"},
		{"lake@nosuch@0123456789abcdef", 400, "BadRequestException", "…reference \"nosuch\" does not exist; create the branch first, e.g. `floe branch create nosuch --from main`"},
		{"lake@0123456789abcdef", 400, "BadRequestException", "…"},
		{"lake@bad..name", 400, "BadRequestException", "Invalid reference"},
	} {
		t.Run("error/"+tc.warehouse, func(t *testing.T) {
			e := e.with(t)
			checkError(t, e.do(http.MethodGet, "/v1/config?warehouse="+tc.warehouse, nil), tc.status, tc.typ, tc.msg)
		})
	}
}

// TestPrefixForms checks that floe's own prefix and Nessie's
// "{ref}|{warehouse}" name the same thing.
func TestPrefixForms(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	for _, prefix := range []string{"lake", "lake@main", "main%7Clake", "main|lake", "main%7C"} {
		t.Run(prefix, func(t *testing.T) {
			e := e.with(t)
			e.ok(http.MethodHead, "/v1/"+prefix+"/namespaces/ns", nil, http.StatusNoContent, nil)
		})
	}
	checkError(t, e.do(http.MethodGet, "/v1/nowhere/namespaces", nil), 404, "NoSuchWarehouseException", "Warehouse does not exist: nowhere")
	checkError(t, e.do(http.MethodGet, "/v1/main%7Cnowhere/namespaces", nil), 404, "NoSuchWarehouseException", "Warehouse does not exist: nowhere")
}

// TestBranchSelection writes through lake@dev and checks main does not see
// it, and that a tag or a commit hash gives a read-only catalog.
func TestBranchSelection(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.createNamespace("lake", "ns")
	main, err := e.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	pinned := main.Head.String()
	if _, err := e.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "dev", Type: versionstore.Branch, Target: main.Head}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "v1", Type: versionstore.Tag, Target: main.Head}); err != nil {
		t.Fatal(err)
	}

	e.createTable("lake@dev", "ns", "dev_only")
	e.ok(http.MethodHead, "/v1/lake@dev/namespaces/ns/tables/dev_only", nil, http.StatusNoContent, nil)
	checkError(t, e.do(http.MethodGet, "/v1/lake/namespaces/ns/tables/dev_only", nil), 404, "NoSuchTableException", "Table does not exist: ns.dev_only")
	checkError(t, e.do(http.MethodHead, "/v1/lake/namespaces/ns/tables/dev_only", nil), 404, "", "")
	checkError(t, e.do(http.MethodHead, "/v1/dev%7Clake/namespaces/ns/tables/missing", nil), 404, "", "")
	e.ok(http.MethodHead, "/v1/dev%7Clake/namespaces/ns/tables/dev_only", nil, http.StatusNoContent, nil)

	// Table on main, then a commit that pins main before it.
	e.createTable("lake", "ns", "t")
	for _, prefix := range []string{"lake@v1", "lake@" + pinned, "lake@main@" + pinned, "v1%7Clake"} {
		t.Run(prefix, func(t *testing.T) {
			e := e.with(t)
			// Reads see the pinned state: ns exists, t does not.
			e.ok(http.MethodHead, "/v1/"+prefix+"/namespaces/ns", nil, http.StatusNoContent, nil)
			checkError(t, e.do(http.MethodHead, "/v1/"+prefix+"/namespaces/ns/tables/t", nil), 404, "", "")
			// Every write is refused.
			for _, w := range []struct{ method, path, body string }{
				{http.MethodPost, "/namespaces", `{"namespace":["x"]}`},
				{http.MethodDelete, "/namespaces/ns", ""},
				{http.MethodPost, "/namespaces/ns/properties", `{"updates":{"a":"b"}}`},
				{http.MethodPost, "/namespaces/ns/tables", createTableBody("t2", "")},
				{http.MethodPost, "/namespaces/ns/tables/t", `{"requirements":[],"updates":[]}`},
				{http.MethodDelete, "/namespaces/ns/tables/t", ""},
				{http.MethodPost, "/tables/rename", `{"source":{"namespace":["ns"],"name":"t"},"destination":{"namespace":["ns"],"name":"u"}}`},
				{http.MethodPost, "/transactions/commit", `{"table-changes":[{"identifier":{"namespace":["ns"],"name":"t"},"requirements":[],"updates":[]}]}`},
			} {
				var body any
				if w.body != "" {
					body = w.body
				}
				checkError(t, e.do(w.method, "/v1/"+prefix+w.path, body), 403, "ForbiddenException", "…is read-only: it names a")
			}
		})
	}
	r := e.do(http.MethodPost, "/v1/lake@v1/namespaces", `{"namespace":["x"]}`)
	checkError(t, r, 403, "ForbiddenException", "Warehouse lake@v1 is read-only: it names a tag, not a branch")
	r = e.do(http.MethodPost, "/v1/lake@"+pinned+"/namespaces", `{"namespace":["x"]}`)
	checkError(t, r, 403, "ForbiddenException", "Warehouse lake@"+pinned+" is read-only: it names a commit, not a branch")
}
