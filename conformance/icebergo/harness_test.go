package icebergo

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/server"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// floeServer is a real floe server on a free loopback port: Pebble in a
// temporary directory, one warehouse "lake" in another.
type floeServer struct {
	addr      string
	store     *versionstore.Store
	warehouse string // file:// URL
}

// floeOption adjusts the server before it starts: extra routes, and the
// Iceberg facade's dependencies.
type floeOption func(r *mux.Router, deps *icebergrest.Deps)

func startFloe(t *testing.T, opts ...floeOption) *floeServer {
	t.Helper()
	dir := t.TempDir()
	be, err := pebblebackend.Open(filepath.Join(dir, "data"), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := versionstore.Open(context.Background(), be, versionstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	whDir := filepath.Join(dir, "warehouse")
	if err := os.MkdirAll(whDir, 0o750); err != nil {
		t.Fatal(err)
	}
	wh := (&url.URL{Scheme: "file", Path: filepath.ToSlash(whDir)}).String()
	logger := slog.New(slog.DiscardHandler)
	if testing.Verbose() && os.Getenv("FLOE_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	mount := func(r *mux.Router, env server.Env) error {
		deps := icebergrest.Deps{
			Store: env.Store, Logger: env.Logger, Metrics: env.Metrics,
			Warehouses: []icebergrest.Warehouse{{Name: "lake", Location: wh}},
		}
		for _, o := range opts {
			o(r, &deps)
		}
		return icebergrest.Register(r, deps)
	}
	srv, err := server.New(server.Config{Warehouse: whDir, Mounts: []server.Mount{mount}}, logger, store)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := store.Close(); err != nil && !errors.Is(err, versionstore.ErrClosed) {
			t.Errorf("close store: %v", err)
		}
	})
	return &floeServer{addr: ln.Addr().String(), store: store, warehouse: wh}
}

// catalog opens an iceberg-go REST catalog on a warehouse expression such
// as "lake" or "lake@dev".
func (f *floeServer) catalog(t *testing.T, warehouse string, opts ...rest.Option) *rest.Catalog {
	t.Helper()
	cat, err := rest.NewCatalog(t.Context(), "floe", "http://"+f.addr, append([]rest.Option{rest.WithWarehouseLocation(warehouse)}, opts...)...)
	if err != nil {
		t.Fatalf("open catalog on %s: %v", warehouse, err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	return cat
}
