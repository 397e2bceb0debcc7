package assemble_test

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
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/iceberg/s3vend"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/server"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// config is a process in dir: dev mode with the default policy and a
// decision log, one local warehouse.
func config(dir string) assemble.Config {
	return assemble.Config{
		HTTP:    server.Settings{Addr: "127.0.0.1:0"},
		DataDir: filepath.Join(dir, "data"),
		Security: assemble.Security{
			Authn:       assemble.Authn{Dev: true},
			Policy:      &assemble.Policy{},
			DecisionLog: filepath.Join(dir, "decisions.jsonl"),
		},
		Iceberg: assemble.Iceberg{Warehouses: []icebergrest.Warehouse{{
			Name: "lake", Location: (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(dir, "warehouse"))}).String(),
		}}},
	}
}

// TestShutdownOrder follows a request through a shutdown: the HTTP server
// drains while the request runs against open services, and only after
// Serve's HTTP part is done do the services close, in reverse order of
// creation, the store last.
func TestShutdownOrder(t *testing.T) {
	dir := t.TempDir()
	cfg := config(dir)
	cfg.HTTP.DrainDelay = 200 * time.Millisecond
	started, release := make(chan struct{}), make(chan struct{})
	var p *assemble.Process
	var deps assemble.Deps
	deps.Routes = []server.Mount{func(r *mux.Router) error {
		r.HandleFunc("/slow", func(w http.ResponseWriter, req *http.Request) {
			close(started)
			<-release
			if err := p.Store().Check(req.Context()); err != nil {
				http.Error(w, "store closed under an in-flight request: "+err.Error(), http.StatusInternalServerError)
				return
			}
			_, _ = io.WriteString(w, "store still open")
		})
		return nil
	}}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(io.MultiWriter(logs, t.Output()), nil))
	p, err := assemble.Build(t.Context(), cfg, deps, logger)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", cfg.HTTP.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	slow := make(chan string, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		slow <- string(b)
	}()
	<-started
	// A decision before shutdown begins, logged with its request id (the
	// default policy refuses the anonymous principal: still a decision).
	get(t, base+"/api/v2/trees/main", "before")
	cancel()
	// While draining, requests are still answered and decided.
	for !strings.Contains(get(t, base+"/readyz", ""), "shutting down") {
		time.Sleep(5 * time.Millisecond)
	}
	get(t, base+"/api/v2/trees/main", "draining")
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v while a request was in flight", err)
	default:
	}
	close(release)
	if got := <-slow; got != "store still open" {
		t.Errorf("in-flight request during shutdown: %q, want store still open", got)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after a graceful shutdown = %v, want nil", err)
	}

	order := []string{"HTTP server stopped", "background workers closed", "policy engine closed",
		"decision log closed", "authentication closed", "version store closed"}
	prev := -1
	for _, msg := range order {
		i := logs.index(t, msg)
		if i < prev {
			t.Errorf("%q logged before the line before it in %q", msg, order)
		}
		prev = i
	}
	data, err := os.ReadFile(cfg.Security.DecisionLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"before", "draining"} {
		if !bytes.Contains(data, []byte(`"request_id":"`+id+`"`)) {
			t.Errorf("no decision logged for request %s:\n%s", id, data)
		}
	}
	reopen(t, cfg.DataDir)
}

// TestFailedStartClosesWhatWasBuilt: when a service cannot start, the
// error names it and every service built before it is closed again.
func TestFailedStartClosesWhatWasBuilt(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name    string
		adjust  func(*assemble.Config)
		service string // "" for Run's own errors
		want    string
	}{
		{"no authentication", func(c *assemble.Config) { c.Security.Authn.Dev = false }, "authentication", "no authentication configured"},
		{"decision log unwritable", func(c *assemble.Config) { c.Security.DecisionLog = "/nonexistent/decisions.jsonl" }, "decision log", "/nonexistent/decisions.jsonl"},
		{"bad policy bundle", func(c *assemble.Config) { c.Security.Policy.Bundle = "/nonexistent/bundle" }, "policy engine", "/nonexistent/bundle"},
		{"no warehouse", func(c *assemble.Config) { c.Iceberg.Warehouses = nil }, "catalog", "no warehouse"},
		{"bad vended credentials", func(c *assemble.Config) {
			c.Iceberg.Warehouses[0].VendedCredentials = &icebergrest.VendedCredentials{STS: s3vend.Config{RoleARN: "arn:aws:iam::1:role/r", Duration: time.Minute}}
		}, "vended credentials", "duration 1m0s is outside"},
		{"bad HTTP config", func(c *assemble.Config) { c.HTTP.MaxBodyBytes = -1 }, "HTTP server", "max body bytes must not be negative"},
		{"address in use", func(c *assemble.Config) { c.HTTP.Addr = busy.Addr().String() }, "", "address already in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(t.TempDir())
			tc.adjust(&cfg)
			err := assemble.Run(t.Context(), cfg, assemble.Deps{}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tc.want)
			}
			se, ok := errors.AsType[*assemble.ServiceError](err)
			switch {
			case tc.service == "" && ok:
				t.Errorf("Run = %v: a ServiceError of %s, want none", err, se.Service)
			case tc.service != "" && (!ok || se.Service != tc.service):
				t.Errorf("Run = %v, want a ServiceError of %s", err, tc.service)
			}
			reopen(t, cfg.DataDir)
		})
	}
}

// TestDevModeNeedsLoopback: dev mode admits callers without a token, so
// the root refuses it on any other address before it opens anything.
func TestDevModeNeedsLoopback(t *testing.T) {
	cfg := config(t.TempDir())
	cfg.HTTP.Addr = "0.0.0.0:0"
	if err := assemble.Run(t.Context(), cfg, assemble.Deps{}, nil); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("Run in dev mode on 0.0.0.0 = %v, want a loopback error", err)
	}
	if _, err := os.Stat(cfg.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data dir created before the address was checked: %v", err)
	}
}

// TestForcedShutdownClosesServices: a request outliving the shutdown
// timeout is cut, Serve reports it, and the services still close.
func TestForcedShutdownClosesServices(t *testing.T) {
	cfg := config(t.TempDir())
	cfg.HTTP.ShutdownTimeout = 200 * time.Millisecond
	started := make(chan struct{})
	var deps assemble.Deps
	deps.Routes = []server.Mount{func(r *mux.Router) error {
		r.HandleFunc("/hang", func(_ http.ResponseWriter, req *http.Request) {
			close(started)
			<-req.Context().Done()
		})
		return nil
	}}
	p, err := assemble.Build(t.Context(), cfg, deps, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", cfg.HTTP.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln) }()
	go func() {
		if resp, err := http.Get("http://" + ln.Addr().String() + "/hang"); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	if err := <-served; err == nil || !strings.Contains(err.Error(), "did not finish within 200ms") {
		t.Fatalf("Serve with a request outliving the shutdown timeout = %v, want a timeout error", err)
	}
	reopen(t, cfg.DataDir)
}

// TestBackgroundWorkersRun: the root runs the facade's sweep of expired
// idempotency records (it would pile up in the store otherwise) and stops
// it on shutdown.
func TestBackgroundWorkersRun(t *testing.T) {
	cfg := config(t.TempDir())
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	var deps assemble.Deps
	deps.Iceberg.Now = func() time.Time { return time.Unix(0, now.Load()) }
	cfg.Iceberg.IdempotencyKeyLifetime = time.Second // swept every second
	cfg.Security.Policy = nil
	p, err := assemble.Build(t.Context(), cfg, deps, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", cfg.HTTP.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/lake/namespaces", strings.NewReader(`{"namespace":["ns"]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", uuid.Must(uuid.NewV7()).String())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create namespace with an Idempotency-Key: %d", resp.StatusCode)
	}
	now.Add(int64(time.Minute)) // the record has expired
	const swept = "floe_iceberg_idempotency_records_expired_total 1"
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(get(t, base+"/metrics", ""), swept); {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %q 30s after the record expired: no sweep ran", swept)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// get sends a GET with request id id (if set) and returns the body; any
// status is fine.
func get(t *testing.T, u, id string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id != "" {
		req.Header.Set(server.RequestIDHeader, id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// reopen checks that the store in dir was closed: Pebble's lock is free.
func reopen(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return
	}
	be, err := pebblebackend.Open(dir, pebblebackend.Options{})
	if err != nil {
		t.Fatalf("store in %s not closed: %v", dir, err)
	}
	if err := be.Close(); err != nil {
		t.Fatal(err)
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

// index returns the position of the first line with message msg.
func (b *syncBuffer) index(t *testing.T, msg string) int {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for i := 0; sc.Scan(); i++ {
		var l struct{ Msg string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == msg {
			return i
		}
	}
	t.Fatalf("no log line %q", msg)
	return -1
}
