package assemble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/housekeeping/maintenance"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/rest/nessie"
	"github.com/floe-catalog/floe/server"
	"github.com/floe-catalog/floe/server/console"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
	"github.com/floe-catalog/floe/versionstore/storebackup"
)

// Process is one assembled floe server: its services, built and not yet
// closed, and the HTTP server over them.
type Process struct {
	logger *slog.Logger
	store  *versionstore.Store
	// catalog owns the warehouses and the metadata cache every service
	// reading or writing table files shares.
	catalog *catalog.Service
	http    *server.Server
	// backups backs up and exports the embedded store; nil over a
	// backend other than Pebble.
	backups *storebackup.Service
	tracer  trace.TracerProvider // Deps.TracerProvider
	queue   *mergequeue.Queue
	// feed is the change feed, drained when Serve begins to shut down.
	feed *changefeed.Feed

	// closers undo Build, in the order the services were built; Close
	// runs them backwards.
	closers   []closer
	closeOnce sync.Once
	closeErr  error
}

// ServiceError is a service Build could not start. Its text is Err's,
// which already names what failed; Service lets callers add their own
// advice (cmd/floe names the flags that would help).
type ServiceError struct {
	// Service is "version store", "warehouse", "catalog", "authentication",
	// "decision log", "policy engine", "maintenance locks", "iceberg REST
	// API", "merge engine", "ref retention", "garbage collector", "merge queue", "event webhooks", "floe API"
	// or "HTTP server".
	Service string
	Err     error
}

func (e *ServiceError) Error() string { return e.Err.Error() }
func (e *ServiceError) Unwrap() error { return e.Err }

// closer stops one service; name is what the log says was closed.
type closer struct {
	name  string
	close func() error
}

// Run is `floe serve`: it builds the process, listens on cfg.HTTP.Addr and
// serves until ctx ends, then drains and closes every service. It returns
// nil after a clean shutdown.
func Run(ctx context.Context, cfg Config, deps Deps, logger *slog.Logger) error {
	p, err := Build(ctx, cfg, deps, logger)
	if err != nil {
		return err
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", cfg.HTTP.Addr)
	if err != nil {
		return errors.Join(err, p.Close()) // err already says "listen tcp <addr>: ..."
	}
	return p.Serve(ctx, ln)
}

// Build builds every service of the process in order, and the HTTP server
// over them; it does not listen. If a step fails, what was built is closed
// again, in reverse order, and the error names the step. deps holds what
// is live beside cfg; Build builds what it leaves nil.
func Build(ctx context.Context, cfg Config, deps Deps, logger *slog.Logger) (_ *Process, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.HTTP.Addr == "" {
		cfg.HTTP.Addr = server.DefaultAddr
	}
	if cfg.Security.Authn.Dev {
		if err := authn.CheckDevAddr(cfg.HTTP.Addr); err != nil {
			return nil, err
		}
	}
	p := &Process{logger: logger, tracer: deps.TracerProvider}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Close())
		}
	}()
	// One registry for every service's metrics, served on /metrics.
	registry := prometheus.NewRegistry()

	if err := p.openStoreOf(ctx, cfg, deps.StoreFS, registry); err != nil {
		return nil, &ServiceError{Service: "version store", Err: err}
	}
	// Over a shared store, background work that must run on one replica
	// at a time is leased (leases.go).
	storeKind, _, _ := ParseStore(cfg.Store, cfg.DataDir)
	lead := newLeadership(p.store, storeKind == StorePostgres, cfg.LeaseTTL, logger)
	if err := createWarehouseDirs(cfg.Iceberg.Warehouses); err != nil {
		return nil, &ServiceError{Service: "warehouse", Err: err}
	}
	// The catalog: the warehouses and their metadata cache, opened once
	// for the APIs and every background worker below.
	if p.catalog, err = catalog.New(p.store, catalogConfig(cfg), catalog.Options{Logger: logger, TracerProvider: deps.TracerProvider}); err != nil {
		return nil, &ServiceError{Service: "catalog", Err: err}
	}
	warehouses := p.catalog.Warehouses()
	authnCfg := cfg.Security.Authn.Config(deps.AuthnNow)
	auth, err := p.startAuthn(ctx, authnCfg, registry)
	if err != nil {
		return nil, &ServiceError{Service: "authentication", Err: err}
	}
	decisionLog, err := p.openDecisionLog(cfg.Security)
	if err != nil {
		return nil, &ServiceError{Service: "decision log", Err: err}
	}
	engine, err := p.startPolicy(ctx, cfg.Security.Policy, decisionLog, registry)
	if err != nil {
		return nil, &ServiceError{Service: "policy engine", Err: err}
	}

	// The APIs, over the services above.
	icebergDeps, nessieDeps := deps.Iceberg, deps.Nessie
	ic := cfg.Iceberg
	icebergDeps.Warehouses, icebergDeps.DefaultWarehouse, icebergDeps.IdempotencyKeyLifetime = ic.Warehouses, ic.DefaultWarehouse, ic.IdempotencyKeyLifetime
	icebergDeps.SnapshotMetricTables, icebergDeps.EventsEndpoint = ic.SnapshotMetricTables, ic.EventsEndpoint
	if icebergDeps.Vendors, err = newVendors(ctx, ic.Warehouses, icebergDeps.Vendors, deps.VendNow); err != nil {
		return nil, &ServiceError{Service: "vended credentials", Err: err}
	}
	icebergDeps.Store, icebergDeps.Catalog, icebergDeps.Logger, icebergDeps.Metrics = p.store, p.catalog, logger, registry
	if icebergDeps.TracerProvider == nil {
		icebergDeps.TracerProvider = deps.TracerProvider
	}
	nessieDeps.Store, nessieDeps.Logger = p.store, logger
	if icebergDeps.Principal == nil {
		icebergDeps.Principal = principalID
	}
	if nessieDeps.Principal == nil {
		nessieDeps.Principal = principalID
	}
	if icebergDeps.Authenticate == nil {
		icebergDeps.Authenticate = auth.Middleware
	}
	if nessieDeps.Authenticate == nil {
		nessieDeps.Authenticate = auth.Middleware
	}
	if icebergDeps.Guard == nil {
		icebergDeps.Guard = guard(engine, "iceberg").Traced(deps.TracerProvider)
	}
	if nessieDeps.Guard == nil {
		nessieDeps.Guard = guard(engine, "nessie").Traced(deps.TracerProvider)
	}
	// The maintenance locks, built before the APIs that share them: the
	// Iceberg facade enforces them, floe's API serves them (and table
	// statistics, which read metadata through the catalog's warehouses).
	maintOpts := maintenance.Options{MaxTTL: cfg.Maintenance.MaxTTL, Now: deps.MaintenanceNow, Metrics: registry, Logger: logger}
	if icebergDeps.MaintenanceLocks == nil {
		locks, err := maintenance.New(p.store, maintOpts)
		if err != nil {
			return nil, &ServiceError{Service: "maintenance locks", Err: err}
		}
		icebergDeps.MaintenanceLocks = locks
	}
	iceberg, err := icebergrest.New(icebergDeps)
	if err != nil {
		return nil, &ServiceError{Service: "iceberg REST API", Err: err}
	}
	// The Nessie API keeps no state of its own beyond its Deps: Register
	// only wraps handlers around the store and the guard built above. Its
	// clients may name metadata locations too, under the same rule as
	// the Iceberg API's: inside a configured warehouse. Its merges read
	// and write tables through the catalog's warehouses.
	if nessieDeps.Locations == nil {
		nessieDeps.Locations = warehouses
	}
	if nessieDeps.Classifier == nil {
		nessieDeps.Classifier = newClassifier(warehouses)
	}
	merges, err := newMergeEngine(cfg, deps.TracerProvider, p.store, warehouses, logger)
	if err != nil {
		return nil, &ServiceError{Service: "merge engine", Err: err}
	}
	if nessieDeps.Merger == nil {
		nessieDeps.Merger = nessieMerger{merges}
	}

	retention, err := newRetention(cfg.RefRetention, deps.RefRetentionNow, p.store, logger, registry)
	if err != nil {
		return nil, &ServiceError{Service: "ref retention", Err: err}
	}
	collector, err := p.newCollector(cfg, p.store, warehouses, retention, logger, registry)
	if err != nil {
		return nil, &ServiceError{Service: "garbage collector", Err: err}
	}

	validator := deps.MergeValidator
	if validator == nil {
		if validator, err = newMergeValidator(cfg.MergeChecks, p.store, warehouses, engine, logger); err != nil {
			return nil, &ServiceError{Service: "merge checks", Err: err}
		}
	}
	queue, err := newMergeQueue(ctx, cfg.MergeQueue, validator, deps.MergeQueueNow, p.store, merges, lead, logger, registry)
	if err != nil {
		return nil, &ServiceError{Service: "merge queue", Err: err}
	}
	p.queue = queue

	floeDeps := deps.Floe
	floeDeps.Store, floeDeps.Logger = p.store, logger
	if floeDeps.Queue == nil {
		floeDeps.Queue = queue
	}
	if floeDeps.Retention == nil {
		floeDeps.Retention = retention
	}
	if floeDeps.Maintenance == nil {
		floeDeps.Maintenance = icebergDeps.MaintenanceLocks
	}
	if floeDeps.TableStats == nil && floeDeps.Maintenance != nil {
		floeDeps.TableStats = maintenance.NewStats(floeDeps.Maintenance, warehouses)
	}
	if floeDeps.GC == nil {
		floeDeps.GC = collector
	}
	if floeDeps.Merges == nil {
		floeDeps.Merges = floePlanner{merges}
	}
	if floeDeps.Backups == nil {
		floeDeps.Backups = p.backups
	}
	if floeDeps.Principal == nil {
		floeDeps.Principal = principalID
	}
	if floeDeps.Authenticate == nil {
		floeDeps.Authenticate = auth.Middleware
	}
	if floeDeps.Guard == nil {
		floeDeps.Guard = guard(engine, "floe").Traced(deps.TracerProvider)
	}
	if floeDeps.Events == nil {
		floeDeps.Events = changefeed.New(p.store, changefeed.Options{Summaries: changefeed.WarehouseSummaries(warehouses), Logger: logger})
	}
	p.feed = floeDeps.Events
	hooks, err := newEventHooks(cfg.EventWebhooks, p.store, p.feed, engine, logger, registry)
	if err != nil {
		return nil, &ServiceError{Service: "event webhooks", Err: err}
	}
	if floeDeps.Webhooks == nil {
		floeDeps.Webhooks = hooks
	}
	floeAPI, err := floeapi.New(floeDeps)
	if err != nil {
		return nil, &ServiceError{Service: "floe API", Err: err}
	}

	// Background workers, stopped before the services they use close.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	var workers sync.WaitGroup
	workers.Go(func() { iceberg.ExpireRecords(workCtx) })
	if cfg.RefRetention.ExpiryInterval > 0 {
		workers.Go(func() {
			lead.exclusive(workCtx, "refretention", func(ctx context.Context) { retention.Run(ctx, cfg.RefRetention.ExpiryInterval) })
		})
	}
	if cfg.GC.Interval > 0 {
		workers.Go(func() {
			lead.exclusive(workCtx, "gc", func(ctx context.Context) { collector.Schedule(ctx, cfg.GC.Interval) })
		})
	}
	if !cfg.MergeQueue.Manual {
		workers.Go(func() { queue.Run(workCtx) })
	}
	if hooks != nil {
		workers.Go(func() { lead.exclusive(workCtx, "eventhooks", hooks.Run) })
	}
	p.onClose("background workers", func() error {
		stopWork()
		workers.Wait()
		return nil
	})

	// The HTTP server last: only route registrations from here on.
	httpCfg := server.Config{Settings: cfg.HTTP, Registry: registry, TracerProvider: deps.TracerProvider, AuthenticateUnmatched: auth.Middleware}
	httpCfg.Mounts = append([]server.Mount{
		func(r *mux.Router) error {
			r.Handle("/v1/oauth/tokens", auth.TokenHandler()).Methods(http.MethodPost)
			return nil
		},
		func(r *mux.Router) error {
			iceberg.Routes(r)
			return nil
		},
		func(r *mux.Router) error { return nessie.Register(r, nessieDeps) },
		func(r *mux.Router) error {
			floeAPI.Register(r, floeDeps.Authenticate)
			return nil
		},
		// The web console: static files only, so no authentication; the
		// page calls the APIs above with the user's own token.
		func(r *mux.Router) error {
			ui, err := console.Handler()
			if err != nil {
				return err
			}
			r.Handle(strings.TrimSuffix(console.Prefix, "/"), http.RedirectHandler(console.Prefix, http.StatusMovedPermanently))
			r.PathPrefix(console.Prefix).Handler(ui)
			return nil
		},
	}, deps.Routes...)
	if p.http, err = server.New(httpCfg, logger, p.store); err != nil {
		return nil, &ServiceError{Service: "HTTP server", Err: err}
	}
	return p, nil
}

// Store is the process's version store; it is open until Close.
func (p *Process) Store() *versionstore.Store { return p.store }

// Catalog is the process's catalog service.
func (p *Process) Catalog() *catalog.Service { return p.catalog }

// Queue is the process's merge queue.
func (p *Process) Queue() *mergequeue.Queue { return p.queue }

// Serve answers HTTP on ln until ctx ends, then shuts down: the HTTP
// server drains (see server.Server.Serve), and only once it has returned
// are the services closed, in reverse order of creation. It returns nil
// after a clean shutdown.
func (p *Process) Serve(ctx context.Context, ln net.Listener) error {
	// Long polls and event streams end as the shutdown begins, so that
	// they do not hold the drain until its timeout.
	if p.feed != nil {
		stop := context.AfterFunc(ctx, p.feed.Drain)
		defer stop()
	}
	err := p.http.Serve(ctx, ln)
	return errors.Join(err, p.Close())
}

// Close closes every service in reverse order of creation: background
// workers, the policy engine, the decision log, authentication, the
// version store. It is for a process whose HTTP server is not serving (a
// failed start, or after Serve, which calls it); later calls return the
// first one's result.
func (p *Process) Close() error {
	p.closeOnce.Do(func() {
		var errs []error
		for i := len(p.closers) - 1; i >= 0; i-- {
			c := p.closers[i]
			if err := c.close(); err != nil {
				errs = append(errs, fmt.Errorf("closing %s: %w", c.name, err))
				continue
			}
			p.logger.Info(c.name + " closed")
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// onClose registers how to close the service just built.
func (p *Process) onClose(name string, close func() error) {
	p.closers = append(p.closers, closer{name: name, close: close})
}

// openStore opens the Pebble backend and the version store in dir.
func (p *Process) openStore(ctx context.Context, dir string, cacheBytes int64, fs vfs.FS, reg prometheus.Registerer) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("creating data directory: %w", err)
	}
	be, err := pebblebackend.Open(dir, pebblebackend.Options{Logger: p.logger, FS: fs})
	if err != nil {
		return fmt.Errorf("opening store backend in %s: %w", dir, err)
	}
	if err := registerStoreFaults(reg, be); err != nil {
		return errors.Join(fmt.Errorf("registering the store's fault metrics: %w", err), be.Close())
	}
	store, err := versionstore.Open(ctx, be, storeOptions(p, cacheBytes))
	if err != nil {
		return errors.Join(fmt.Errorf("opening version store in %s: %w", dir, err), be.Close())
	}
	p.store = store
	p.backups = storebackup.New(be, dir)
	p.logger.Info("version store open", "data_dir", dir)
	p.onClose("version store", func() error {
		if err := store.Close(); err != nil {
			return fmt.Errorf("in %s: %w", dir, err)
		}
		return nil
	})
	return nil
}

// startAuthn builds the authenticator. Its watchers (token file, JWKS,
// OAuth clients reloads) run until Close.
func (p *Process) startAuthn(ctx context.Context, cfg authn.Config, reg prometheus.Registerer) (*authn.Authenticator, error) {
	watchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	auth, err := authn.New(watchCtx, cfg, p.logger, reg)
	if err != nil {
		stop()
		return nil, err
	}
	p.onClose("authentication", func() error { stop(); return nil })
	return auth, nil
}

// openDecisionLog opens the file decisions are appended to; nil when none
// is, or when authorization is off. It is built before the policy engine
// and so closed after it: the engine's last decisions reach the file.
func (p *Process) openDecisionLog(sec Security) (io.Writer, error) {
	switch {
	case sec.DecisionLog == "":
		return nil, nil
	case sec.Policy == nil:
		p.logger.Warn("no decision log is written: authorization is off", "decision_log", sec.DecisionLog)
		return nil, nil
	case sec.DecisionLog == "-":
		return os.Stdout, nil
	}
	f, err := os.OpenFile(sec.DecisionLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err // already "open <path>: ..."
	}
	p.onClose("decision log", f.Close)
	return f, nil
}

// startPolicy starts the policy engine, writing decisions to decisionLog
// if set; it returns nil when authorization is off (opts nil).
func (p *Process) startPolicy(ctx context.Context, settings *Policy, decisionLog io.Writer, reg prometheus.Registerer) (*policy.Engine, error) {
	if settings == nil {
		p.logger.Warn("authorization is off: every request is allowed")
		return nil, nil
	}
	o := settings.Options()
	o.Logger, o.Metrics, o.DecisionLog = p.logger, reg, decisionLog
	if p.store != nil {
		o.OnActivate = p.policyActivated // events.go
	}
	engine, err := policy.New(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	p.onClose("policy engine", engine.Close)
	p.logger.Info("authorization on", "policy_revision", engine.Revision())
	return engine, nil
}

// guard is an API's guard over engine; nil (allow all) when authorization
// is off.
func guard(engine *policy.Engine, api string) *authz.Guard {
	if engine == nil {
		return nil
	}
	return authz.NewGuard(engine, api, authn.PrincipalOf, func(r *http.Request) string {
		return server.RequestID(r.Context())
	})
}

// principalID names a request's caller for commit records.
func principalID(r *http.Request) string {
	if p, ok := authn.FromContext(r.Context()); ok {
		return p.ID
	}
	return "anonymous"
}

// catalogConfig is cfg.Catalog with the warehouses the Iceberg facade
// serves.
func catalogConfig(cfg Config) catalog.Config {
	c := cfg.Catalog
	c.Warehouses = make([]catalog.Warehouse, 0, len(cfg.Iceberg.Warehouses))
	for _, w := range cfg.Iceberg.Warehouses {
		c.Warehouses = append(c.Warehouses, catalog.Warehouse{
			Name: w.Name, Location: w.Location, IOProperties: w.IOProperties, AllowedLocations: w.AllowedLocations,
		})
	}
	return c
}

// createWarehouseDirs creates the directories of local warehouses, so a
// first start on an empty machine works.
func createWarehouseDirs(whs []icebergrest.Warehouse) error {
	for _, wh := range whs {
		u, err := url.Parse(wh.Location)
		if err != nil || !strings.EqualFold(u.Scheme, "file") {
			continue // object stores need no directory; the facade checks the location
		}
		if err := os.MkdirAll(filepath.FromSlash(u.Path), 0o750); err != nil {
			return fmt.Errorf("creating warehouse directory of %s: %w", wh.Name, err)
		}
	}
	return nil
}
