package icebergrest

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/mux"
)

// route is one endpoint: its method, its template as the spec writes it
// (and as /v1/config advertises it), and its handler.
type route struct {
	method   string
	template string
	handler  func(*api, http.ResponseWriter, *http.Request) error
}

// routes lists every endpoint floe implements. /v1/config advertises exactly
// this list, which iceberg-go and PyIceberg treat as authoritative.
var routeTable = []route{
	{http.MethodGet, "/v1/{prefix}/namespaces", (*api).listNamespaces},
	{http.MethodPost, "/v1/{prefix}/namespaces", (*api).createNamespace},
	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}", (*api).loadNamespace},
	{http.MethodHead, "/v1/{prefix}/namespaces/{namespace}", (*api).namespaceExists},
	{http.MethodDelete, "/v1/{prefix}/namespaces/{namespace}", (*api).dropNamespace},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/properties", (*api).updateNamespaceProperties},

	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/tables", (*api).listTables},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables", (*api).createTable},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/register", (*api).registerTable},
	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", (*api).loadTable},
	{http.MethodHead, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", (*api).tableExists},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", (*api).updateTable},
	{http.MethodDelete, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", (*api).dropTable},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister", (*api).unregisterTable},
	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials", (*api).loadCredentials},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics", (*api).reportMetrics},
	{http.MethodPost, "/v1/{prefix}/tables/rename", (*api).renameTable},
	{http.MethodPost, "/v1/{prefix}/transactions/commit", (*api).commitTransaction},

	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/views", (*api).listViews},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/views", (*api).createView},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/register-view", (*api).registerView},
	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/views/{view}", (*api).loadView},
	{http.MethodHead, "/v1/{prefix}/namespaces/{namespace}/views/{view}", (*api).viewExists},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/views/{view}", (*api).replaceView},
	{http.MethodDelete, "/v1/{prefix}/namespaces/{namespace}/views/{view}", (*api).dropView},
	{http.MethodPost, "/v1/{prefix}/views/rename", (*api).renameView},
}

// Endpoints returns the advertised endpoint list, "<METHOD> <template>".
func Endpoints() []string {
	out := make([]string, len(routeTable))
	for i, rt := range routeTable {
		out[i] = rt.method + " " + rt.template
	}
	return out
}

func (a *api) routes(r *mux.Router) {
	r.HandleFunc("/v1/config", a.handle(a.getConfig)).Methods(http.MethodGet)
	for _, rt := range routeTable {
		h := rt.handler
		r.HandleFunc(rt.template, a.handle(func(w http.ResponseWriter, r *http.Request) error {
			return h(a, w, r)
		})).Methods(rt.method)
	}
}

// configResponse is the spec's CatalogConfig.
type configResponse struct {
	Defaults  map[string]string `json:"defaults"`
	Overrides map[string]string `json:"overrides"`
	Endpoints []string          `json:"endpoints"`
}

// getConfig answers GET /v1/config?warehouse=: it checks that the warehouse
// and its reference exist and hands back the prefix that names them.
// idempotency-key-lifetime is not advertised: keys are not honoured yet.
func (a *api) getConfig(w http.ResponseWriter, r *http.Request) error {
	c, err := a.resolveWarehouse(r.Context(), r.URL.Query().Get("warehouse"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, configResponse{
		Defaults: map[string]string{},
		Overrides: map[string]string{
			"prefix":              escapePrefix(c.spec),
			"namespace-separator": url.PathEscape(namespaceSeparator),
		},
		Endpoints: Endpoints(),
	})
	return nil
}

// escapePrefix percent-encodes a prefix so clients can splice it into paths
// as one segment ("lake@etl/daily" becomes "lake@etl%2Fdaily").
func escapePrefix(s string) string {
	return strings.ReplaceAll(url.PathEscape(s), "|", "%7C")
}
