package benchhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"go/build"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/benchhttp"
)

// TestImportsOnlyStandardLibrary: both peer benchmarks import this
// package, so it must not bring any of floe's code (or anything else) in.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pkg.Imports {
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
			t.Errorf("benchhttp imports %s", path)
		}
	}
}

func TestDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/api/echo":
			if r.Header.Get("Content-Type") != "application/json" {
				http.Error(w, "no JSON content type", http.StatusBadRequest)
				return
			}
			_, _ = w.Write(body)
		case "/api/big": // larger than any read buffer, with its length announced
			big, _ := json.Marshal(map[string]string{"S": strings.Repeat("b", 100<<10)})
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			_, _ = w.Write(big)
		case "/api/chunked": // no length announced
			_, _ = io.WriteString(w, `{"N":`)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `9}`)
		case "/api/short": // announces more than it sends
			w.Header().Set("Content-Length", "100")
			_, _ = io.WriteString(w, `{"N":1}`)
		case "/api/conflict":
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, "  "+strings.Repeat("x", 50)+"\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	api := &benchhttp.API{Base: srv.URL + "/api", HTTP: benchhttp.NewHTTPClient(2), ErrorBodyLimit: 10}
	ctx := context.Background()

	var out struct{ N int }
	if err := api.Do(ctx, http.MethodPost, "/echo", map[string]int{"N": 7}, &out); err != nil || out.N != 7 {
		t.Fatalf("echo: %+v, %v", out, err)
	}

	var big struct{ S string }
	if err := api.Do(ctx, http.MethodGet, "/big", nil, &big); err != nil || big.S != strings.Repeat("b", 100<<10) {
		t.Fatalf("big: %d bytes, %v", len(big.S), err)
	}
	if err := api.Do(ctx, http.MethodGet, "/big", nil, nil); err != nil {
		t.Fatalf("big, not decoded: %v", err)
	}
	out.N = 0
	if err := api.Do(ctx, http.MethodGet, "/chunked", nil, &out); err != nil || out.N != 9 {
		t.Fatalf("chunked: %+v, %v", out, err)
	}
	// An answer cut short is an error whether or not it is decoded.
	if err := api.Do(ctx, http.MethodGet, "/short", nil, &out); err == nil {
		t.Fatal("short answer decoded without an error")
	}
	if err := api.Do(ctx, http.MethodGet, "/short", nil, nil); err == nil {
		t.Fatal("short answer read without an error")
	}

	err := api.Do(ctx, http.MethodGet, "/conflict", nil, nil)
	var se *benchhttp.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusConflict || se.Body != strings.Repeat("x", 10)+"..." ||
		se.URL != srv.URL+"/api/conflict" || !benchhttp.IsConflict(err) {
		t.Fatalf("conflict: %#v", err)
	}
	if err := api.Do(ctx, http.MethodGet, "/missing", nil, nil); benchhttp.IsConflict(err) || !errors.As(err, &se) || se.Status != http.StatusNotFound {
		t.Fatalf("missing: %v", err)
	}
}

func TestStats(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	st := benchhttp.NewStats(2*time.Second, ms(40, 10, 30, 20))
	if st.Ops != 4 || st.PerSecond() != 2 || st.Percentile(50) != 20*time.Millisecond || st.Percentile(100) != 40*time.Millisecond {
		t.Fatalf("stats: %+v, %v/s, p50 %v, p100 %v", st, st.PerSecond(), st.Percentile(50), st.Percentile(100))
	}
	if empty := benchhttp.NewStats(0, nil); empty.PerSecond() != 0 || empty.Percentile(99) != 0 {
		t.Fatalf("empty stats: %+v", empty)
	}
}
