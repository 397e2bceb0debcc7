package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func TestProbeURL(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"0.0.0.0:8181", "http://127.0.0.1:8181/healthz"},
		{":8181", "http://127.0.0.1:8181/healthz"},
		{"[::]:8181", "http://[::1]:8181/healthz"},
		{"10.1.2.3:80", "http://10.1.2.3:80/healthz"},
		{"localhost:9", "http://localhost:9/healthz"},
	} {
		got, err := probeURL(tc.addr, "/healthz")
		if err != nil || got != tc.want {
			t.Errorf("probeURL(%q) = %q, %v; want %q", tc.addr, got, err, tc.want)
		}
	}
	if _, err := probeURL("8181", "/healthz"); err == nil {
		t.Error("an address without a port was accepted")
	}
}

// TestHealthcheck: the command the container image's HEALTHCHECK runs
// passes against a live server, found by --addr or by FLOE_ADDR as serve
// reads it, and fails on a server that answers 503.
func TestHealthcheck(t *testing.T) {
	dir := t.TempDir()
	p := startServe(t, nil, "--addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--warehouse", filepath.Join(dir, "warehouse"))
	for _, args := range [][]string{{"--addr", p.addr}, {"--addr", p.addr, "--ready"}} {
		if _, stderr, code := runFloe(t, nil, append([]string{"healthcheck"}, args...)...); code != 0 {
			t.Errorf("floe healthcheck %v: exit %d: %s", args, code, stderr)
		}
	}
	if _, stderr, code := runFloe(t, []string{"FLOE_ADDR=" + p.addr}, "healthcheck", "--ready"); code != 0 {
		t.Errorf("floe healthcheck with FLOE_ADDR: exit %d: %s", code, stderr)
	}

	draining := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			t.Errorf("asked %s, want /readyz", r.URL.Path)
		}
		http.Error(w, `{"status":"unavailable","reason":"shutting down"}`, http.StatusServiceUnavailable)
	}))
	defer draining.Close()
	_, stderr, code := runFloe(t, nil, "healthcheck", "--ready", "--addr", strings.TrimPrefix(draining.URL, "http://"))
	if code != 1 || !strings.Contains(stderr, "503") || !strings.Contains(stderr, "shutting down") {
		t.Errorf("floe healthcheck against a draining server: exit %d, stderr %q; want 1 naming the 503", code, stderr)
	}
}
