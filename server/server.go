package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"golang.org/x/sync/errgroup"

	"github.com/floe-catalog/floe/versionstore"
)

// Server is floe's HTTP front: one router with the shared middleware, the
// probes and metrics endpoints, and whatever APIs were mounted. It is an
// http.Handler, so tests may also serve it with net/http/httptest.
type Server struct {
	cfg      Config
	logger   *slog.Logger
	store    *versionstore.Store
	router   *mux.Router
	metrics  *httpMetrics
	tracer   trace.Tracer
	draining atomic.Bool // set when shutdown begins; /readyz then answers 503
	bodies   *bodyBudget // nil when request bodies in flight are not bounded
}

// New builds a server over an open store and mounts cfg.Mounts. It does not
// listen; see Serve. The store is the caller's: it must stay open until
// Serve has returned, and the server never closes it.
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
	registry := cfg.Registry
	if registry == nil {
		registry = prometheus.NewRegistry()
	}
	metrics, err := newHTTPMetrics(registry)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	if err := registerStoreMetrics(registry, store.Stats()); err != nil {
		return nil, fmt.Errorf("registering version store metrics: %w", err)
	}
	tp := cfg.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	s := &Server{
		cfg:     cfg,
		logger:  logger,
		store:   store,
		router:  mux.NewRouter().UseEncodedPath(),
		metrics: metrics,
		tracer:  tp.Tracer(tracerName),
	}

	if cfg.MaxBodyBytesInFlight >= 0 {
		limit := cfg.MaxBodyBytesInFlight
		if limit == 0 {
			limit = defaultBodyBudget(cfg.MaxBodyBytes)
		}
		if s.bodies, err = newBodyBudget(limit, registry); err != nil {
			return nil, err
		}
		logger.Info("request bodies in flight bounded", "bytes", limit)
	}

	r := s.router
	var notFound, notAllowed http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFoundException", "no route for "+r.Method+" "+r.URL.EscapedPath())
	}), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "method "+r.Method+" not allowed on "+r.URL.EscapedPath())
	})
	if cfg.AuthenticateUnmatched != nil {
		authenticate := cfg.AuthenticateUnmatched(s.unauthenticated)
		notFound, notAllowed = authenticate(notFound), authenticate(notAllowed)
	}
	r.NotFoundHandler, r.MethodNotAllowedHandler = notFound, notAllowed
	r.Use(captureRoute)
	r.HandleFunc("/healthz", s.healthz).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/readyz", s.readyz).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError),
		Registry: registry,
	})).Methods(http.MethodGet)

	for i, mount := range cfg.Mounts {
		if err := mount(r); err != nil {
			return nil, fmt.Errorf("mounting API %d of %d: %w", i+1, len(cfg.Mounts), err)
		}
	}
	return s, nil
}

// Serve answers HTTP on ln until ctx is cancelled, then shuts down
// gracefully: /readyz turns 503, after DrainDelay the listener closes and
// in-flight requests get ShutdownTimeout to finish. It returns nil after a
// clean shutdown, when no handler runs any more, so the services the
// handlers use may then close; after a forced one (ShutdownTimeout passed)
// it returns an error and cut handlers may still be finishing. Serve closes
// ln but not the store.
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
