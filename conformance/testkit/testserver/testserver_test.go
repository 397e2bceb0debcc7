package testserver

import (
	"net/http"
	"testing"

	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/server"
	"github.com/floe-catalog/floe/versionstore"
)

// TestStartServesAndReopens: the server answers with floe's middleware,
// both APIs and the extra routes, and a second start on the same Dir sees
// the first one's data.
func TestStartServesAndReopens(t *testing.T) {
	dir := t.TempDir()
	hello := func(r *mux.Router) error {
		r.HandleFunc("/hello", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
		return nil
	}
	s := Start(t, Options{Dir: dir, Routes: []server.Mount{hello}})
	for path, want := range map[string]int{
		"/hello": http.StatusTeapot, "/healthz": http.StatusOK,
		"/v1/config?warehouse=lake": http.StatusOK, "/api/v2/config": http.StatusOK,
	} {
		res, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, res.StatusCode, want)
		}
		if res.Header.Get(server.RequestIDHeader) == "" {
			t.Errorf("GET %s: no request id: the middleware is missing", path)
		}
	}
	if _, err := s.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: "dev", Type: versionstore.Branch, Target: versionstore.NoAncestor}); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	again := Start(t, Options{Dir: dir})
	if _, err := again.Store.GetRef("dev"); err != nil {
		t.Fatalf("reopened store lost the branch: %v", err)
	}
}
