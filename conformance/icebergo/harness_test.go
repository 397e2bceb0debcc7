package icebergo

import (
	"log/slog"
	"os"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/versionstore"
)

// floeServer is a real floe server on a free loopback port: Pebble in a
// temporary directory, one warehouse "lake" in another.
type floeServer struct {
	addr      string
	store     *versionstore.Store
	warehouse string // file:// URL
}

// floeOption adjusts the server before it starts.
type floeOption func(o *testserver.Options)

func startFloe(t *testing.T, opts ...floeOption) *floeServer {
	t.Helper()
	var logger *slog.Logger
	if testing.Verbose() && os.Getenv("FLOE_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	o := testserver.Options{Logger: logger}
	for _, opt := range opts {
		opt(&o)
	}
	s := testserver.Start(t, o)
	return &floeServer{addr: s.Addr, store: s.Store, warehouse: s.Warehouse}
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
