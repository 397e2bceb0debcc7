package mergequeue_test

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/conformance/testkit/lakescenario"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/conformance/testkit/unwritable"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/server/assemble"
)

// faultLake is a server whose queue is stepped by hand on a clock the
// test moves, with a table both main and ingest/a appended to, so that
// the request's merge must write the table's new metadata.
type faultLake struct {
	srv   *testserver.Server
	lake  *lakescenario.Lake
	clock *testClock
	id    string
}

func newFaultLake(t *testing.T) *faultLake {
	f := &faultLake{clock: &testClock{}}
	pass := mergequeue.ValidatorFunc(func(context.Context, mergequeue.Candidate) ([]mergequeue.CheckResult, error) { return nil, nil })
	f.srv = testserver.Start(t, testserver.Options{MergeQueue: func(c *assemble.MergeQueue) { c.Manual = true },
		Deps: func(d *assemble.Deps) { d.MergeValidator, d.MergeQueueNow = pass, f.clock.now }})
	f.lake = lakescenario.New(f.srv)
	f.lake.CreateTable(t, cmd("table table=ns.t"), nil)
	f.lake.Branch(t, cmd("branch ingest/a"))
	for _, l := range []string{"append on=ingest/a table=ns.t day=2026-08-20 rows=2", "append table=ns.t day=2026-08-21 rows=1"} {
		td := cmd(l)
		f.lake.Append(t, td, f.lake.Load(t, td), nil)
	}
	r, _, err := f.srv.Queue.Submit(t.Context(), mergequeue.SubmitRequest{Source: "ingest/a", Target: "main", Principal: "etl"})
	if err != nil {
		t.Fatal(err)
	}
	f.id = r.ID
	return f
}

// step processes main's queue once, then moves the clock past the
// request's backoff.
func (f *faultLake) step(t *testing.T) *mergequeue.Request {
	t.Helper()
	if _, err := f.srv.Queue.Process(t.Context(), "main"); err != nil {
		t.Fatalf("process: %v", err)
	}
	r, err := f.srv.Queue.Get(f.id)
	if err != nil {
		t.Fatal(err)
	}
	if r.RetryAt != nil {
		f.clock.mu.Lock()
		f.clock.offset += mergequeue.MaxFaultBackoff
		f.clock.mu.Unlock()
	}
	return r
}

// TestQueueRetriesAStorageFault: a request whose merge cannot write the
// warehouse is not failed as refused: it stays queued, counts its faults
// (faults, retryAt, floe_queue_fault_retries_total), is not taken again
// before its backoff has passed, writes nothing meanwhile, and lands
// with both sides' rows once the warehouse takes files again.
func TestQueueRetriesAStorageFault(t *testing.T) {
	f := newFaultLake(t)
	head, _ := f.srv.Store.GetRef("main")
	before := files(t, f.srv.WarehouseDir)
	restore := unwritable.Make(t, f.srv.WarehouseDir)

	if _, err := f.srv.Queue.Process(t.Context(), "main"); err != nil {
		t.Fatalf("process: %v", err)
	}
	r, _ := f.srv.Queue.Get(f.id)
	if r.State != mergequeue.StateQueued || r.Faults != 1 || r.RetryAt == nil || r.ReasonCode != "" ||
		!strings.Contains(r.Reason, "storage fault 1 of") || !strings.Contains(r.Reason, "could not be read or written") {
		t.Fatalf("after a fault: state %s (%s: %s), faults %d, retry at %v", r.State, r.ReasonCode, r.Reason, r.Faults, r.RetryAt)
	}
	// Within the backoff the worker leaves it alone.
	if progressed, err := f.srv.Queue.Process(t.Context(), "main"); err != nil || progressed {
		t.Fatalf("process within the backoff: progressed %v, %v", progressed, err)
	}
	f.clock.mu.Lock()
	f.clock.offset += mergequeue.MaxFaultBackoff
	f.clock.mu.Unlock()
	if r = f.step(t); r.State != mergequeue.StateQueued || r.Faults != 2 {
		t.Fatalf("after a second fault: state %s (%s), faults %d", r.State, r.Reason, r.Faults)
	}
	if got := faultMetric(t, f.srv.URL); got != 2 {
		t.Fatalf("floe_queue_fault_retries_total{target=\"main\"} = %v, want 2", got)
	}
	if now, _ := f.srv.Store.GetRef("main"); now.Head != head.Head {
		t.Fatalf("main moved while the warehouse was unwritable")
	}
	if after := files(t, f.srv.WarehouseDir); !slices.Equal(before, after) {
		t.Fatalf("the faulted attempts left files:\nbefore %v\nafter  %v", before, after)
	}

	restore()
	if r = f.step(t); r.State != mergequeue.StateMerged || r.Faults != 2 || r.RetryAt != nil {
		t.Fatalf("once writable: state %s (%s: %s), faults %d, retry at %v", r.State, r.ReasonCode, r.Reason, r.Faults, r.RetryAt)
	}
	at, err := f.lake.Load(t, cmd("rows table=ns.t")).Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if got, want := lakescenario.RowsByDay(t, cmd("rows table=ns.t"), at), "2026-08-20: 1 2\n2026-08-21: 3\n"; got != want {
		t.Fatalf("rows:\n%s\nwant:\n%s", got, want)
	}
}

// TestQueueFaultRetriesAreBounded: a warehouse that stays unwritable
// fails the request at the queue's bound, with reason code fault (not
// refused), after backoffs that double up to MaxFaultBackoff.
func TestQueueFaultRetriesAreBounded(t *testing.T) {
	f := newFaultLake(t)
	unwritable.Make(t, f.srv.WarehouseDir)
	var waits []time.Duration
	var r *mergequeue.Request
	for n := 1; n <= mergequeue.DefaultFaultRetries; n++ {
		taken := f.clock.now()
		if r = f.step(t); r.Faults != n {
			t.Fatalf("attempt %d: state %s (%s), faults %d", n, r.State, r.Reason, r.Faults)
		}
		if r.RetryAt != nil {
			waits = append(waits, r.RetryAt.Sub(taken).Round(time.Second))
		}
	}
	if r.State != mergequeue.StateFailed || r.ReasonCode != "fault" || !strings.Contains(r.Reason, "no more retries") {
		t.Fatalf("after %d faults: state %s (%s: %s)", mergequeue.DefaultFaultRetries, r.State, r.ReasonCode, r.Reason)
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, 64 * time.Second,
		128 * time.Second, 256 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	if !slices.Equal(waits, want) {
		t.Fatalf("backoffs %v, want %v", waits, want)
	}
}

// cmd parses one line of the scenario language lakescenario reads.
func cmd(line string) *datadriven.TestData {
	fields := strings.Fields(line)
	td := &datadriven.TestData{Pos: "fault_test", Cmd: fields[0]}
	for _, a := range fields[1:] {
		k, v, _ := strings.Cut(a, "=")
		arg := datadriven.CmdArg{Key: k}
		if v != "" {
			arg.Vals = []string{v}
		}
		td.CmdArgs = append(td.CmdArgs, arg)
	}
	return td
}

// files lists the files under dir, relative to it, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

var faultLine = regexp.MustCompile(`(?m)^floe_queue_fault_retries_total\{target="main"\} (\S+)$`)

func faultMetric(t *testing.T, base string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := faultLine.FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}
