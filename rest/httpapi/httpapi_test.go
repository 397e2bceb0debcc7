package httpapi

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"
)

// templates mix the three APIs' shapes: literals, variables, several
// methods on one path, paths that differ in one literal, a literal with a
// regular expression's metacharacters, a trailing slash and a variable
// with a pattern of its own (which keeps no fast matcher).
var templates = []struct{ method, path string }{
	{http.MethodGet, "/v1/config"},
	{http.MethodPost, "/v1/oauth/tokens"},
	{http.MethodGet, "/v1/{prefix}/namespaces"},
	{http.MethodPost, "/v1/{prefix}/namespaces"},
	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}"},
	{http.MethodHead, "/v1/{prefix}/namespaces/{namespace}"},
	{http.MethodDelete, "/v1/{prefix}/namespaces/{namespace}"},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/tables/{table}"},
	{http.MethodGet, "/v1/{prefix}/namespaces/{namespace}/tables/{table}"},
	{http.MethodPost, "/v1/{prefix}/namespaces/{namespace}/views/{view}"},
	{http.MethodPost, "/v1/{prefix}/tables/rename"},
	{http.MethodGet, "/api/v2/trees/{ref}/contents/{key}"},
	{http.MethodGet, "/api/v2/trees/{from}/diff/{to}"},
	{http.MethodGet, "/api/floe/v1/openapi.yaml"},
	{http.MethodGet, "/api/floe/v1/trailing/"},
	{http.MethodGet, "/api/floe/v1/pattern/{n:[0-9]+}"},
	{http.MethodGet, "/api/floe/v1/mixed/v{n}"},
}

// answer names the route that answered and the variables it saw.
func answer(id int) Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		_, _ = fmt.Fprintf(w, "route %d %v", id, mux.Vars(r))
		return nil
	}
}

// routers builds the same routes twice: through Register, and as mux
// alone registers them, with the same handlers for unmatched requests.
func routers() (fast, plain *mux.Router) {
	fast, plain = mux.NewRouter().UseEncodedPath(), mux.NewRouter().UseEncodedPath()
	api := &API{Encode: func(w http.ResponseWriter, _ *http.Request, err error) { http.Error(w, err.Error(), 500) }}
	for i, t := range templates {
		api.Register(fast, Route{Method: t.method, Path: t.path, Handler: answer(i)})
		plain.Handle(t.path, api.Handler(answer(i))).Methods(t.method)
	}
	notFound := func(*http.Request) error { return errors.New("catch-all") }
	(&API{Prefix: "/api/v2", Encode: api.Encode}).NotFound(fast, notFound)
	(&API{Prefix: "/api/v2", Encode: api.Encode}).NotFound(plain, notFound)
	for _, r := range []*mux.Router{fast, plain} {
		r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "404", 404) })
		r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "405", 405) })
	}
	return fast, plain
}

// TestRegisterMatchesAsMux holds the fast matcher to mux's own matching:
// every request, on a known or an unknown path, with every method, is
// answered by the same route with the same variables, or the same 404 or
// 405.
func TestRegisterMatchesAsMux(t *testing.T) {
	t.Parallel()
	fast, plain := routers()
	words := []string{"v1", "config", "oauth", "tokens", "namespaces", "tables", "views", "rename", "api", "v2",
		"trees", "contents", "diff", "floe", "openapi.yaml", "openapiXyaml", "trailing", "pattern", "mixed", "v7", "12",
		"lake", "lake@etl%2Fdaily", "a%20b", "", "%7B", "db%1Fsub", "openapi%2Eyaml", "v%31"}
	var paths []string
	for _, t := range templates {
		paths = append(paths, t.path, t.path+"/", strings.TrimSuffix(t.path, "/"))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 4000 {
		n := 1 + rng.IntN(7)
		var b strings.Builder
		for range n {
			b.WriteString("/" + words[rng.IntN(len(words))])
		}
		if rng.IntN(8) == 0 {
			b.WriteString("/")
		}
		paths = append(paths, b.String())
	}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodHead, http.MethodDelete, http.MethodPut}
	for _, p := range paths {
		for _, m := range methods {
			req := httptest.NewRequest(m, "http://floe"+p, nil)
			got, want := httptest.NewRecorder(), httptest.NewRecorder()
			fast.ServeHTTP(got, req)
			plain.ServeHTTP(want, req)
			if got.Code != want.Code || got.Body.String() != want.Body.String() {
				t.Fatalf("%s %s: Register answers %d %q, mux %d %q", m, p, got.Code, got.Body, want.Code, want.Body)
			}
		}
	}
}

// TestRegisterWraps checks the order around a handler: authentication
// outside, Wrap inside it, errors through Encode, Unauthenticated for a
// refused caller, and Public routes without authentication.
func TestRegisterWraps(t *testing.T) {
	t.Parallel()
	var trace []string
	api := &API{
		Prefix: "/api",
		Encode: func(w http.ResponseWriter, _ *http.Request, err error) {
			w.WriteHeader(http.StatusTeapot)
			_, _ = fmt.Fprint(w, "encoded: "+err.Error())
		},
		Unauthenticated: func(w http.ResponseWriter, _ *http.Request, err error) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = fmt.Fprint(w, "who are you: "+err.Error())
		},
		Authenticate: func(onError func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
			return func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					trace = append(trace, "authenticate")
					if r.Header.Get("Authorization") == "" {
						onError(w, r, errors.New("no token"))
						return
					}
					next.ServeHTTP(w, r)
				})
			}
		},
	}
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			trace = append(trace, "wrap")
			next.ServeHTTP(w, r)
		})
	}
	fail := func(http.ResponseWriter, *http.Request) error {
		trace = append(trace, "handler")
		return errors.New("broken")
	}
	r := mux.NewRouter().UseEncodedPath()
	api.Register(r,
		Route{Method: http.MethodGet, Path: "/fail", Handler: fail, Wrap: wrap},
		Route{Method: http.MethodGet, Path: "/public", Handler: fail, Public: true})
	for _, c := range []struct {
		path, token string
		status      int
		body        string
		trace       string
	}{
		{"/api/fail", "t", http.StatusTeapot, "encoded: broken", "authenticate wrap handler"},
		{"/api/fail", "", http.StatusUnauthorized, "who are you: no token", "authenticate"},
		{"/api/public", "", http.StatusTeapot, "encoded: broken", "handler"},
	} {
		trace = nil
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != c.status || w.Body.String() != c.body || strings.Join(trace, " ") != c.trace {
			t.Errorf("GET %s token %q: %d %q after %v, want %d %q after %s", c.path, c.token, w.Code, w.Body, trace, c.status, c.body, c.trace)
		}
	}
}

// BenchmarkMatch routes a request to the last of the Iceberg facade's
// thirty-one routes, the worst case of registration order, with the fast
// matcher and with mux alone.
func BenchmarkMatch(b *testing.B) {
	var paths []string
	for _, seg := range []string{"namespaces", "tables", "views", "register", "register-view"} {
		for _, tail := range []string{"", "/{namespace}", "/{namespace}/" + seg, "/{namespace}/x/{table}", "/{namespace}/x/{table}/y"} {
			paths = append(paths, "/v1/{prefix}/"+seg+tail)
		}
	}
	for len(paths) < 30 {
		paths = append(paths, fmt.Sprintf("/v1/{prefix}/other%d/{x}", len(paths)))
	}
	paths = append(paths, "/v1/{prefix}/transactions/commit")
	ok := func(http.ResponseWriter, *http.Request) error { return nil }
	api := &API{Encode: func(http.ResponseWriter, *http.Request, error) {}}
	fast, plain := mux.NewRouter().UseEncodedPath(), mux.NewRouter().UseEncodedPath()
	for _, p := range paths {
		api.Register(fast, Route{Method: http.MethodPost, Path: p, Handler: ok})
		plain.Handle(p, api.Handler(ok)).Methods(http.MethodPost)
	}
	for _, c := range []struct {
		name, path string
		r          *mux.Router
	}{
		{"literals", "/v1/lake/transactions/commit", fast},
		{"mux", "/v1/lake/transactions/commit", plain},
		{"literals/escaped", "/v1/lake@etl%2Fdaily/transactions/commit", fast},
		{"mux/escaped", "/v1/lake@etl%2Fdaily/transactions/commit", plain},
	} {
		req := httptest.NewRequest(http.MethodPost, c.path, nil)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var m mux.RouteMatch
				if !c.r.Match(req, &m) || m.MatchErr != nil {
					b.Fatal("no match")
				}
			}
		})
	}
}
