package testserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/floe-catalog/floe/server"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// Options configure Start.
type Options struct {
	// Dir holds the store ("data") and the warehouse ("warehouse"); ""
	// means a new temporary directory. Starting twice on one Dir reopens
	// the same data.
	Dir string
	// Mounts returns the APIs to serve. It is called once, with s's
	// Store, Warehouse and Dir filled in; Context ends when the server
	// stops, for the APIs' background work.
	Mounts func(s *Server) []server.Mount
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
}

// Server is one running server.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:<port>.
	URL string
	// Addr is its host:port.
	Addr  string
	Store *versionstore.Store
	// Dir holds the store and the warehouse; WarehouseDir is the
	// warehouse directory and Warehouse its file:// URL.
	Dir, WarehouseDir, Warehouse string
	// Context lives until the server stops.
	Context context.Context
	// Stop shuts the server down and closes the store; it runs at the end
	// of the test if not before, and only once.
	Stop func()
}

// Start starts a server, stopped when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	dir := opts.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	// The zero Options are production's: synced writes.
	be, err := pebblebackend.Open(filepath.Join(dir, "data"), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := versionstore.Open(context.Background(), be, versionstore.Options{})
	if err != nil {
		_ = be.Close()
		t.Fatal(err)
	}
	whDir := filepath.Join(dir, "warehouse")
	if err := os.MkdirAll(whDir, 0o750); err != nil {
		_ = store.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		Store: store, Dir: dir, WarehouseDir: whDir, Context: ctx,
		Warehouse: (&url.URL{Scheme: "file", Path: filepath.ToSlash(whDir)}).String(),
	}
	var mounts []server.Mount
	if opts.Mounts != nil {
		mounts = opts.Mounts(s)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv, err := server.New(server.Config{Warehouse: whDir, Mounts: mounts}, logger, store)
	if err != nil {
		cancel()
		_ = store.Close()
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	s.URL, s.Addr = hs.URL, hs.Listener.Addr().String()
	s.Stop = sync.OnceFunc(func() {
		hs.Close()
		cancel()
		if err := store.Close(); err != nil && !errors.Is(err, versionstore.ErrClosed) {
			t.Errorf("close store: %v", err)
		}
	})
	t.Cleanup(s.Stop)
	return s
}
