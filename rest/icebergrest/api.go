package icebergrest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/housekeeping/maintenance"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/iceberg/s3vend"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/rest/httpapi"
	"github.com/floe-catalog/floe/versionstore"
)

// Defaults for zero Deps fields.
const (
	// DefaultPrincipal is the committer recorded for every request when
	// Deps.Principal is nil (an embedding that names no callers).
	DefaultPrincipal = "anonymous"
)

// Warehouse is one named catalog root: clients select it with
// ?warehouse=<Name>[@<ref>] and every table location must lie below
// Location. The catalog service owns the warehouse (its file IO and
// location rules, see catalog.Warehouse, which the composition root makes
// from Name, Location, IOProperties and AllowedLocations); the facade adds
// what clients are told about it (ClientConfig, RemoteSigning).
type Warehouse struct {
	Name string
	// Location is the root URL of table data, e.g. file:///srv/lake or
	// s3://bucket/prefix.
	Location string
	// IOProperties are iceberg-go FileIO properties (io.LoadFS) for the
	// catalog's own metadata reads and writes under Location, e.g.
	// icebergtable.S3Options.IOProperties; nil for local files.
	IOProperties map[string]string
	// ClientConfig is handed to clients as the config of loadTable,
	// createTable and registerTable answers (FileIO properties for data
	// files, e.g. icebergtable.S3Options.ClientConfig); nil means none.
	ClientConfig map[string]string
	// AllowedLocations are extra location prefixes clients may place
	// tables and views under besides Location (icebergtable.Config).
	AllowedLocations []string
	// RemoteSigning, if set, signs engines' S3 requests for this
	// warehouse's tables (sign.go); nil signs nothing.
	RemoteSigning *RemoteSigning
	// VendedCredentials, if set, vends engines S3 credentials scoped to
	// one table (credentials.go); nil vends none.
	VendedCredentials *VendedCredentials
}

// Deps is what the facade needs from the process.
type Deps struct {
	Store *versionstore.Store
	// Catalog owns the warehouses and the metadata cache; it must hold a
	// warehouse of every name in Warehouses.
	Catalog *catalog.Service
	Logger  *slog.Logger
	// Metrics receives the facade's collectors; nil means a private
	// registry nobody scrapes.
	Metrics prometheus.Registerer
	// Warehouses lists the warehouses served; at least one.
	Warehouses []Warehouse
	// DefaultWarehouse is used when a client names none; "" means the
	// first of Warehouses.
	DefaultWarehouse string
	// Vendors are the STS clients of the warehouses that vend
	// credentials, by warehouse name, built from their
	// VendedCredentials.STS (server/assemble builds them); one missing
	// is an error.
	Vendors map[string]*s3vend.Vendor
	// Principal names the caller of a request for commit records; nil
	// means DefaultPrincipal for everyone.
	Principal func(*http.Request) string
	// IdempotencyKeyLifetime is how long the outcome of a request sent
	// with an Idempotency-Key is kept and replayed to retries with the same
	// key; /v1/config advertises it. 0 means
	// DefaultIdempotencyKeyLifetime; negative turns keys off: the header
	// is then ignored and nothing is advertised.
	IdempotencyKeyLifetime time.Duration
	// Now is the clock that dates and expires idempotency records; nil
	// means time.Now.
	Now func() time.Time
	// Authenticate, if set, wraps every route: it names the caller or
	// refuses the request through onError, which answers 401 in the
	// Iceberg error model. nil serves everybody without asking who
	// they are.
	Authenticate httpapi.Authenticate
	// Guard asks the policy engine about every read and write; nil allows
	// everything.
	Guard *authz.Guard
	// MaintenanceLocks, if set, refuses maintenance commits on a table
	// whose maintenance lock another job holds (maintenancelock.go).
	MaintenanceLocks *maintenance.Service
	// SnapshotMetricTables bounds how many tables get their own label on
	// floe_iceberg_snapshots_total; 0 means DefaultSnapshotMetricTables,
	// negative means no table label.
	SnapshotMetricTables int
	// TracerProvider traces commits (with their tables and branch) as
	// spans of the request's trace (metadata file reads and writes are
	// the catalog's); nil records nothing.
	TracerProvider trace.TracerProvider
	// EventsEndpoint serves the events endpoint of the Iceberg REST
	// spec's open proposal (POST /v1/{prefix}/events, events.go) from the
	// store's change feed; false (the default while the proposal is open)
	// leaves it out, and out of /v1/config.
	EventsEndpoint bool
}

// api serves the Iceberg REST routes.
type api struct {
	store *versionstore.Store
	// catalog commits table changes (tablecommit.go) and owns the warehouses
	// and the metadata cache.
	catalog *catalog.Service
	// joins are the buffers a reply in pieces is joined in (reply.write).
	joins      joinBuffers
	logger     *slog.Logger
	metrics    *metrics
	warehouses map[string]*warehouse
	defaultWH  *warehouse
	principal  func(*http.Request) string
	// ik handles Idempotency-Key; nil when keys are turned off.
	ik  *idempotency
	now func() time.Time
	// authenticate wraps each route (routes.go); guard authorizes
	// (authz.go).
	authenticate httpapi.Authenticate
	guard        *authz.Guard
	// maint checks the maintenance lock and counts snapshots.
	maint *maintenanceHooks
	// tracer traces commits (tablecommit.go).
	tracer trace.Tracer
	// events is the change feed the events endpoint reads; nil when it is
	// not served (events.go).
	events *changefeed.Feed
}

// API is the facade built by New: its routes and its background work
// share one metadata cache, one set of table locks and one idempotency
// state.
type API struct{ a *api }

// New builds the facade from deps. It starts nothing: the process serves
// Routes and runs ExpireRecords for as long as the facade lives.
func New(deps Deps) (*API, error) {
	a, err := newAPI(deps)
	if err != nil {
		return nil, err
	}
	return &API{a: a}, nil
}

// Routes adds the Iceberg REST catalog routes (/v1/config and
// /v1/{prefix}/...) to r. r must match on encoded paths
// (mux.Router.UseEncodedPath), as floe's server router does.
func (x *API) Routes(r *mux.Router) { x.a.routes(r) }

// ExpireRecords deletes expired idempotency records every minute (or
// every lifetime, if shorter) until ctx ends or the store closes; it
// returns at once when Idempotency-Key support is off. Without it expired
// records are never replayed but stay in the store. Stop it before the
// store closes.
func (x *API) ExpireRecords(ctx context.Context) {
	if x.a.ik != nil {
		x.a.expireRecords(ctx)
	}
}

func newAPI(deps Deps) (*api, error) {
	if deps.Store == nil {
		return nil, errors.New("iceberg REST: no version store")
	}
	if deps.Catalog == nil {
		return nil, errors.New("iceberg REST: no catalog")
	}
	if len(deps.Warehouses) == 0 {
		return nil, errors.New("iceberg REST: no warehouse configured")
	}
	a := &api{
		store:      deps.Store,
		catalog:    deps.Catalog,
		logger:     deps.Logger,
		warehouses: map[string]*warehouse{},
		principal:  deps.Principal,
		now:        deps.Now,
		guard:      deps.Guard,
	}
	tp := deps.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	a.tracer = tp.Tracer("github.com/floe-catalog/floe/rest/icebergrest")
	if deps.EventsEndpoint {
		a.events = changefeed.New(deps.Store, changefeed.Options{Logger: deps.Logger})
	}
	a.authenticate = deps.Authenticate
	if a.now == nil {
		a.now = time.Now
	}
	switch lt := deps.IdempotencyKeyLifetime; {
	case lt == 0:
		a.ik = newIdempotency(DefaultIdempotencyKeyLifetime)
	case lt > 0:
		a.ik = newIdempotency(lt)
	}
	if a.logger == nil {
		a.logger = slog.New(slog.DiscardHandler)
	}
	a.logger = a.logger.With("api", "iceberg-rest")
	if a.principal == nil {
		a.principal = func(*http.Request) string { return DefaultPrincipal }
	}
	for _, w := range deps.Warehouses {
		files, ok := deps.Catalog.Warehouse(w.Name)
		if !ok {
			return nil, fmt.Errorf("iceberg REST: warehouse %q is not the catalog's", w.Name)
		}
		wh, err := newWarehouse(w, files, deps.Vendors[w.Name])
		if err != nil {
			return nil, err
		}
		if _, dup := a.warehouses[wh.name]; dup {
			return nil, fmt.Errorf("iceberg REST: warehouse %q configured twice", wh.name)
		}
		a.warehouses[wh.name] = wh
		if a.defaultWH == nil && (deps.DefaultWarehouse == "" || deps.DefaultWarehouse == wh.name) {
			a.defaultWH = wh
		}
	}
	if a.defaultWH == nil {
		return nil, fmt.Errorf("iceberg REST: default warehouse %q is not configured", deps.DefaultWarehouse)
	}
	reg := deps.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("iceberg REST: registering metrics: %w", err)
	}
	a.metrics = m
	if a.maint, err = newMaintenanceHooks(deps, reg); err != nil {
		return nil, fmt.Errorf("iceberg REST: registering metrics: %w", err)
	}
	return a, nil
}

// fail logs err and answers with it: the facade's error encoder, in the
// Iceberg ErrorModel (routes.go registers it with every route).
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	ae := classify(err)
	if ae.status >= 500 {
		a.logger.ErrorContext(r.Context(), "iceberg request failed",
			"method", r.Method, "path", r.URL.EscapedPath(), "status", ae.status,
			"error", err, "request_id", requestID(w))
	} else {
		a.logger.DebugContext(r.Context(), "iceberg request refused",
			"method", r.Method, "path", r.URL.EscapedPath(), "status", ae.status,
			"type", ae.typ, "error", ae.msg, "request_id", requestID(w))
	}
	if ime, ok := errors.AsType[*icebergtable.InvalidMetadataError](err); ok {
		// The parser's detail may quote the file: logs only, at debug.
		a.logger.DebugContext(r.Context(), "invalid metadata file",
			"location", ime.Location, "cause", ime.Cause(), "request_id", requestID(w))
	}
	writeError(w, r, ae)
}

// requestID reads the id floe's server middleware put on the response, so
// log lines can be tied to the access log without importing server/.
func requestID(w http.ResponseWriter) string { return w.Header().Get("X-Request-Id") }

// namespaceVar decodes the route's {namespace} variable.
func namespaceVar(r *http.Request) ([]string, error) {
	return parseNamespace(mux.Vars(r)["namespace"])
}

// identVar decodes {namespace} and the variable name ("table" or "view").
func identVar(r *http.Request, name string) (identifier, error) {
	ns, err := namespaceVar(r)
	if err != nil {
		return identifier{}, err
	}
	n, err := parseName(mux.Vars(r)[name])
	if err != nil {
		return identifier{}, err
	}
	id := identifier{Namespace: ns, Name: n}
	return id, id.validate()
}

// prefixVar decodes the {prefix} variable.
func prefixVar(r *http.Request) (string, error) {
	raw := mux.Vars(r)["prefix"]
	s, err := url.PathUnescape(raw)
	if err != nil {
		return "", badRequest("malformed prefix %q: %v", raw, err)
	}
	return s, nil
}

// queryBool parses a boolean query parameter; absent is false.
func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	switch strings.ToLower(v) {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, badRequest("query parameter %s must be true or false, not %q", name, v)
}
