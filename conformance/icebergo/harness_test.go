package icebergo

import (
	"log/slog"
	"os"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/internal/testserver"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/server"
	"github.com/floe-catalog/floe/versionstore"
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
	var logger *slog.Logger
	if testing.Verbose() && os.Getenv("FLOE_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s := testserver.Start(t, testserver.Options{Logger: logger, Mounts: func(s *testserver.Server) []server.Mount {
		return []server.Mount{func(r *mux.Router, env server.Env) error {
			deps := icebergrest.Deps{
				Store: env.Store, Logger: env.Logger, Metrics: env.Metrics,
				Warehouses: []icebergrest.Warehouse{{Name: "lake", Location: s.Warehouse}},
			}
			for _, o := range opts {
				o(r, &deps)
			}
			return icebergrest.Register(r, deps)
		}}
	}})
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
