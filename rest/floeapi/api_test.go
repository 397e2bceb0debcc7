package floeapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"go.yaml.in/yaml/v3"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestUnknownOperationAnswersInTheErrorModel(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	status, body := get(t, s.URL+floeapi.Prefix+"/no-such-thing")
	var eb floeapi.ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil {
		t.Fatalf("404 body %q: %v", body, err)
	}
	if status != http.StatusNotFound || eb.Error.Status != http.StatusNotFound || eb.Error.Code != floeapi.CodeNotFound ||
		!strings.Contains(eb.Error.Message, "/no-such-thing") {
		t.Fatalf("unknown operation: %d %+v; want 404 NOT_FOUND naming the path", status, eb)
	}
}

// TestOpenAPIDocumentsEveryRoute holds the served document to the routes
// the API registers: an operation added without its documentation, or
// documented and never served, fails here.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	status, body := get(t, s.URL+floeapi.Prefix+"/openapi.yaml")
	if status != http.StatusOK {
		t.Fatalf("openapi.yaml: %d", status)
	}
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(body, &doc); err != nil {
		t.Fatalf("openapi.yaml does not parse: %v", err)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}

	be, err := pebblebackend.Open(t.TempDir(), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := versionstore.Open(t.Context(), be, versionstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	api, err := floeapi.New(floeapi.Deps{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	r := mux.NewRouter().UseEncodedPath()
	api.Register(r, nil)
	var served []string
	err = r.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tmpl, err := route.GetPathTemplate()
		if err != nil || !strings.HasPrefix(tmpl, floeapi.Prefix+"/") {
			return nil
		}
		methods, err := route.GetMethods()
		if err != nil {
			return nil // the catch-all
		}
		for _, m := range methods {
			served = append(served, m+" "+strings.TrimPrefix(tmpl, floeapi.Prefix))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Fatalf("documented operations %q, served %q", documented, served)
	}
}
