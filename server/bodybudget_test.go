package server_test

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/server"
)

// TestBodyBytesInFlight (issue 32, point 7): requests holding their
// bodies up to the bound are served; one more body, declared or chunked,
// is answered 503 with Retry-After in the server's error model without
// reaching its handler's answer; once the held requests answer, their
// bytes are free again.
func TestBodyBytesInFlight(t *testing.T) {
	const body = 1 << 20
	const held = 3
	arrived := make(chan int, 16)
	release := make(chan struct{})
	ts := start(t, server.Config{Settings: server.Settings{MaxBodyBytes: body, MaxBodyBytesInFlight: held * body}, Mounts: []server.Mount{func(r *mux.Router) error {
		// Reads the whole body, then holds it until the test releases it,
		// as a handler decoding a large commit holds what it decoded.
		r.HandleFunc("/hold", func(w http.ResponseWriter, req *http.Request) {
			b, err := io.ReadAll(req.Body)
			if err != nil {
				w.Header().Set("X-Handler", "saw error")
				http.Error(w, "bad body: "+err.Error(), http.StatusBadRequest)
				return
			}
			arrived <- len(b)
			<-release
			_, _ = io.WriteString(w, strconv.Itoa(len(b)))
		}).Methods(http.MethodPost)
		return nil
	}}})
	post := func(chunked bool) response {
		t.Helper()
		var r io.Reader = bytes.NewReader(bytes.Repeat([]byte("x"), body))
		if chunked {
			r = io.MultiReader(r) // hides the length
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.url+"/hold", r)
		if err != nil {
			t.Fatal(err)
		}
		if chunked {
			req.ContentLength = -1
		}
		return do(t, req)
	}
	metric := func(name string) float64 {
		t.Helper()
		for line := range strings.SplitSeq(get(t, ts.url+"/metrics").body, "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("metric line %q: %v", line, err)
				}
				return f
			}
		}
		t.Fatalf("no metric %s", name)
		return 0
	}

	// As many bodies as the bound allows, held at once: one of them
	// chunked, which takes its share as it is read.
	var wg sync.WaitGroup
	results := make(chan response, held)
	for i := range held {
		wg.Go(func() { results <- post(i == 0) })
	}
	for range held {
		select {
		case n := <-arrived:
			if n != body {
				t.Fatalf("handler read %d bytes, want %d", n, body)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the requests within the bound did not all reach their handler")
		}
	}
	if got := metric("floe_http_request_body_bytes_in_flight"); got != held*body {
		t.Errorf("bytes in flight = %v, want %d", got, held*body)
	}

	// Beyond the bound: refused, declared or chunked, while requests
	// without a body are served.
	for _, chunked := range []bool{false, true} {
		r := post(chunked)
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("body beyond the bound (chunked %v): %d %q, want 503", chunked, r.status, r.body)
		}
		if e := decodeError(t, r); e.Error.Type != "ServiceUnavailableException" || !strings.Contains(e.Error.Message, "in flight") {
			t.Errorf("503 error = %+v", e.Error)
		}
		if got := r.header.Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After = %q, want 1", got)
		}
		if r.header.Get("X-Handler") != "" {
			t.Errorf("the handler's answer leaked into the 503: %v", r.header)
		}
	}
	select {
	case <-arrived:
		t.Fatal("a body beyond the bound reached its handler whole")
	default:
	}
	if r := get(t, ts.url+"/healthz"); r.status != http.StatusOK {
		t.Errorf("/healthz while bodies are held: %d", r.status)
	}
	if got := metric("floe_http_request_bodies_refused_total"); got != 2 {
		t.Errorf("refused bodies = %v, want 2", got)
	}

	close(release)
	wg.Wait()
	close(results)
	for r := range results {
		if r.status != http.StatusOK || r.body != strconv.Itoa(body) {
			t.Errorf("held request: %d %q, want 200 %d", r.status, r.body, body)
		}
	}
	// Their bytes are free again: a new body is served.
	if got := metric("floe_http_request_body_bytes_in_flight"); got != 0 {
		t.Errorf("bytes in flight after the requests answered = %v, want 0", got)
	}
	if r := post(false); r.status != http.StatusOK {
		t.Errorf("body after the held ones answered: %d %q, want 200", r.status, r.body)
	}
}

// TestBodyBytesInFlightDefault: the bound is an eighth of the runtime's
// soft memory limit when one is set, never less than one body, and
// 8 bodies without a limit.
func TestBodyBytesInFlightDefault(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	for _, tc := range []struct {
		name     string
		memLimit int64
		maxBody  int64
		want     float64
	}{
		{"480 MiB limit", 480 << 20, 16 << 20, 60 << 20},
		{"small limit", 64 << 20, 16 << 20, 16 << 20},
		{"no limit", math.MaxInt64, 16 << 20, 128 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(tc.memLimit)
			ts := start(t, server.Config{Settings: server.Settings{MaxBodyBytes: tc.maxBody}})
			r := get(t, ts.url+"/metrics")
			want := "floe_http_request_body_bytes_in_flight_limit " + strconv.FormatFloat(tc.want, 'g', -1, 64)
			if !strings.Contains(r.body, want+"\n") {
				t.Errorf("metrics lack %q", want)
			}
		})
	}
}
