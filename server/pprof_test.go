package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/server"
)

func TestListenProfilesRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:0", "127.0.0.1"} {
		if ln, err := server.ListenProfiles(t.Context(), addr); err == nil {
			ln.Close()
			t.Errorf("ListenProfiles(%q) listened; want an error", addr)
		}
	}
}

func TestServeProfiles(t *testing.T) {
	ln, err := server.ListenProfiles(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- server.ServeProfiles(ctx, ln, slog.New(slog.DiscardHandler)) }()
	res, err := http.Get("http://" + ln.Addr().String() + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Fatalf("heap profile: status %d: %.200s", res.StatusCode, body)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("ServeProfiles after cancel: %v", err)
	}
}
