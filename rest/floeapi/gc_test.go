package floeapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/rest/floeapi"
)

// actions records what the API asked the policy, and refuses those in deny.
type actions struct {
	mu   sync.Mutex
	seen []policy.Action
	deny policy.Action
}

func (a *actions) Decide(_ context.Context, in policy.Input) (policy.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, in.Action)
	if in.Action == a.deny {
		return policy.Decision{Allow: false, Reasons: []string{"no gc for you"}}, nil
	}
	return policy.Decision{Allow: true}, nil
}

func post(t *testing.T, url string, body any) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes()
}

func TestGCOperations(t *testing.T) {
	pol := &actions{}
	s := testserver.Start(t, testserver.Options{Floe: func(d *floeapi.Deps) {
		d.Guard = authz.NewGuard(pol, "floe", func(*http.Request) policy.Principal { return policy.Principal{ID: "ops"} }, nil)
	}})
	if status, body := get(t, s.URL+floeapi.Prefix+"/gc/last"); status != http.StatusNotFound {
		t.Fatalf("GET /gc/last before any run: %d %s", status, body)
	}
	status, body := post(t, s.URL+floeapi.Prefix+"/gc", floeapi.GCRequest{DryRun: true})
	var rep gc.Report
	if err := json.Unmarshal(body, &rep); status != http.StatusOK || err != nil || !rep.DryRun || rep.Outcome != gc.OutcomeOK {
		t.Fatalf("dry run: %d %s", status, body)
	}
	status, body = get(t, s.URL+floeapi.Prefix+"/gc/last")
	var last gc.Report
	if err := json.Unmarshal(body, &last); status != http.StatusOK || err != nil || last.ID != rep.ID {
		t.Fatalf("GET /gc/last: %d %s; want report %s", status, body, rep.ID)
	}
	if _, body := get(t, s.URL+"/metrics"); !bytes.Contains(body, []byte(`floe_gc_runs_total{dry_run="true",outcome="ok"} 1`)) ||
		!bytes.Contains(body, []byte("floe_gc_duration_seconds_count 1")) {
		t.Fatalf("/metrics after one dry run lacks the gc series:\n%s", body)
	}
	if status, body = post(t, s.URL+floeapi.Prefix+"/gc", map[string]any{"dryRun": true, "grace": "soon"}); status != http.StatusBadRequest {
		t.Fatalf("bad grace: %d %s", status, body)
	}
	if status, body = post(t, s.URL+floeapi.Prefix+"/gc", map[string]any{"dry_run": true}); status != http.StatusBadRequest {
		t.Fatalf("misspelled option: %d %s", status, body)
	}
	pol.mu.Lock()
	pol.deny = floeapi.ActionGCRun
	pol.mu.Unlock()
	status, body = post(t, s.URL+floeapi.Prefix+"/gc", floeapi.GCRequest{})
	var eb floeapi.ErrorBody
	if err := json.Unmarshal(body, &eb); status != http.StatusForbidden || err != nil || eb.Error.Code != floeapi.CodeForbidden {
		t.Fatalf("denied run: %d %s", status, body)
	}
	pol.mu.Lock()
	defer pol.mu.Unlock()
	if !slices.Contains(pol.seen, floeapi.ActionGCPlan) || !slices.Contains(pol.seen, floeapi.ActionGCRun) {
		t.Fatalf("actions asked: %v", pol.seen)
	}
}
