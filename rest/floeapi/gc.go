package floeapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/policy"
)

// Actions of garbage collection: a dry run plans, a run deletes.
const (
	ActionGCPlan policy.Action = "admin.gc.plan"
	ActionGCRun  policy.Action = "admin.gc.run"
)

// maxGCWait bounds how long POST /gc waits for its run before answering
// 202: below the server's default write timeout (60 s).
const maxGCWait = 50 * time.Second

// maxListFiles bounds the files a report lists by name.
const maxListFiles = 100000

// GCRequest is POST /gc's body.
type GCRequest struct {
	DryRun bool `json:"dryRun"`
	// Grace overrides the server's grace period (a Go duration, e.g.
	// "72h"); "" keeps it.
	Grace string `json:"grace,omitempty"`
	// Explain lists locations whose verdict the report explains.
	Explain []string `json:"explain,omitempty"`
	// ListFiles is how many deleted files the report names.
	ListFiles int `json:"listFiles,omitempty"`
	// WaitSeconds is how long to wait for the report before answering 202
	// with the run's id (the run goes on); 0 means 50, the most.
	WaitSeconds int `json:"waitSeconds,omitempty"`
}

// GCStarted is the 202 answer of a run still going on.
type GCStarted struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

func (a *API) gcRoutes() []route {
	return []route{
		{http.MethodPost, "/gc", a.runGC},
		{http.MethodGet, "/gc/last", a.lastGC},
	}
}

func (a *API) runGC(r *http.Request) (any, error) {
	var req GCRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	action := ActionGCRun
	if req.DryRun {
		action = ActionGCPlan
	}
	if err := a.guard.Check(r, policy.Input{Action: action}); err != nil {
		return nil, err
	}
	if a.gc == nil {
		return nil, notConfigured("garbage collection")
	}
	ro := gc.RunOptions{DryRun: req.DryRun, Explain: req.Explain, ListFiles: req.ListFiles, Principal: a.principal(r)}
	if req.Grace != "" {
		d, err := time.ParseDuration(req.Grace)
		if err != nil || d <= 0 {
			return nil, badRequest("grace %q: want a positive Go duration such as 72h", req.Grace)
		}
		ro.Grace = d
	}
	if req.ListFiles < 0 || req.ListFiles > maxListFiles {
		return nil, badRequest("listFiles %d: want 0 to %d", req.ListFiles, maxListFiles)
	}
	wait := maxGCWait
	if req.WaitSeconds < 0 {
		return nil, badRequest("waitSeconds %d: want 0 or more", req.WaitSeconds)
	}
	if req.WaitSeconds > 0 && time.Duration(req.WaitSeconds)*time.Second < wait {
		wait = time.Duration(req.WaitSeconds) * time.Second
	}
	// The run is not the request's: a client that goes away does not
	// stop it, and its report is kept (GET /gc/last).
	id, done, err := a.gc.Start(ro)
	if errors.Is(err, gc.ErrRunning) {
		return nil, conflict(nil, "a garbage collection is already running; see GET %s/gc/last when it is done", Prefix)
	}
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case res := <-done:
		if res.Report == nil {
			return nil, res.Err
		}
		return res.Report, nil // a failed run's report says why (outcome, error)
	case <-t.C:
		return &reply{status: http.StatusAccepted, body: GCStarted{ID: id, State: "running"}}, nil
	case <-r.Context().Done():
		return &reply{status: http.StatusAccepted, body: GCStarted{ID: id, State: "running"}}, nil
	}
}

func (a *API) lastGC(r *http.Request) (any, error) {
	if err := a.guard.Check(r, policy.Input{Action: ActionGCPlan}); err != nil {
		return nil, err
	}
	if a.gc == nil {
		return nil, notConfigured("garbage collection")
	}
	rep, err := a.gc.LastReport(r.Context())
	if errors.Is(err, gc.ErrNoReport) {
		return nil, notFound("no garbage collection has run yet")
	}
	return rep, err
}
