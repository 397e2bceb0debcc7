package floeapi

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/housekeeping/maintenance"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/versionstore"
)

// ActionMaintenanceLock is the policy action of acquiring, renewing and
// releasing a table's maintenance lock: asked on the lock's branch, with
// the table in contents (change "update"), since holding the lock is the
// right to rewrite the table. Status, lists and table statistics are reads.
const ActionMaintenanceLock policy.Action = "maintenance.lock"

// defaultBranch is the branch of a request that names none.
const defaultBranch = "main"

func (a *API) maintenanceRoutes() []route {
	return []route{
		{http.MethodPost, "/maintenance/locks", a.acquireLock},
		{http.MethodGet, "/maintenance/locks", a.listLocks},
		{http.MethodGet, "/maintenance/locks/{lock}", a.getLock},
		{http.MethodPut, "/maintenance/locks/{lock}", a.renewLock},
		{http.MethodDelete, "/maintenance/locks/{lock}", a.releaseLock},
		{http.MethodGet, "/tables/stats", a.getTableStats},
	}
}

// AcquireLockRequest is the body of POST /maintenance/locks.
type AcquireLockRequest struct {
	// Branch is the catalog branch; "" is main.
	Branch string `json:"branch,omitempty"`
	// Table is the table's namespace elements and name.
	Table []string `json:"table"`
	// Job names the maintenance job, for whoever finds the lock held.
	Job string `json:"job"`
	// TTL is the lease's time to live, a Go duration ("30m"); "" is 30m.
	TTL string `json:"ttl,omitempty"`
}

// RenewLockRequest is the body of PUT /maintenance/locks/{lock}.
type RenewLockRequest struct {
	TTL string `json:"ttl,omitempty"`
}

// LockList is the answer of GET /maintenance/locks.
type LockList struct {
	Locks []maintenance.Lock `json:"locks"`
}

func (a *API) locks() (*maintenance.Service, error) {
	if a.maintenance == nil {
		return nil, notConfigured("the maintenance lock")
	}
	return a.maintenance, nil
}

func parseTTL(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, badRequest("invalid ttl %q: want a positive duration such as 30m", s)
	}
	return d, nil
}

// authorizeLock asks whether the caller may hold t's lock.
func (a *API) authorizeLock(r *http.Request, t maintenance.Target) error {
	return a.guard.Check(r, policy.Input{
		Action:   ActionMaintenanceLock,
		Ref:      authz.Branch(t.Branch),
		Contents: []policy.Content{{Key: []string(t.Table), Type: policy.TypeTable, Change: policy.ChangeUpdate}},
	})
}

func (a *API) acquireLock(r *http.Request) (any, error) {
	svc, err := a.locks()
	if err != nil {
		return nil, err
	}
	var req AcquireLockRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	ttl, err := parseTTL(req.TTL)
	if err != nil {
		return nil, err
	}
	t := maintenance.Target{Branch: req.Branch, Table: req.Table}
	if t.Branch == "" {
		t.Branch = defaultBranch
	}
	if err := a.authorizeLock(r, t); err != nil {
		return nil, err
	}
	lease, err := svc.Acquire(r.Context(), t, maintenance.Holder{Principal: a.principal(r), Job: req.Job}, ttl)
	if err != nil {
		return nil, lockError(err)
	}
	return &reply{status: http.StatusCreated, body: lease}, nil
}

// lockByID reads the live lease {lock} names and asks whether the caller
// may hold it.
func (a *API) lockByID(r *http.Request) (*maintenance.Service, maintenance.Target, error) {
	svc, err := a.locks()
	if err != nil {
		return nil, maintenance.Target{}, err
	}
	l, err := svc.StatusByID(r.Context(), mux.Vars(r)["lock"])
	if err != nil {
		return nil, maintenance.Target{}, lockError(err)
	}
	t := maintenance.Target{Branch: l.Branch, Table: l.Table}
	return svc, t, a.authorizeLock(r, t)
}

func leaseToken(r *http.Request) (string, error) {
	tok := strings.TrimSpace(r.Header.Get(maintenance.TokenHeader))
	if tok == "" {
		return "", badRequest("the lease's token is required in the %s header", maintenance.TokenHeader)
	}
	return tok, nil
}

func (a *API) renewLock(r *http.Request) (any, error) {
	svc, t, err := a.lockByID(r)
	if err != nil {
		return nil, err
	}
	tok, err := leaseToken(r)
	if err != nil {
		return nil, err
	}
	var req RenewLockRequest
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return nil, err
		}
	}
	ttl, err := parseTTL(req.TTL)
	if err != nil {
		return nil, err
	}
	l, err := svc.Renew(r.Context(), t, tok, ttl)
	if err != nil {
		return nil, lockError(err)
	}
	return l, nil
}

func (a *API) releaseLock(r *http.Request) (any, error) {
	svc, t, err := a.lockByID(r)
	if err != nil {
		return nil, err
	}
	tok, err := leaseToken(r)
	if err != nil {
		return nil, err
	}
	if err := svc.Release(r.Context(), t, tok); err != nil {
		return nil, lockError(err)
	}
	return &reply{status: http.StatusNoContent}, nil
}

func (a *API) getLock(r *http.Request) (any, error) {
	svc, err := a.locks()
	if err != nil {
		return nil, err
	}
	l, err := svc.StatusByID(r.Context(), mux.Vars(r)["lock"])
	if err != nil {
		return nil, lockError(err)
	}
	if err := a.guard.Read(r, authz.Branch(l.Branch)); err != nil {
		return nil, err
	}
	return l, nil
}

// listLocks lists the live leases, of ?branch= if given and of ?table= if
// given, leaving out those on branches the caller may not read.
func (a *API) listLocks(r *http.Request) (any, error) {
	svc, err := a.locks()
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	branch := q.Get("branch")
	var table []string
	if s := q.Get("table"); s != "" {
		if table, err = parseTable(s); err != nil {
			return nil, err
		}
		if branch == "" {
			branch = defaultBranch
		}
	}
	if branch != "" {
		if err := a.guard.Read(r, authz.Branch(branch)); err != nil {
			return nil, err
		}
	}
	all, err := svc.List(r.Context(), branch)
	if err != nil {
		return nil, lockError(err)
	}
	out := LockList{Locks: []maintenance.Lock{}}
	readable := map[string]bool{}
	for _, l := range all {
		if table != nil && versionstore.ContentKey(l.Table).String() != versionstore.ContentKey(table).String() {
			continue
		}
		ok, seen := readable[l.Branch]
		if !seen {
			err := a.guard.Read(r, authz.Branch(l.Branch))
			if err != nil && !errors.As(err, new(*authz.DeniedError)) {
				return nil, err
			}
			ok = err == nil
			readable[l.Branch] = ok
		}
		if ok {
			out.Locks = append(out.Locks, l)
		}
	}
	return out, nil
}

func (a *API) getTableStats(r *http.Request) (any, error) {
	if a.tableStats == nil {
		return nil, notConfigured("table statistics")
	}
	q := r.URL.Query()
	if q.Get("table") == "" {
		return nil, badRequest("query parameter table is required (namespace and name, dot-separated)")
	}
	table, err := parseTable(q.Get("table"))
	if err != nil {
		return nil, err
	}
	t := maintenance.Target{Branch: q.Get("branch"), Table: table}
	if t.Branch == "" {
		t.Branch = defaultBranch
	}
	var window time.Duration
	if s := q.Get("since"); s != "" {
		if window, err = time.ParseDuration(s); err != nil || window <= 0 {
			return nil, badRequest("invalid since %q: want a positive duration such as 24h", s)
		}
	}
	if err := a.guard.Read(r, authz.Branch(t.Branch)); err != nil {
		return nil, err
	}
	st, err := a.tableStats.Table(r.Context(), t, window)
	if err != nil {
		return nil, lockError(err)
	}
	return st, nil
}

// parseTable reads a table identifier from a query parameter: elements
// separated by the unit separator (0x1F, as Iceberg REST separates
// namespace levels) if it holds one, else by dots.
func parseTable(s string) ([]string, error) {
	sep := "."
	if strings.Contains(s, "\x1f") {
		sep = "\x1f"
	}
	parts := strings.Split(s, sep)
	if len(parts) < 2 || strings.Contains(s, sep+sep) || strings.HasPrefix(s, sep) || strings.HasSuffix(s, sep) {
		return nil, badRequest("invalid table %q: want namespace and name, such as sales.orders", s)
	}
	return parts, nil
}

// lockError maps the maintenance service's errors onto the API's model.
func lockError(err error) error {
	if he, ok := errors.AsType[*maintenance.HeldError](err); ok {
		return conflict(he.Lock, "%s", he.Error())
	}
	switch {
	case errors.Is(err, maintenance.ErrNotHeld), errors.Is(err, maintenance.ErrNotATable):
		return &apiError{status: http.StatusNotFound, code: CodeNotFound, msg: err.Error(), err: err}
	case errors.Is(err, maintenance.ErrInvalid):
		return &apiError{status: http.StatusBadRequest, code: CodeBadRequest, msg: err.Error(), err: err}
	}
	return err
}
