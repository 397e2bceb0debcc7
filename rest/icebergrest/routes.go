package icebergrest

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/rest/httpapi"
)

// route is one endpoint as the spec lists it: its method, its template as
// the spec writes it (and as /v1/config advertises it), its handler, and
// whether it honours Idempotency-Key. routes registers each as an
// httpapi.Route.
type route struct {
	method   string
	template string
	handler  func(*api, http.ResponseWriter, *http.Request) error
	keyed    keyed
}

// keyed says whether a route honours Idempotency-Key: every mutation the
// spec marks with it, and createView, which the spec leaves out but is a
// mutation like the others. reportMetrics changes nothing and is not.
type keyed bool

const (
	withKey keyed = true
	noKey   keyed = false
)

// routes lists every endpoint floe implements. /v1/config advertises exactly
// this list, which iceberg-go and PyIceberg treat as authoritative.
var routeTable = []route{
	{http.MethodGet, "/v1/{prefix}/namespaces", (*api).listNamespaces, noKey},
	{http.MethodPost, "/v1/{prefix}/namespaces", (*api).createNamespace, withKey},
	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}", (*api).loadNamespace, noKey},
	{http.MethodHead, "/v1/{prefix}/namespaces/{namespace}", (*api).namespaceExists, noKey},
	{http.MethodDelete, "/v1/{prefix}/namespaces/{namespace}", (*api).dropNamespace, withKey},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/properties", (*api).updateNamespaceProperties, withKey},

	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/tables", (*api).listTables, noKey},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables", (*api).createTable, withKey},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/register", (*api).registerTable, withKey},
	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", (*api).loadTable, noKey},
	{http.MethodHead, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", (*api).tableExists, noKey},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", (*api).updateTable, withKey},
	{http.MethodDelete, "/v1/{prefix}/namespaces/{namespace}/tables/{table}", (*api).dropTable, withKey},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister", (*api).unregisterTable, withKey},
	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials", (*api).loadCredentials, noKey},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables/{table}/sign", (*api).signRequest, noKey},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics", (*api).reportMetrics, noKey},
	{http.MethodPost, "/v1/{prefix}/tables/rename", (*api).renameTable, withKey},
	{http.MethodPost, "/v1/{prefix}/transactions/commit", (*api).commitTransaction, withKey},

	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/views", (*api).listViews, noKey},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/views", (*api).createView, withKey},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/register-view", (*api).registerView, withKey},
	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/views/{view}", (*api).loadView, noKey},
	{http.MethodHead, "/v1/{prefix}/namespaces/{namespace}/views/{view}", (*api).viewExists, noKey},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/views/{view}", (*api).replaceView, withKey},
	{http.MethodDelete, "/v1/{prefix}/namespaces/{namespace}/views/{view}", (*api).dropView, withKey},
	{http.MethodPost, "/v1/{prefix}/views/rename", (*api).renameView, withKey},
}

// Endpoints returns the advertised endpoint list, "<METHOD> <template>".
func Endpoints() []string {
	out := make([]string, len(routeTable))
	for i, rt := range routeTable {
		out[i] = rt.method + " " + rt.template
	}
	return out
}

// routes registers every endpoint of routeTable, in its order, then
// /v1/config and the legacy signing path, all behind authentication. The
// order costs nothing: httpapi rejects a route on its literal path
// segments before matching its regular expression, and no path matches
// two templates.
func (a *api) routes(r *mux.Router) {
	web := httpapi.API{Encode: a.fail, Unauthenticated: a.unauthenticated, Authenticate: a.authenticate}
	for _, rt := range routeTable {
		route := httpapi.Route{Method: rt.method, Path: rt.template, Handler: func(w http.ResponseWriter, r *http.Request) error {
			return rt.handler(a, w, r)
		}}
		if rt.keyed {
			// Inside authentication: a key is replayed only to the
			// principal who sent it.
			route.Wrap = func(h http.Handler) http.Handler { return a.withIdempotency(rt.template, h.ServeHTTP) }
		}
		web.Register(r, route)
	}
	if a.events != nil {
		web.Register(r, httpapi.Route{Method: eventsRoute.method, Path: eventsRoute.template, Handler: a.queryEvents}) // events.go
	}
	web.Register(r,
		httpapi.Route{Method: http.MethodGet, Path: "/v1/config", Handler: a.getConfig},
		httpapi.Route{Method: http.MethodPost, Path: legacySignPath, Handler: a.legacySign})
}

// configResponse is the spec's CatalogConfig.
type configResponse struct {
	Defaults  map[string]string `json:"defaults"`
	Overrides map[string]string `json:"overrides"`
	Endpoints []string          `json:"endpoints"`
	// IdempotencyKeyLifetime (ISO-8601) tells clients that keys are
	// honoured; Java clients send them only when it is present.
	IdempotencyKeyLifetime string `json:"idempotency-key-lifetime,omitempty"`
}

// getConfig answers GET /v1/config?warehouse=: it checks that the warehouse
// and its reference exist and hands back the prefix that names them, and
// advertises idempotency-key-lifetime unless keys are turned off.
func (a *api) getConfig(w http.ResponseWriter, r *http.Request) error {
	wr, err := a.resolveWarehouse(r.Context(), r.URL.Query().Get("warehouse"))
	if ae, ok := errors.AsType[*apiError](err); ok && ae.status == http.StatusNotFound {
		// The spec lists no 404 for getConfig, and Java's reference
		// server knows no warehouses to miss: a warehouse that names
		// nothing is a bad request parameter (the other routes keep
		// 404 NoSuchWarehouseException, which the spec allows there).
		return &apiError{status: http.StatusBadRequest, typ: typeBadRequest, msg: ae.msg, cause: ae.cause}
	}
	if err != nil {
		return err
	}
	if err := a.authorizeRead(r, wr); err != nil {
		return err
	}
	lifetime := ""
	if a.ik != nil {
		lifetime = isoDuration(a.ik.lifetime)
	}
	writeJSON(w, http.StatusOK, configResponse{
		Defaults: map[string]string{},
		Overrides: map[string]string{
			"prefix":              escapePrefix(wr.spec),
			"namespace-separator": url.PathEscape(namespaceSeparator),
		},
		Endpoints:              a.endpoints(),
		IdempotencyKeyLifetime: lifetime,
	})
	return nil
}

// escapePrefix percent-encodes a prefix so clients can splice it into paths
// as one segment ("lake@etl/daily" becomes "lake@etl%2Fdaily").
func escapePrefix(s string) string {
	return strings.ReplaceAll(url.PathEscape(s), "|", "%7C")
}
