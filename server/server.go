package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// Env is what a Mount receives besides the router: the services of this
// process that APIs build on.
type Env struct {
	// Store is the open version store; it outlives every request.
	Store *versionstore.Store
	// Logger is the process logger; use RequestID(ctx) to tie lines to a
	// request.
	Logger *slog.Logger
	// Metrics is the server's private registry; APIs register their own
	// collectors here and they appear on /metrics.
	Metrics prometheus.Registerer
	// Warehouse is the root location for table data.
	Warehouse string
}

// Server is floe's HTTP front: one router with the shared middleware, the
// probes and metrics endpoints, and whatever APIs were mounted. It is an
// http.Handler, so tests may also serve it with net/http/httptest.
type Server struct {
	cfg      Config
	logger   *slog.Logger
	store    *versionstore.Store
	router   *mux.Router
	metrics  *httpMetrics
	draining atomic.Bool // set when shutdown begins; /readyz then answers 503
}

// New builds a server over an open store and mounts cfg.Mounts. It does not
// listen; see Serve and Run.
func New(cfg Config, logger *slog.Logger, store *versionstore.Store) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("invalid server config: %w", err)
	}
	if store == nil {
		return nil, errors.New("server needs an open version store")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	registry := prometheus.NewRegistry()
	metrics, err := newHTTPMetrics(registry)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	if err := registerStoreMetrics(registry, store.Stats()); err != nil {
		return nil, fmt.Errorf("registering version store metrics: %w", err)
	}
	s := &Server{
		cfg:     cfg,
		logger:  logger,
		store:   store,
		router:  mux.NewRouter().UseEncodedPath(),
		metrics: metrics,
	}

	r := s.router
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFoundException", "no route for "+r.Method+" "+r.URL.EscapedPath())
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "method "+r.Method+" not allowed on "+r.URL.EscapedPath())
	})
	r.Use(captureRoute)
	r.HandleFunc("/healthz", s.healthz).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/readyz", s.readyz).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError),
		Registry: registry,
	})).Methods(http.MethodGet)

	env := Env{Store: store, Logger: logger, Metrics: registry, Warehouse: cfg.Warehouse}
	for i, mount := range cfg.Mounts {
		if err := mount(r, env); err != nil {
			return nil, fmt.Errorf("mounting API %d of %d: %w", i+1, len(cfg.Mounts), err)
		}
	}
	return s, nil
}

// Serve answers HTTP on ln until ctx is cancelled, then shuts down
// gracefully: /readyz turns 503, after DrainDelay the listener closes and
// in-flight requests get ShutdownTimeout to finish. It returns nil after a
// clean shutdown. Serve closes ln but not the store.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	s.logger.Info("listening", "addr", ln.Addr().String())
	if s.cfg.OnListen != nil {
		s.cfg.OnListen(ln.Addr())
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serving HTTP on %s: %w", ln.Addr(), err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		return s.shutdown(hs)
	})
	return g.Wait()
}

func (s *Server) shutdown(hs *http.Server) error {
	s.draining.Store(true)
	s.logger.Info("shutting down", "drain_delay", s.cfg.DrainDelay, "timeout", s.cfg.ShutdownTimeout)
	if s.cfg.DrainDelay > 0 {
		// Keep serving (with /readyz failing) so load balancers notice
		// before the listener disappears.
		time.Sleep(s.cfg.DrainDelay)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		return fmt.Errorf("in-flight requests did not finish within %s, connections closed: %w",
			s.cfg.ShutdownTimeout, errors.Join(err, hs.Close()))
	}
	s.logger.Info("HTTP server stopped")
	return nil
}

// Run is `floe serve`: it opens the store in cfg.DataDir, creates the
// warehouse directory, serves HTTP on cfg.Addr until ctx is cancelled, shuts
// down gracefully and closes the store last. It returns nil after a clean
// shutdown.
func Run(ctx context.Context, cfg Config, logger *slog.Logger) (err error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("invalid server config: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if dir, ok := localWarehouseDir(cfg.Warehouse); ok {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("creating warehouse directory: %w", err)
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("creating data directory: %w", err)
	}

	be, err := pebblebackend.Open(cfg.DataDir, pebblebackend.Options{Logger: logger})
	if err != nil {
		return fmt.Errorf("opening store backend in %s: %w", cfg.DataDir, err)
	}
	store, err := versionstore.Open(ctx, be, versionstore.Options{Logger: logger})
	if err != nil {
		return errors.Join(fmt.Errorf("opening version store in %s: %w", cfg.DataDir, err), be.Close())
	}
	logger.Info("version store open", "data_dir", cfg.DataDir)
	// The store closes last, once Serve has returned: the listener is closed
	// and every request has finished or had its connection cut.
	defer func() {
		if cerr := store.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing version store in %s: %w", cfg.DataDir, cerr))
			return
		}
		logger.Info("version store closed", "data_dir", cfg.DataDir)
	}()

	srv, err := New(cfg, logger, store)
	if err != nil {
		return err
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return err // already says "listen tcp <addr>: ..."
	}
	return srv.Serve(ctx, ln)
}
