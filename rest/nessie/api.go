package nessie

import (
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/rest/httpapi"
	"github.com/floe-catalog/floe/versionstore"
)

// Prefix is where the API is served.
const Prefix = "/api/v2"

// SpecVersion is the Nessie API specification version floe implements. The
// Java client picks the spec 2.2.0 content-key escaping from it.
const SpecVersion = "2.2.0"

// DefaultPrincipal is the committer recorded for every write when
// Deps.Principal is nil, as when the API is served without authentication.
const DefaultPrincipal = "anonymous"

// maxLogPage caps one page of the commit log, as Nessie's
// MAX_COMMIT_LOG_ENTRIES does.
const maxLogPage = 250

// defaultPage is the page size of entries, diffs and references when the
// client gives no max-records.
const defaultPage = 1000

// Deps are what the API needs.
type Deps struct {
	Store  *versionstore.Store
	Logger *slog.Logger
	// Principal names the caller of a request, recorded as committer;
	// nil means DefaultPrincipal for everyone.
	Principal func(*http.Request) string
	// Authenticate, if set, wraps every route: it names the caller or
	// refuses the request through onError, which answers 401 in Nessie's
	// error model. nil serves everybody as DefaultPrincipal.
	Authenticate httpapi.Authenticate
	// Guard asks the policy engine about every read and write; nil allows
	// everything.
	Guard *authz.Guard
	// Classifier, if set, classifies the Iceberg tables a dry-run merge
	// finds changed on both sides (classification.go); nil reports plain key
	// conflicts, as Nessie does.
	Classifier Classifier
	// Merger, if set, performs merges, dry runs included: it resolves
	// Iceberg tables changed on both sides by cherry-picking the source's
	// snapshots where allowed (package mergeengine); nil merges at key
	// level only, as Nessie does.
	Merger Merger
	// Locations is the rule for the metadata location of every
	// ICEBERG_TABLE and ICEBERG_VIEW content a client sends (commits,
	// and merges with resolvedContent): the location must lie inside
	// it, as the locations floe writes do, so that no client can point a
	// table at a file the server can read but the warehouse does not
	// hold. floe serve passes the Iceberg facade's warehouses; nil
	// checks nothing (tests of this package alone).
	Locations Locations
}

// Locations says whether a metadata location is acceptable, returning it
// normalized or an error naming the location and the rule it breaks.
// *icebergtable.Warehouse and icebergtable.Warehouses implement it.
type Locations interface {
	Contains(loc string) (string, error)
}

type api struct {
	store     *versionstore.Store
	logger    *slog.Logger
	principal func(*http.Request) string
	guard     *authz.Guard
	filters   *filterCompiler
	classify  Classifier
	merger    Merger
	locations Locations
}

// Register adds the Nessie API v2 routes under Prefix to r. The router must
// match on the encoded path (gorilla's UseEncodedPath), so that reference
// names and content keys with '/' arrive as one percent-encoded segment.
func Register(r *mux.Router, deps Deps) error {
	if deps.Store == nil {
		return errors.New("nessie API: no version store")
	}
	filters, err := newFilterCompiler()
	if err != nil {
		return err
	}
	a := &api{store: deps.Store, logger: deps.Logger, principal: deps.Principal, guard: deps.Guard, filters: filters,
		classify: deps.Classifier, merger: deps.Merger, locations: deps.Locations}
	if a.logger == nil {
		a.logger = slog.New(slog.DiscardHandler)
	}
	if a.principal == nil {
		a.principal = func(*http.Request) string { return DefaultPrincipal }
	}
	web := httpapi.API{Prefix: Prefix, Encode: a.writeError, Unauthenticated: a.unauthenticated, Authenticate: deps.Authenticate}
	web.Register(r,
		a.route(http.MethodGet, "/config", a.getConfig),
		a.route(http.MethodGet, "/config/repository", a.getRepositoryConfig),
		a.route(http.MethodGet, "/trees", a.listReferences),
		a.route(http.MethodPost, "/trees", a.createReference),
		a.route(http.MethodGet, "/trees/{ref}", a.getReference),
		a.route(http.MethodPut, "/trees/{ref}", a.assignReference),
		a.route(http.MethodDelete, "/trees/{ref}", a.deleteReference),
		a.route(http.MethodGet, "/trees/{ref}/entries", a.getEntries),
		a.route(http.MethodGet, "/trees/{ref}/contents/{key}", a.getContent),
		a.route(http.MethodGet, "/trees/{ref}/contents", a.getMultipleContents),
		a.route(http.MethodPost, "/trees/{ref}/contents", a.postMultipleContents),
		a.route(http.MethodGet, "/trees/{ref}/history", a.getHistory),
		a.route(http.MethodGet, "/trees/{ref}/recent-changes", a.recentChanges),
		a.route(http.MethodGet, "/trees/{from}/diff/{to}", a.getDiff),
		a.route(http.MethodPost, "/trees/{ref}/history/commit", a.commit),
		a.route(http.MethodPost, "/trees/{ref}/history/merge", a.merge),
		a.route(http.MethodPost, "/trees/{ref}/history/transplant", a.transplant),
	)
	// Anything else under the prefix answers in Nessie's error model.
	web.NotFound(r, func(r *http.Request) error {
		return &apiError{status: http.StatusNotFound, code: codeNotFound,
			msg: fmt.Sprintf("no Nessie API v2 endpoint for %s %s", r.Method, r.URL.EscapedPath())}
	})
	return nil
}

// route is an operation whose handler answers a body, sent as JSON with
// status 200, or an error.
func (a *api) route(method, path string, h func(*http.Request) (any, error)) httpapi.Route {
	return httpapi.Route{Method: method, Path: path, Handler: func(w http.ResponseWriter, r *http.Request) error {
		body, err := h(r)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, body)
		return nil
	}}
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body)
}

// pathVar returns a path variable, percent-decoded.
func pathVar(r *http.Request, name string) (string, error) {
	raw := mux.Vars(r)[name]
	v, err := url.PathUnescape(raw)
	if err != nil {
		return "", badRequest("bad percent-encoding in %s %q", name, raw)
	}
	return v, nil
}

// maxDecodedBody bounds a request body after decompression.
const maxDecodedBody = 64 << 20

// decodeBody reads a JSON request body into v. Nessie's Java client
// gzip-compresses request bodies (Content-Encoding: gzip), so gzip and
// deflate bodies are decompressed, up to maxDecodedBody bytes.
func decodeBody(r *http.Request, v any) error {
	var body io.Reader = r.Body
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return badRequest("bad gzip request body: %v", err)
		}
		defer zr.Close()
		body = zr
	case "deflate":
		zr, err := zlib.NewReader(r.Body)
		if err != nil {
			return badRequest("bad deflate request body: %v", err)
		}
		defer zr.Close()
		body = zr
	default:
		return &apiError{status: http.StatusUnsupportedMediaType, code: "UNSUPPORTED_MEDIA_TYPE",
			msg: fmt.Sprintf("unsupported Content-Encoding %q", enc)}
	}
	data, err := io.ReadAll(io.LimitReader(body, maxDecodedBody+1))
	if err != nil {
		return badRequest("cannot read request body: %v", err)
	}
	if len(data) > maxDecodedBody {
		return &apiError{status: http.StatusRequestEntityTooLarge, code: codeBadRequest,
			msg: fmt.Sprintf("request body is larger than %d bytes once decompressed", maxDecodedBody)}
	}
	if len(data) == 0 {
		return badRequest("request body is missing")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return badRequest("malformed JSON request body: %v", err)
	}
	return nil
}

// pageParams reads max-records and page-token; limit is capped at maxLimit.
func pageParams(r *http.Request, def, maxLimit int) (int, string, error) {
	q := r.URL.Query()
	limit := def
	if s := q.Get("max-records"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, "", badRequest("max-records must be a non-negative integer, got %q", s)
		}
		if n > 0 {
			limit = n
		}
	}
	if limit > maxLimit {
		limit = maxLimit
	}
	return limit, q.Get("page-token"), nil
}

// fetchAll reads the fetch option: MINIMAL (default) or ALL.
func fetchAll(r *http.Request) (bool, error) {
	switch f := r.URL.Query().Get("fetch"); f {
	case "", "MINIMAL":
		return false, nil
	case "ALL":
		return true, nil
	default:
		return false, badRequest("fetch must be MINIMAL or ALL, got %q", f)
	}
}

// boolParam reads an optional boolean query parameter.
func boolParam(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, badRequest("%s must be true or false, got %q", name, s)
	}
	return b, nil
}
