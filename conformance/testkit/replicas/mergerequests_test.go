package replicas

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore"
)

// TestMergeRequestsOnEveryReplica: a merge request submitted to one
// replica is found, listed, cancelled and read back on every other one at
// once, from the durable records, and each answers its current state,
// not what the replica last held in memory. The queues poll for other
// replicas' writes only once an hour here, so nothing but a read of the
// records can make another replica answer.
func TestMergeRequestsOnEveryReplica(t *testing.T) {
	c := pgtest.Need(t, cluster)
	dsn, err := c.Schema(t.Context(), pgtest.SchemaName(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	var rs []*testserver.Server
	for range 3 {
		rs = append(rs, testserver.Start(t, testserver.Options{Store: dsn,
			// Manual: no worker lands the request meanwhile, so its
			// state changes only by the calls below.
			MergeQueue: func(q *assemble.MergeQueue) { q.Manual, q.Poll = true, time.Hour }}))
	}
	ctx := t.Context()
	s := rs[0].Store
	main, err := s.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: "ingest/a", Type: versionstore.Branch, Target: main.Head}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, versionstore.CommitRequest{Branch: "ingest/a", Expected: main.Head, Operations: []versionstore.Operation{
		{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"db"}, Content: &versionstore.Content{Type: versionstore.Namespace}}}}); err != nil {
		t.Fatal(err)
	}

	var mr mergequeue.Request
	if status, body := floeCall(t, rs[0], http.MethodPost, "/merge-requests", map[string]any{"source": "ingest/a", "target": "main"}, &mr); status != http.StatusCreated {
		t.Fatalf("submit on replica 0: %d %s", status, body)
	}
	for i, r := range rs {
		var got mergequeue.Request
		if status, body := floeCall(t, r, http.MethodGet, "/merge-requests/"+mr.ID, nil, &got); status != http.StatusOK || got.ID != mr.ID || got.State != mergequeue.StateQueued {
			t.Errorf("GET on replica %d: %d %s; want %s queued", i, status, body, mr.ID)
		}
		var list floeapi.MergeRequestList
		status, body := floeCall(t, r, http.MethodGet, "/merge-requests?target=main", nil, &list)
		if status != http.StatusOK || !slices.ContainsFunc(list.Requests, func(x *mergequeue.Request) bool { return x.ID == mr.ID }) {
			t.Errorf("list on replica %d: %d %s; want %s in it", i, status, body, mr.ID)
		}
	}

	var cancelled mergequeue.Request
	if status, body := floeCall(t, rs[2], http.MethodPost, "/merge-requests/"+mr.ID+"/cancel", map[string]any{"reason": "not today"}, &cancelled); status != http.StatusOK || cancelled.State != mergequeue.StateCancelled {
		t.Fatalf("cancel on replica 2: %d %s", status, body)
	}
	// Replicas 0 and 1 hold the request as queued in memory (0 took it,
	// 1 may have kept what it read): each must answer the record's state.
	for i, r := range rs {
		// The report first: the list below refreshes the replica.
		var rep struct {
			States map[string]int `json:"states"`
		}
		if status, body := floeCall(t, r, http.MethodGet, "/merge-requests/report?since=1h", nil, &rep); status != http.StatusOK || rep.States["cancelled"] != 1 || rep.States["queued"] != 0 {
			t.Errorf("report on replica %d: %d %s; want the request cancelled", i, status, body)
		}
		var got mergequeue.Request
		if status, body := floeCall(t, r, http.MethodGet, "/merge-requests/"+mr.ID, nil, &got); status != http.StatusOK || got.State != mergequeue.StateCancelled {
			t.Errorf("GET on replica %d after the cancel: %d %s; want cancelled", i, status, body)
		}
		var list floeapi.MergeRequestList
		if status, body := floeCall(t, r, http.MethodGet, "/merge-requests?state=cancelled", nil, &list); status != http.StatusOK || len(list.Requests) != 1 || list.Requests[0].ID != mr.ID {
			t.Errorf("list of cancelled requests on replica %d: %d %s; want %s", i, status, body, mr.ID)
		}
	}
	if status, body := floeCall(t, rs[1], http.MethodGet, "/merge-requests/mr-nope", nil, nil); status != http.StatusNotFound {
		t.Errorf("GET of an unknown request: %d %s; want 404", status, body)
	}
}

// floeCall sends one request to floe's API of r and decodes a 2xx answer
// into out.
func floeCall(t *testing.T, r *testserver.Server, method, path string, body, out any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, r.URL+floeapi.Prefix+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode/100 == 2 && out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
	return resp.StatusCode, string(data)
}
