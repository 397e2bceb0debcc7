package floeapi

import (
	_ "embed"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/catalog/eventhooks"
	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/housekeeping/maintenance"
	"github.com/floe-catalog/floe/housekeeping/refretention"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/rest/httpapi"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/storebackup"
)

// Prefix is where the API is served; the version is in the path so a
// later incompatible version can be served beside this one.
const Prefix = "/api/floe/v1"

// DefaultPrincipal names every caller when Deps.Principal is nil, as when
// the API is served without authentication.
const DefaultPrincipal = "anonymous"

// OpenAPI is the API's OpenAPI 3 document, kept in the repository and
// served at Prefix + "/openapi.yaml".
//
//go:embed openapi.yaml
var OpenAPI []byte

// Deps are what the API needs. Each capability adds the service it
// exposes; a nil service leaves its routes answering 501.
type Deps struct {
	Store  *versionstore.Store
	Logger *slog.Logger
	// Principal names the caller of a request for audit records; nil
	// means DefaultPrincipal for everyone.
	Principal func(*http.Request) string
	// Authenticate, if set, wraps every route: it names the caller or
	// refuses the request through onError, which answers 401 in this
	// API's error model. nil serves everybody.
	Authenticate httpapi.Authenticate
	// Guard asks the policy engine about every operation; nil allows
	// everything.
	Guard *authz.Guard
	// Retention keeps references' retention and expires them (refs.go).
	Retention *refretention.Service
	// Maintenance keeps the maintenance locks and TableStats computes
	// table statistics (maintenance.go); nil answers 501.
	Maintenance *maintenance.Service
	TableStats  *maintenance.Stats
	// GC runs garbage collection (POST /gc, GET /gc/last).
	GC *gc.Collector
	// Merges plans merges through the merge engine (merges.go); nil
	// answers 501.
	Merges MergePlanner
	// Backups backs up and exports the embedded store (backup.go); nil
	// answers 501.
	Backups *storebackup.Service
	// Queue is the merge queue (queue.go); nil answers 501.
	Queue *mergequeue.Queue
	// Events is the catalog's change feed (events.go); nil answers 501.
	Events *changefeed.Feed
	// Webhooks are the change feed's webhook subscriptions
	// (webhooks.go); nil answers 501.
	Webhooks *eventhooks.Service
}

// API is floe's own API over its services.
type API struct {
	store     *versionstore.Store
	logger    *slog.Logger
	principal func(*http.Request) string
	guard     *authz.Guard
	retention *refretention.Service

	maintenance *maintenance.Service
	tableStats  *maintenance.Stats
	gc          *gc.Collector
	merges      MergePlanner
	backups     *storebackup.Service
	queue       *mergequeue.Queue
	events      *changefeed.Feed
	webhooks    *eventhooks.Service
}

// New builds the API over deps.
func New(deps Deps) (*API, error) {
	if deps.Store == nil {
		return nil, errors.New("floe API: no version store")
	}
	a := &API{store: deps.Store, logger: deps.Logger, principal: deps.Principal, guard: deps.Guard, gc: deps.GC, merges: deps.Merges}
	a.queue = deps.Queue
	a.events = deps.Events
	a.webhooks = deps.Webhooks
	a.retention = deps.Retention
	a.maintenance, a.tableStats = deps.Maintenance, deps.TableStats
	a.backups = deps.Backups
	if a.logger == nil {
		a.logger = slog.New(slog.DiscardHandler)
	}
	if a.principal == nil {
		a.principal = func(*http.Request) string { return DefaultPrincipal }
	}
	return a, nil
}

// route is one operation: handler answers with a value to encode as JSON
// (status 200 unless it is a *reply; see answer) or an error in the API's
// model. Register turns each into an httpapi.Route.
type route struct {
	method, path string
	handler      func(*http.Request) (any, error)
}

// longRunning is a handler's answer whose work runs past the server's
// write timeout: answer lifts the write deadline to timeout, then runs it.
type longRunning struct {
	timeout time.Duration
	run     func() (any, error)
}

// reply is an answer with a status other than 200.
type reply struct {
	status int
	body   any
}

// routes lists every operation of the API. Capabilities append theirs.
func (a *API) routes() []route {
	routes := []route{
		{http.MethodGet, "/openapi.yaml", nil}, // served raw, below
	}
	routes = append(routes, a.refRoutes()...)
	routes = append(routes, a.maintenanceRoutes()...)
	routes = append(routes, a.gcRoutes()...)
	routes = append(routes, a.mergeRoutes()...)
	routes = append(routes, a.backupRoutes()...)
	routes = append(routes, a.queueRoutes()...)
	routes = append(routes, a.eventRoutes()...)
	routes = append(routes, a.webhookRoutes()...)
	return routes
}

// Register adds the API's routes under Prefix to r, behind authentication
// when deps set it (the OpenAPI document is public, like /healthz).
func (a *API) Register(r *mux.Router, authenticate httpapi.Authenticate) {
	web := httpapi.API{Prefix: Prefix, Encode: a.writeError, Unauthenticated: a.unauthenticated, Authenticate: authenticate}
	web.Register(r, httpapi.Route{Method: http.MethodGet, Path: "/openapi.yaml", Public: true,
		Handler: func(w http.ResponseWriter, _ *http.Request) error {
			w.Header().Set("Content-Type", "application/yaml")
			_, _ = w.Write(OpenAPI)
			return nil
		}})
	for _, rt := range a.routes() {
		if rt.handler == nil {
			continue
		}
		web.Register(r, httpapi.Route{Method: rt.method, Path: rt.path, Handler: a.answer(rt.handler)})
	}
	// Anything else under the prefix answers in this API's error model.
	web.NotFound(r, func(r *http.Request) error {
		return notFound("no operation %s %s in floe's API (see %s/openapi.yaml)", r.Method, r.URL.Path, Prefix)
	})
}

// answer sends what a route's handler answers: a value encoded as JSON
// with status 200, a *reply with another status, a *longRunning's answer
// after lifting the write deadline, a streamed answer as it writes itself.
func (a *API) answer(h func(*http.Request) (any, error)) httpapi.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		v, err := h(r)
		if lr, ok := v.(*longRunning); ok && err == nil {
			// A writer without deadlines (a test's recorder) keeps none.
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(lr.timeout))
			v, err = lr.run()
		}
		if err != nil {
			return err
		}
		if s, ok := v.(streamed); ok {
			s(w)
			return nil
		}
		status := http.StatusOK
		if rp, ok := v.(*reply); ok {
			status, v = rp.status, rp.body
		}
		writeJSON(w, status, v)
		return nil
	}
}

// decode reads a JSON request body into v, refusing unknown fields so a
// misspelled option is an error rather than a silent default.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed request body: %v", err)
	}
	if dec.More() {
		return badRequest("malformed request body: more than one JSON value")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v == nil {
		return
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
