package testserver

import (
	"context"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/housekeeping/maintenance"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/rest/nessie"
	"github.com/floe-catalog/floe/server"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore"
)

// Options configure Start.
type Options struct {
	// Dir holds the store ("data") and the warehouse ("warehouse"); ""
	// means a new temporary directory. Starting twice on one Dir reopens
	// the same data.
	Dir string
	// Security, if set, replaces dev mode with authorization off (`floe
	// serve --dev`, every request allowed as the anonymous principal).
	Security *assemble.Security
	// Catalog, if set, adjusts the catalog's configuration (its metadata
	// cache, the bound on a metadata file read).
	Catalog func(*catalog.Config)
	// Iceberg, if set, adjusts the Iceberg REST facade's Deps before the
	// process is built. They come with one warehouse, "lake", at the
	// server's warehouse directory.
	Iceberg func(*icebergrest.Deps)
	// Nessie, if set, adjusts the Nessie API's Deps.
	Nessie func(*nessie.Deps)
	// Floe, if set, adjusts floe's own API's Deps.
	Floe func(*floeapi.Deps)
	// RefRetention, if set, configures references' retention (its
	// clock, defaults and sweep interval).
	RefRetention *assemble.RefRetention
	// Maintenance, if set, adjusts the maintenance locks' options (a
	// test's clock, say).
	Maintenance func(*maintenance.Options)
	// MergeQueue, if set, adjusts the merge queue's configuration (a
	// validator, Manual to step it with Server.Queue.Process).
	MergeQueue func(*assemble.MergeQueue)
	// EventWebhooks, if set, adjusts the change feed's webhooks (the
	// subscriptions, the deliverer's intervals).
	EventWebhooks func(*assemble.EventWebhooks)
	// Deps, if set, adjusts what the process is built with besides its
	// configuration (assemble.Deps): a merge validator, the clocks of the
	// merge queue and reference expiry.
	Deps func(*assemble.Deps)
	// Routes are extra routes, mounted after the APIs'.
	Routes []server.Mount
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Store, if set, selects the version store's backend as `floe serve
	// --store` does (a postgres:// URL makes the server one of several
	// replicas over that database); "" is Pebble in Dir.
	Store string
	// StoreFS, if set, is the file system the Pebble store lives on (see
	// assemble.Deps.StoreFS): a fault-injecting one plays a full disk.
	StoreFS vfs.FS
}

// Server is one running server.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:<port>.
	URL string
	// Addr is its host:port.
	Addr  string
	Store *versionstore.Store
	// Queue is the server's merge queue.
	Queue *mergequeue.Queue
	// Dir holds the store and the warehouse; WarehouseDir is the
	// warehouse directory and Warehouse its file:// URL.
	Dir, WarehouseDir, Warehouse string
	// Stop shuts the server down as `floe serve` does on SIGTERM (drain,
	// then every service closes, the store last); it runs at the end of
	// the test if not before, and only once.
	Stop func()
}

// Start starts a server, stopped when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	dir := opts.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	whDir := filepath.Join(dir, "warehouse")
	s := &Server{
		Dir: dir, WarehouseDir: whDir,
		Warehouse: (&url.URL{Scheme: "file", Path: filepath.ToSlash(whDir)}).String(),
	}
	cfg := assemble.Config{
		HTTP:     server.Settings{Addr: "127.0.0.1:0"},
		DataDir:  filepath.Join(dir, "data"),
		Security: assemble.Security{Authn: assemble.Authn{Dev: true}},
		Iceberg:  assemble.Iceberg{Warehouses: []icebergrest.Warehouse{{Name: "lake", Location: s.Warehouse}}},
	}
	deps := assemble.Deps{Routes: opts.Routes, StoreFS: opts.StoreFS}
	if opts.Security != nil {
		cfg.Security = *opts.Security
	}
	if opts.Catalog != nil {
		opts.Catalog(&cfg.Catalog)
	}
	if opts.Iceberg != nil {
		// The facade's Deps as one: its settings go to the
		// configuration, the rest (stubs, a clock) to Deps.
		d := icebergrest.Deps{Warehouses: cfg.Iceberg.Warehouses}
		opts.Iceberg(&d)
		cfg.Iceberg = assemble.Iceberg{Warehouses: d.Warehouses, DefaultWarehouse: d.DefaultWarehouse,
			IdempotencyKeyLifetime: d.IdempotencyKeyLifetime, SnapshotMetricTables: d.SnapshotMetricTables, EventsEndpoint: d.EventsEndpoint}
		deps.Iceberg = d
	}
	if opts.Nessie != nil {
		opts.Nessie(&deps.Nessie)
	}
	if opts.Floe != nil {
		opts.Floe(&deps.Floe)
	}
	if opts.RefRetention != nil {
		cfg.RefRetention = *opts.RefRetention
	}
	if opts.Maintenance != nil {
		var mo maintenance.Options
		opts.Maintenance(&mo)
		cfg.Maintenance.MaxTTL, deps.MaintenanceNow = mo.MaxTTL, mo.Now
	}
	cfg.Store = opts.Store
	if opts.MergeQueue != nil {
		opts.MergeQueue(&cfg.MergeQueue)
	}
	if opts.EventWebhooks != nil {
		opts.EventWebhooks(&cfg.EventWebhooks)
	}
	if opts.Deps != nil {
		opts.Deps(&deps)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p, err := assemble.Build(context.Background(), cfg, deps, logger)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", cfg.HTTP.Addr)
	if err != nil {
		_ = p.Close()
		t.Fatal(err)
	}
	s.Store = p.Store()
	s.Queue = p.Queue()
	s.Addr = ln.Addr().String()
	s.URL = "http://" + s.Addr
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln) }()
	s.Stop = sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("testserver: shutdown: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("testserver: the server did not stop within a minute")
		}
	})
	t.Cleanup(s.Stop)
	return s
}
