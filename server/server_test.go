package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/server"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// testServer is Serve on a free loopback port over its own store.
type testServer struct {
	url    string
	addr   string
	store  *versionstore.Store
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error

	once   sync.Once
	err    error
	waited bool // the test looked at Serve's result itself
}

// openStore opens a Pebble-backed store in a temporary directory, closed
// when the test ends.
func openStore(t *testing.T) *versionstore.Store {
	t.Helper()
	be, err := pebblebackend.Open(t.TempDir(), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := versionstore.Open(t.Context(), be, versionstore.Options{})
	if err != nil {
		_ = be.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

func start(t *testing.T, cfg server.Config) *testServer {
	t.Helper()
	addrs := make(chan net.Addr, 1)
	cfg.OnListen = func(a net.Addr) { addrs <- a }

	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(io.MultiWriter(logs, t.Output()), &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := openStore(t)
	srv, err := server.New(cfg, logger, store)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ts := &testServer{store: store, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ctx, ln) }()

	select {
	case a := <-addrs:
		ts.addr = a.String()
		ts.url = "http://" + ts.addr
	case err := <-ts.done:
		t.Fatalf("Serve returned before listening: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("server did not start listening within 30s")
	}
	t.Cleanup(func() {
		if ts.waited {
			return
		}
		if err := ts.stop(t); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ts
}

// stop cancels Serve's context and returns what Serve returned.
func (ts *testServer) stop(t *testing.T) error {
	t.Helper()
	ts.cancel()
	return ts.wait(t)
}

// wait returns what Serve returned, without cancelling it.
func (ts *testServer) wait(t *testing.T) error {
	t.Helper()
	ts.waited = true
	ts.once.Do(func() {
		select {
		case ts.err = <-ts.done:
		case <-time.After(30 * time.Second):
			ts.err = errors.New("Serve did not return within 30s")
		}
	})
	return ts.err
}

type response struct {
	status int
	header http.Header
	body   string
}

var client = &http.Client{Timeout: 10 * time.Second}

func do(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", req.Method, req.URL, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func get(t *testing.T, url string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

// errorJSON is the server's error body (the Iceberg REST ErrorModel shape).
type errorJSON struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func decodeError(t *testing.T, r response) errorJSON {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var e errorJSON
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", r.body, err)
	}
	if e.Error.Code != r.status || e.Error.Message == "" || e.Error.Type == "" {
		t.Errorf("error body %q: want code %d and a message and type", r.body, r.status)
	}
	return e
}

func TestProbes(t *testing.T) {
	ts := start(t, server.Config{})

	for _, path := range []string{"/healthz", "/readyz"} {
		r := get(t, ts.url+path)
		if r.status != http.StatusOK || strings.TrimSpace(r.body) != `{"status":"ok"}` {
			t.Errorf("GET %s = %d %q, want 200 {\"status\":\"ok\"}", path, r.status, r.body)
		}
	}
	r := get(t, ts.url+"/no/such/route")
	if r.status != http.StatusNotFound {
		t.Errorf("GET /no/such/route = %d, want 404", r.status)
	}
	decodeError(t, r)
}

// TestReadyzFollowsStore serves through New and httptest, so the test holds
// the store and can close it underneath the server.
func TestReadyzFollowsStore(t *testing.T) {
	store := openStore(t)
	srv, err := server.New(server.Config{}, nil, store)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	if r := get(t, hs.URL+"/readyz"); r.status != http.StatusOK {
		t.Fatalf("GET /readyz with an open store = %d %q, want 200", r.status, r.body)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	r := get(t, hs.URL+"/readyz")
	var body struct{ Status, Reason string }
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		t.Fatalf("readyz body %q: %v", r.body, err)
	}
	if r.status != http.StatusServiceUnavailable || body.Status != "unavailable" || !strings.Contains(body.Reason, "closed") {
		t.Errorf("GET /readyz with a closed store = %d %q, want 503 with the reason", r.status, r.body)
	}
	if r := get(t, hs.URL+"/healthz"); r.status != http.StatusOK {
		t.Errorf("GET /healthz with a closed store = %d, want 200: liveness must not follow the store", r.status)
	}
}

func TestMetricsUseRouteTemplates(t *testing.T) {
	ts := start(t, server.Config{Mounts: []server.Mount{func(r *mux.Router) error {
		r.HandleFunc("/v1/things/{id}", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "thing")
		}).Methods(http.MethodGet)
		sub := r.PathPrefix("/api/{prefix}").Subrouter()
		sub.HandleFunc("/tables/{table}", func(w http.ResponseWriter, _ *http.Request) {}).Methods(http.MethodGet)
		return nil
	}}})

	for _, path := range []string{"/v1/things/abc", "/v1/things/xyz%2Fencoded", "/api/lake/tables/t1", "/nowhere-1", "/nowhere-2"} {
		get(t, ts.url+path)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "BREW", ts.url+"/v1/things/abc", nil)
	do(t, req)

	r := get(t, ts.url+"/metrics")
	if r.status != http.StatusOK {
		t.Fatalf("GET /metrics = %d", r.status)
	}
	for _, want := range []string{
		`floe_http_requests_total{code="200",method="GET",route="/v1/things/{id}"} 2`,
		`floe_http_requests_total{code="200",method="GET",route="/api/{prefix}/tables/{table}"} 1`,
		`floe_http_requests_total{code="404",method="GET",route="unmatched"} 2`,
		`floe_http_requests_total{code="405",method="other",route="unmatched"} 1`,
		`floe_http_request_duration_seconds_count{route="/v1/things/{id}"} 2`,
		`floe_http_request_duration_seconds_bucket{route="/v1/things/{id}",le="+Inf"} 2`,
		"go_goroutines ",
		"process_start_time_seconds ",
		"floe_versionstore_commits_total ",
		"floe_versionstore_batches_total ",
		"floe_versionstore_trees_rebuilt_total 0",
		"floe_versionstore_locked_rounds_total 0",
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, raw := range []string{"abc", "xyz", "nowhere", "BREW"} {
		if strings.Contains(r.body, raw) {
			t.Errorf("/metrics contains the raw request detail %q", raw)
		}
	}
}

func TestRequestID(t *testing.T) {
	var seen sync.Map // request id from the header -> server.RequestID in the handler
	ts := start(t, server.Config{Mounts: []server.Mount{func(r *mux.Router) error {
		r.HandleFunc("/whoami", func(w http.ResponseWriter, req *http.Request) {
			seen.Store(w.Header().Get(server.RequestIDHeader), server.RequestID(req.Context()))
			_, _ = io.WriteString(w, "me")
		})
		return nil
	}}})

	for _, tc := range []struct {
		name, sent string
		keep       bool
	}{
		{"absent", "", false},
		{"kept", "req-42.abc_DEF", true},
		{"with space", "two words", false},
		{"too long", strings.Repeat("x", 129), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.url+"/whoami", nil)
			if tc.sent != "" {
				req.Header.Set(server.RequestIDHeader, tc.sent)
			}
			r := do(t, req)
			id := r.header.Get(server.RequestIDHeader)
			switch {
			case tc.keep && id != tc.sent:
				t.Errorf("response id = %q, want the caller's %q", id, tc.sent)
			case !tc.keep:
				if _, err := uuid.Parse(id); err != nil {
					t.Errorf("response id = %q, want a generated UUID", id)
				}
			}
			if got, _ := seen.Load(id); got != id {
				t.Errorf("handler saw RequestID %q, response carries %q", got, id)
			}
			line := ts.logs.find(t, func(l logLine) bool { return l["msg"] == "request" && l["request_id"] == id })
			for _, key := range []string{"method", "route", "path", "status", "bytes", "duration"} {
				if _, ok := line[key]; !ok {
					t.Errorf("access log line %v lacks %q", line, key)
				}
			}
			if line["route"] != "/whoami" || line["status"] != float64(200) || line["bytes"] != float64(2) {
				t.Errorf("access log line %v, want route /whoami, status 200, 2 bytes", line)
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	const limit = 1024
	ts := start(t, server.Config{Settings: server.Settings{MaxBodyBytes: limit}, Mounts: []server.Mount{func(r *mux.Router) error {
		// A handler that knows nothing of the limit: any read error is a
		// 400 to it. The server must still answer 413.
		r.HandleFunc("/echo", func(w http.ResponseWriter, req *http.Request) {
			b, err := io.ReadAll(req.Body)
			if err != nil {
				w.Header().Set("X-Handler", "saw error")
				http.Error(w, "bad body: "+err.Error(), http.StatusBadRequest)
				return
			}
			_, _ = w.Write(b)
		}).Methods(http.MethodPost)
		return nil
	}}})

	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		want    int
	}{
		{"at limit", limit, false, http.StatusOK},
		{"declared over limit", limit + 1, false, http.StatusRequestEntityTooLarge},
		{"chunked at limit", limit, true, http.StatusOK},
		{"chunked over limit", 4 * limit, true, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := bytes.Repeat([]byte("x"), tc.size)
			var body io.Reader = bytes.NewReader(payload)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.url+"/echo", body)
			if tc.chunked {
				req.ContentLength = -1
			}
			r := do(t, req)
			if r.status != tc.want {
				t.Fatalf("POST %d bytes = %d %q, want %d", tc.size, r.status, r.body, tc.want)
			}
			if tc.want == http.StatusOK {
				if len(r.body) != tc.size {
					t.Errorf("echoed %d bytes, want %d", len(r.body), tc.size)
				}
				return
			}
			if e := decodeError(t, r); e.Error.Type != "RequestEntityTooLarge" {
				t.Errorf("error type = %q, want RequestEntityTooLarge", e.Error.Type)
			}
			if r.header.Get("X-Handler") != "" {
				t.Errorf("the handler's headers leaked into the 413: %v", r.header)
			}
		})
	}
}

func TestPanicRecovery(t *testing.T) {
	ts := start(t, server.Config{Mounts: []server.Mount{func(r *mux.Router) error {
		r.HandleFunc("/boom", func(http.ResponseWriter, *http.Request) { panic("kaboom") })
		return nil
	}}})

	r := get(t, ts.url+"/boom")
	if r.status != http.StatusInternalServerError {
		t.Fatalf("GET /boom = %d %q, want 500", r.status, r.body)
	}
	id := r.header.Get(server.RequestIDHeader)
	if e := decodeError(t, r); !strings.Contains(e.Error.Message, id) || strings.Contains(e.Error.Message, "kaboom") {
		t.Errorf("500 message %q: want the request id and not the panic value", e.Error.Message)
	}
	line := ts.logs.find(t, func(l logLine) bool { return l["msg"] == "panic serving request" })
	if line["request_id"] != id || line["panic"] != "kaboom" || !strings.Contains(line["stack"].(string), "goroutine") {
		t.Errorf("panic log line %v: want request id %s, the panic value and a stack", line, id)
	}
	ts.logs.find(t, func(l logLine) bool {
		return l["msg"] == "request" && l["route"] == "/boom" && l["status"] == float64(500)
	})
	if r := get(t, ts.url+"/healthz"); r.status != http.StatusOK {
		t.Errorf("after a panic GET /healthz = %d, want 200", r.status)
	}
}

// TestGracefulShutdown follows one request through a shutdown: readiness
// fails first, the listener closes, the in-flight request still finishes,
// and Serve returns nil only after it has. (That the services outlive
// Serve is the composition root's part: see package assemble.)
func TestGracefulShutdown(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	ts := start(t, server.Config{
		Settings: server.Settings{DrainDelay: time.Second, ShutdownTimeout: 20 * time.Second},
		Mounts: []server.Mount{func(r *mux.Router) error {
			r.HandleFunc("/slow", func(w http.ResponseWriter, req *http.Request) {
				close(started)
				<-release
				_, _ = io.WriteString(w, "finished")
			})
			return nil
		}},
	})

	slow := make(chan response, 1)
	go func() {
		// Not do(): t.Fatal must not be called from this goroutine.
		resp, err := client.Get(ts.url + "/slow")
		if err != nil {
			slow <- response{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		slow <- response{status: resp.StatusCode, body: string(b)}
	}()
	<-started
	ts.cancel()

	// Draining: the listener is still open and /readyz turns 503.
	for r := get(t, ts.url+"/readyz"); r.status != http.StatusServiceUnavailable; r = get(t, ts.url+"/readyz") {
		if r.status != http.StatusOK {
			t.Fatalf("GET /readyz while shutdown begins = %d %q, want 200 then 503", r.status, r.body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := get(t, ts.url+"/readyz"); !strings.Contains(r.body, "shutting down") {
		t.Errorf("GET /readyz while draining = %d %q, want the reason shutting down", r.status, r.body)
	}
	// Then the listener closes while /slow is still running.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", ts.addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepting 10s after shutdown began")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-ts.done:
		t.Fatalf("Serve returned %v while a request was in flight", err)
	default:
	}

	close(release)
	if r := <-slow; r.status != http.StatusOK || r.body != "finished" {
		t.Errorf("in-flight request during shutdown = %d %q, want 200 finished", r.status, r.body)
	}
	if err := ts.wait(t); err != nil {
		t.Fatalf("Serve after graceful shutdown = %v, want nil", err)
	}
	ts.logs.index(t, "HTTP server stopped")
}

func TestShutdownTimeoutCutsRequests(t *testing.T) {
	started := make(chan struct{})
	ts := start(t, server.Config{
		Settings: server.Settings{ShutdownTimeout: 200 * time.Millisecond},
		Mounts: []server.Mount{func(r *mux.Router) error {
			r.HandleFunc("/hang", func(_ http.ResponseWriter, req *http.Request) {
				close(started)
				<-req.Context().Done() // until the connection is cut
			})
			return nil
		}},
	})
	go func() {
		if resp, err := client.Get(ts.url + "/hang"); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	err := ts.stop(t)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 200ms") {
		t.Fatalf("Serve with a request outliving the shutdown timeout = %v, want a timeout error", err)
	}
	ts.logs.find(t, func(l logLine) bool {
		return l["msg"] == "request" && l["route"] == "/hang" && l["status"] == float64(499)
	})
}

func TestNewErrors(t *testing.T) {
	store := openStore(t)
	for _, tc := range []struct {
		name string
		cfg  server.Config
		want string
	}{
		{"negative body limit", server.Config{Settings: server.Settings{MaxBodyBytes: -1}}, "max body bytes must not be negative"},
		{"negative drain delay", server.Config{Settings: server.Settings{DrainDelay: -time.Second}}, "drain delay must not be negative"},
		{"failing mount", server.Config{Mounts: []server.Mount{func(*mux.Router) error {
			return errors.New("no catalog here")
		}}}, "mounting API 1 of 1: no catalog here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := server.New(tc.cfg, nil, store); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := server.New(server.Config{}, nil, nil); err == nil {
		t.Fatal("New without a store succeeded")
	}
}

// syncBuffer collects JSON log lines from the server goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

type logLine map[string]any

func (b *syncBuffer) lines(t *testing.T) []logLine {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []logLine
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// find returns the first log line matching, waiting briefly because the
// access log is written after the response has been sent.
func (b *syncBuffer) find(t *testing.T, match func(logLine) bool) logLine {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, l := range b.lines(t) {
			if match(l) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no matching log line within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// index returns the position of the first line with message msg.
func (b *syncBuffer) index(t *testing.T, msg string) int {
	t.Helper()
	for i, l := range b.lines(t) {
		if l["msg"] == msg {
			return i
		}
	}
	t.Fatalf("no log line %q", msg)
	return -1
}
