package floeclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/floe-catalog/floe/internal/apidoc"
)

// GCRequest asks for a garbage collection (POST /gc).
type GCRequest struct {
	DryRun      bool     `json:"dryRun"`
	Grace       string   `json:"grace,omitempty"`
	Explain     []string `json:"explain,omitempty"`
	ListFiles   int      `json:"listFiles,omitempty"`
	WaitSeconds int      `json:"waitSeconds,omitempty"`
}

// gcPoll is how often GC asks for the report of a run still going on.
const gcPoll = 2 * time.Second

// GC runs a garbage collection (or plans it, for a dry run) and returns
// its report. A run that outlasts one request is waited for: GC polls GET
// /gc/last until the run's report is there or ctx ends.
func (c *Client) GC(ctx context.Context, req GCRequest) (*apidoc.GCReport, error) {
	if req.WaitSeconds == 0 {
		// Answer well within this client's own request timeout.
		req.WaitSeconds = max(1, int((c.http.Timeout-5*time.Second)/time.Second))
	}
	// 200 is the report; 202 {"id", "state": "running"} a run going on.
	var answer struct {
		apidoc.GCReport
		State string `json:"state"`
	}
	if err := c.Do(ctx, http.MethodPost, "/gc", nil, req, &answer); err != nil {
		return nil, err
	}
	if answer.State != "running" {
		return &answer.GCReport, nil
	}
	started := answer.GCReport
	t := time.NewTicker(gcPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for gc run %s (it goes on; see floe gc report): %w", started.ID, ctx.Err())
		case <-t.C:
		}
		rep, err := c.LastGC(ctx)
		if ae, ok := errors.AsType[*Error](err); ok && ae.Status == http.StatusNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		if rep.ID == started.ID {
			return rep, nil
		}
	}
}

// LastGC returns the last garbage collection's report (GET /gc/last).
func (c *Client) LastGC(ctx context.Context) (*apidoc.GCReport, error) {
	var rep apidoc.GCReport
	if err := c.Do(ctx, http.MethodGet, "/gc/last", nil, nil, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}
