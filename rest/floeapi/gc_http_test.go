package floeapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/floeapi"
)

// TestGCAuthorizationWithTheDefaultPolicy: with floe's default policy, a
// principal outside group admins may neither plan (dry run, last report)
// nor run a collection; an admin may, and gets the report; bad bodies are
// refused with 400 in floe's error model before anything runs.
func TestGCAuthorizationWithTheDefaultPolicy(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	s := securedServer(t, &clock)
	for _, c := range []struct {
		method, path string
		body         any
		action       policy.Action
	}{
		{http.MethodPost, "/gc", floeapi.GCRequest{DryRun: true}, floeapi.ActionGCPlan},
		{http.MethodPost, "/gc", floeapi.GCRequest{}, floeapi.ActionGCRun},
		{http.MethodGet, "/gc/last", nil, floeapi.ActionGCPlan},
	} {
		status, body := call(t, s, "alice", c.method, c.path, c.body, nil)
		var eb floeapi.ErrorBody
		if err := json.Unmarshal([]byte(body), &eb); status != http.StatusForbidden || err != nil ||
			eb.Error.Code != floeapi.CodeForbidden || !strings.Contains(eb.Error.Message, string(c.action)+" requires group admins") {
			t.Fatalf("alice %s %s %+v: %d %s; want 403 naming %s", c.method, c.path, c.body, status, body, c.action)
		}
	}
	if status, body := call(t, s, "carol", http.MethodGet, "/gc/last", nil, nil); status != http.StatusNotFound {
		t.Fatalf("carol GET /gc/last before any run: %d %s", status, body)
	}
	var dry, run, last gc.Report
	if status, body := call(t, s, "carol", http.MethodPost, "/gc", floeapi.GCRequest{DryRun: true}, &dry); status != http.StatusOK ||
		!dry.DryRun || dry.Outcome != gc.OutcomeOK || dry.Principal != "carol" {
		t.Fatalf("carol's dry run: %d %s", status, body)
	}
	if status, body := call(t, s, "carol", http.MethodPost, "/gc", floeapi.GCRequest{Grace: "96h"}, &run); status != http.StatusOK ||
		run.DryRun || run.Outcome != gc.OutcomeOK || run.Grace != "96h0m0s" || run.ID == dry.ID {
		t.Fatalf("carol's run: %d %s", status, body)
	}
	if status, body := call(t, s, "carol", http.MethodGet, "/gc/last", nil, &last); status != http.StatusOK || last.ID != run.ID {
		t.Fatalf("carol GET /gc/last: %d %s; want report %s", status, body, run.ID)
	}
	for _, bad := range []string{
		`{"dryRun": true`,               // not JSON
		`{"dryRun": "yes"}`,             // wrong type
		`{"dry_run": true}`,             // unknown field
		`{"grace": "soon"}`,             // not a duration
		`{"grace": "-1h"}`,              // not positive
		`{"waitSeconds": -1}`,           // negative
		`{"listFiles": -1}`,             // negative
		`{"listFiles": 100001}`,         // above the bound
		`{"dryRun": true} {"x": 1}`,     // two values
		`["dryRun"]`,                    // not an object
		`{"explain": "s3://b/x.json"}`,  // not a list
		`{"waitSeconds": 1.5}`,          // not an integer
		`{"grace": 72}`,                 // a number, not a duration string
		`{"dryRun": true, "dryRun": 1}`, // the last value is of the wrong type
	} {
		status, body := postRaw(t, s, "carol", "/gc", bad)
		var eb floeapi.ErrorBody
		if err := json.Unmarshal([]byte(body), &eb); status != http.StatusBadRequest || err != nil || eb.Error.Code != floeapi.CodeBadRequest {
			t.Errorf("body %s: %d %s; want 400 BAD_REQUEST", bad, status, body)
		}
	}
	// None of the bad bodies started a run.
	if status, body := call(t, s, "carol", http.MethodGet, "/gc/last", nil, &last); status != http.StatusOK || last.ID != run.ID {
		t.Fatalf("GET /gc/last after the bad bodies: %d %s; want report %s", status, body, run.ID)
	}
}

// postRaw posts body as it is (call would re-encode it) as principal who.
func postRaw(t *testing.T, s *testserver.Server, who, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+floeapi.Prefix+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok-"+who)
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
	return resp.StatusCode, string(data)
}

// TestGCRunOutlastingItsWait: a run still marking when waitSeconds pass
// answers 202 with its id and goes on; a second run asked for meanwhile
// answers 409 CONFLICT; once the run ends, GET /gc/last is its report.
// The run is held deterministically: the manifest list of the only table
// is replaced by a named pipe, so the mark's read of it blocks until the
// test writes the real bytes into the pipe.
func TestGCRunOutlastingItsWait(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	manifestList := writeTable(t, s)
	path := strings.TrimPrefix(manifestList, "file://")
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	aside := path + ".aside"
	if err := os.Rename(path, aside); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	released := false
	release := func() {
		if released {
			return
		}
		released = true
		// Opening the pipe to write waits for the mark to open it to
		// read; the real file then goes back in place (the mark's open
		// descriptor still reads the pipe) and the pipe gets its bytes.
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(aside, path); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(content); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(release) // never leave the server's run blocked

	status, body := post(t, s.URL+floeapi.Prefix+"/gc", floeapi.GCRequest{WaitSeconds: 1})
	var started floeapi.GCStarted
	if err := json.Unmarshal(body, &started); status != http.StatusAccepted || err != nil || started.ID == "" || started.State != "running" {
		t.Fatalf("a run outlasting waitSeconds: %d %s; want 202 with its id", status, body)
	}
	for _, req := range []floeapi.GCRequest{{}, {DryRun: true}} {
		status, body = post(t, s.URL+floeapi.Prefix+"/gc", req)
		var eb floeapi.ErrorBody
		if err := json.Unmarshal(body, &eb); status != http.StatusConflict || err != nil || eb.Error.Code != floeapi.CodeConflict ||
			!strings.Contains(eb.Error.Message, "already running") {
			t.Fatalf("a second run %+v while one runs: %d %s; want 409 CONFLICT", req, status, body)
		}
	}
	if status, body = get(t, s.URL+floeapi.Prefix+"/gc/last"); status != http.StatusNotFound {
		t.Fatalf("GET /gc/last while the first run is still going: %d %s", status, body)
	}
	release()
	// The run ends on its own now; wait for its report (the deadline is
	// the test's, not an assertion on how long the run takes).
	var last gc.Report
	for {
		status, body = get(t, s.URL+floeapi.Prefix+"/gc/last")
		if status == http.StatusOK {
			if err := json.Unmarshal(body, &last); err != nil {
				t.Fatal(err)
			}
			break
		}
		if status != http.StatusNotFound {
			t.Fatalf("GET /gc/last: %d %s", status, body)
		}
		if t.Context().Err() != nil {
			t.Fatal("the run never ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if last.ID != started.ID || last.DryRun || last.Outcome != gc.OutcomeOK || last.ManifestListsRead != 1 || last.Live == 0 {
		t.Fatalf("the last report: %s; want run %s, ok, having read the manifest list", body, started.ID)
	}
	// And another run may start now.
	var again gc.Report
	status, body = post(t, s.URL+floeapi.Prefix+"/gc", floeapi.GCRequest{DryRun: true})
	if err := json.Unmarshal(body, &again); status != http.StatusOK || err != nil || again.Outcome != gc.OutcomeOK {
		t.Fatalf("a run after the first ended: %d %s", status, body)
	}
}

// writeTable creates ns.t on main with iceberg-go through s and appends
// one row; it returns the manifest list of its snapshot.
func writeTable(t *testing.T, s *testserver.Server) string {
	t.Helper()
	ctx := t.Context()
	cat, err := rest.NewCatalog(ctx, "floe", s.URL, rest.WithWarehouseLocation("lake"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	if err := cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, catalog.ToIdentifier("ns", "t"), sch)
	if err != nil {
		t.Fatal(err)
	}
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(1)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
	defer at.Release()
	tbl, err = tbl.AppendTable(ctx, at, 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tbl.CurrentSnapshot().ManifestList
}
