package httpapi

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"
)

// Handler answers one request. It writes a successful answer itself and
// returns nil, or writes nothing and returns the error its API's
// ErrorEncoder answers with.
type Handler func(w http.ResponseWriter, r *http.Request) error

// ErrorEncoder answers a request with err in an API's error model: the
// status, headers and body the API's clients expect for it.
type ErrorEncoder func(w http.ResponseWriter, r *http.Request, err error)

// Authenticate is the process's authentication: it wraps a handler so that
// it runs only for a caller whose credentials are accepted (naming the
// principal in the request's context), and refuses anybody else through
// onError. policy/authn's Authenticator.Middleware is one.
type Authenticate func(onError func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler

// Route is one operation of an API.
type Route struct {
	// Method is the HTTP method, e.g. http.MethodGet.
	Method string
	// Path is a gorilla/mux path template below the API's Prefix, e.g.
	// "/trees/{ref}"; a variable matches one path segment.
	Path    string
	Handler Handler
	// Wrap, if set, wraps the handler inside authentication: it sees the
	// principal (the Iceberg facade's Idempotency-Key replay does).
	Wrap func(http.Handler) http.Handler
	// Public routes are served without authentication.
	Public bool
}

// API is one HTTP API's conventions: where it is served, how it answers an
// error and how it refuses a request without valid credentials.
type API struct {
	// Prefix is prepended to every Route.Path; "" for none.
	Prefix string
	// Encode answers a handler's error; required.
	Encode ErrorEncoder
	// Unauthenticated answers a request Authenticate refused, in the
	// API's error model; nil uses Encode.
	Unauthenticated ErrorEncoder
	// Authenticate wraps every route that is not Public; nil serves
	// everybody without asking who they are.
	Authenticate Authenticate
}

// Handler adapts h: an error it returns is answered through a.Encode.
func (a *API) Handler(h Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			a.Encode(w, r, err)
		}
	})
}

// Authenticated wraps h in the API's authentication, if it has one.
func (a *API) Authenticated(h http.Handler) http.Handler {
	if a.Authenticate == nil {
		return h
	}
	onError := a.Unauthenticated
	if onError == nil {
		onError = a.Encode
	}
	return a.Authenticate(onError)(h)
}

// Register adds routes to r in their order, each matched on its path and
// method and served behind the API's authentication unless Public. r must
// match on encoded paths (mux.Router.UseEncodedPath), as floe's server
// router does, so that a name with '/' arrives as one percent-encoded
// segment.
func (a *API) Register(r *mux.Router, routes ...Route) {
	for _, rt := range routes {
		h := a.Handler(rt.Handler)
		if rt.Wrap != nil {
			h = rt.Wrap(h)
		}
		if !rt.Public {
			h = a.Authenticated(h)
		}
		template := a.Prefix + rt.Path
		route := r.NewRoute()
		if m := literalsMatch(template); m != nil {
			route = route.MatcherFunc(m)
		}
		route.Path(template).Methods(rt.Method).Handler(h)
	}
}

// NotFound answers every request under Prefix + "/" that no route
// registered before it matched (an unknown path, or a known one with
// another method) with the error notFound returns, through Encode and
// without authentication. Register it after the API's routes.
func (a *API) NotFound(r *mux.Router, notFound func(*http.Request) error) {
	r.PathPrefix(a.Prefix + "/").Handler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		a.Encode(w, req, notFound(req))
	}))
}

// literalsMatch is a route's first matcher, for a template made of
// literal segments and "{name}" variables (nil for any other): it rejects a
// path with another number of segments than the template, or another
// literal segment, without running the route's regular expression. mux
// tries a router's routes one after the other, and before this every
// request ran the regular expression of each route registered ahead of its
// own (an Iceberg commit was the seventeenth route tried, every Nessie
// request came after all thirty Iceberg routes).
//
// It accepts exactly the paths the template's regular expression accepts
// (a "{name}" variable matches one non-empty segment, a literal itself), so
// the route matches as it did without it: mux clears an earlier route's
// method mismatch when a matcher of a later route accepts, so a matcher
// accepting more than the path would turn a 405 into a 404.
func literalsMatch(template string) mux.MatcherFunc {
	segments := strings.Split(template, "/")
	variable := make([]bool, len(segments))
	for i, s := range segments {
		switch {
		case !strings.ContainsAny(s, "{}%"):
		case len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}' && !strings.ContainsAny(s[1:len(s)-1], "{}:"):
			variable[i] = true
		default:
			return nil // a pattern of its own, text around a variable, an escape
		}
	}
	return func(req *http.Request, _ *mux.RouteMatch) bool {
		// EscapedPath, which mux matches against, without its cost when
		// nothing in the path was escaped: Path then has the same
		// segments, and a literal without '%' equals a segment of one
		// exactly when it equals that segment of the other.
		path := req.URL.Path
		if req.URL.RawPath != "" {
			path = req.URL.EscapedPath()
		}
		last := len(segments) - 1
		for i, want := range segments {
			seg := path
			if i < last {
				j := strings.IndexByte(path, '/')
				if j < 0 {
					return false // fewer segments than the template
				}
				seg, path = path[:j], path[j+1:]
			} else if strings.IndexByte(path, '/') >= 0 {
				return false // more segments than the template
			}
			if variable[i] {
				if seg == "" {
					return false
				}
			} else if seg != want {
				return false
			}
		}
		return true
	}
}
