package mergequeue_test

// The scenario files in testdata/ state what the merge queue does, as
// stories over real Iceberg tables: iceberg-go writes them through a real
// floe server on catalog branches (lake@BRANCH), requests are submitted
// to the server's queue, and the test steps the target's worker one batch
// at a time (the queue runs with assemble.MergeQueue.Manual). The
// validator is a real one that reads each candidate through
// lake@<candidate hash>. testdata/README.md describes the language.
//
// Rewrite the expected outputs after a deliberate change of behavior with
//
//	go test -run TestScenarios ./merge/mergequeue/ -rewrite

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/conformance/testkit/lakescenario"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/internal/nessieclient"
	"github.com/floe-catalog/floe/merge/mergecheck"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore"
)

func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".json") {
			return // the README, and the stored records of TestRecordFormat
		}
		d := newScenario(t)
		datadriven.RunTest(t, path, d.run)
	})
}

// testSchema is every scenario table's schema, partitioned by day(ts).
var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp, Required: true},
)

type scenario struct {
	srv    *testserver.Server
	cats   *lakescenario.Catalogs
	nextID int64
	// alias → request id, and back.
	ids     map[string]string
	aliases map[string]string
	clock   *testClock
	val     *parityValidator
}

// testClock is the queue's clock: real time plus what `wait` added.
type testClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// parityValidator is the scenarios' check "parity": it fails a candidate
// on which one of the tables it watches has an odd number of snapshots,
// read through the candidate's own read-only view, lake@<hash>. Calls
// records every candidate it judged, to show results are never reused.
type parityValidator struct {
	url   string
	store *versionstore.Store
	mu    sync.Mutex
	watch map[string]bool
	calls []string
	// bypass: request ids whose first validation commits to main
	// directly, as an admin bypassing the queue would, while the
	// candidate is being validated.
	bypass map[string]bool
	// cancel: request ids cancelled by their submitter during their
	// first validation.
	cancel map[string]bool
	queue  *mergequeue.Queue
	// builtin, when set, runs mergecheck's built-in checks (lineage,
	// schema, row counts, nulls) on every candidate, as floe serve's
	// queue does, before parity.
	builtin *mergecheck.Validator
}

func (v *parityValidator) Validate(ctx context.Context, c mergequeue.Candidate) ([]mergequeue.CheckResult, error) {
	v.mu.Lock()
	watch := slices.Collect(func(yield func(string) bool) {
		for k := range v.watch {
			if !yield(k) {
				return
			}
		}
	})
	v.calls = append(v.calls, c.RequestID+"@"+c.Commit.String())
	bypass := v.bypass[c.RequestID]
	delete(v.bypass, c.RequestID)
	cancel := v.cancel[c.RequestID]
	delete(v.cancel, c.RequestID)
	builtin := v.builtin
	v.mu.Unlock()
	var out []mergequeue.CheckResult
	if builtin != nil {
		res, err := builtin.Validate(ctx, mergecheck.Candidate{
			RequestID: c.RequestID, Target: c.Target, TargetHead: c.TargetHead, Commit: c.Commit,
			SourceRef: c.SourceRef, SourceHash: c.SourceHash, Principal: c.Principal,
			RequiredChecks: c.RequiredChecks, AllowStructural: c.Approved,
		})
		if err != nil {
			return nil, err
		}
		for _, r := range res {
			out = append(out, mergequeue.CheckResult{Name: r.Name, Passed: r.Passed, Reason: r.Reason})
		}
	}
	if cancel {
		if _, err := v.queue.Cancel(ctx, c.RequestID, c.Principal, "cancelled while validated"); err != nil {
			return nil, err
		}
	}
	if bypass {
		head, err := v.store.GetRef("main")
		if err != nil {
			return nil, err
		}
		ns := &versionstore.Content{Type: versionstore.Namespace}
		_, err = v.store.Commit(ctx, versionstore.CommitRequest{Branch: "main", Expected: head.Head, Committer: "admin",
			Meta:       versionstore.CommitMeta{Message: "direct commit"},
			Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"direct_" + c.RequestID[3:9]}, Content: ns}}})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(watch)
	if len(watch) == 0 {
		return out, nil
	}
	cat, err := rest.NewCatalog(ctx, "floe", v.url, rest.WithWarehouseLocation("lake@"+c.Commit.String()))
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	res := mergequeue.CheckResult{Name: "parity", Passed: true}
	var odd []string
	for _, name := range watch {
		tbl, err := cat.LoadTable(ctx, ident(name))
		if err != nil {
			continue // not on this candidate
		}
		if n := len(tbl.Metadata().Snapshots()); n%2 == 1 {
			odd = append(odd, fmt.Sprintf("%s has %d snapshots", name, n))
		}
	}
	if len(odd) > 0 {
		res.Passed, res.Reason = false, strings.Join(odd, "; ")
	}
	return append(out, res), nil
}

func newScenario(t *testing.T) *scenario {
	d := &scenario{ids: map[string]string{}, aliases: map[string]string{}, clock: &testClock{}}
	d.val = &parityValidator{watch: map[string]bool{}, bypass: map[string]bool{}, cancel: map[string]bool{}}
	rules := mergequeue.DefaultRules()
	rules.Protected = []string{"main"}
	d.srv = testserver.Start(t, testserver.Options{MergeQueue: func(c *assemble.MergeQueue) { c.Manual, c.Rules = true, &rules },
		Deps: func(deps *assemble.Deps) { deps.MergeValidator, deps.MergeQueueNow = d.val, d.clock.now }})
	d.val.url, d.val.store, d.val.queue = d.srv.URL, d.srv.Store, d.srv.Queue
	d.cats = lakescenario.NewCatalogs(d.srv.URL)
	return d
}

func (d *scenario) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "table":
		d.createTable(t, td)
	case "branch":
		d.branch(t, td)
	case "append":
		d.appendRows(t, td)
	case "alter":
		d.alter(t, td)
	case "delete":
		d.deleteRow(t, td)
	case "validator":
		d.useBuiltin(t, td)
	case "merge":
		return d.merge(t, td)
	case "check":
		d.val.mu.Lock()
		d.val.watch[arg(t, td, "parity")] = true
		d.val.mu.Unlock()
	case "bypass":
		d.val.mu.Lock()
		d.val.bypass[d.ids[arg(t, td, "during")]] = true
		d.val.mu.Unlock()
	case "cancel-during":
		d.val.mu.Lock()
		d.val.cancel[d.ids[td.CmdArgs[0].Key]] = true
		d.val.mu.Unlock()
	case "bypassed":
		return fmt.Sprint(d.srv.Queue.Report(time.Time{}).Bypass)
	case "wait":
		dur, err := time.ParseDuration(td.CmdArgs[0].Key)
		if err != nil {
			td.Fatalf(t, "wait: %v", err)
		}
		d.clock.mu.Lock()
		d.clock.offset += dur
		d.clock.mu.Unlock()
	case "submit":
		return d.submit(t, td)
	case "process":
		return d.process(t, td)
	case "requests":
		return d.requests(t)
	case "audit":
		return d.audit(t, td)
	case "cancel", "approve", "reject":
		return d.review(t, td)
	case "rows":
		return d.scanRows(t, td)
	case "log":
		return d.log(t, td)
	case "refs":
		return d.refs()
	case "validations":
		return d.validations(t, td)
	default:
		td.Fatalf(t, "unknown command %q", td.Cmd)
	}
	return ""
}

// validator builtin: candidates are also validated by mergecheck's
// built-in checks over the server's warehouse, as floe serve's queue
// validates them.
func (d *scenario) useBuiltin(t *testing.T, td *datadriven.TestData) {
	if len(td.CmdArgs) != 1 || td.CmdArgs[0].Key != "builtin" {
		td.Fatalf(t, "validator builtin")
	}
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: d.srv.Warehouse})
	if err != nil {
		t.Fatal(err)
	}
	v, err := mergecheck.New(mergecheck.Options{Store: d.srv.Store, Warehouses: []*icebergtable.Warehouse{wh}, Warehouse: "lake"})
	if err != nil {
		t.Fatal(err)
	}
	d.val.mu.Lock()
	d.val.builtin = v
	d.val.mu.Unlock()
}

// merge source=REF target=BRANCH: a direct merge through the server's
// Nessie API, as `floe merge REF --into BRANCH` makes it.
func (d *scenario) merge(t *testing.T, td *datadriven.TestData) string {
	cl, err := nessieclient.New(d.srv.URL, nessieclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := cl.Resolve(t.Context(), arg(t, td, "source"))
	if err != nil {
		td.Fatalf(t, "resolve: %v", err)
	}
	tgt, err := cl.Resolve(t.Context(), arg(t, td, "target"))
	if err != nil {
		td.Fatalf(t, "resolve: %v", err)
	}
	res, err := cl.Merge(t.Context(), tgt.Name, tgt.Hash, nessieclient.MergeRequest{FromRefName: src.Name, FromHash: src.Hash})
	switch {
	case err != nil:
		return "error: " + d.mask(err.Error())
	case !res.WasApplied:
		return "nothing to merge"
	}
	return "merged"
}

func (d *scenario) catalog(t *testing.T, branch string) *rest.Catalog {
	t.Helper()
	return d.cats.On(t, branch)
}

func arg(t *testing.T, td *datadriven.TestData, key string) string {
	t.Helper()
	for _, a := range td.CmdArgs {
		if a.Key == key {
			return strings.Join(a.Vals, ",")
		}
	}
	td.Fatalf(t, "%s: missing argument %s=", td.Cmd, key)
	return ""
}

func optArg(td *datadriven.TestData, key, def string) string {
	for _, a := range td.CmdArgs {
		if a.Key == key {
			return strings.Join(a.Vals, ",")
		}
	}
	return def
}

func ident(name string) table.Identifier { return catalog.ToIdentifier(strings.Split(name, ".")...) }

func (d *scenario) load(t *testing.T, td *datadriven.TestData) *table.Table {
	t.Helper()
	branch := optArg(td, "on", versionstore.DefaultBranch)
	tbl, err := d.catalog(t, branch).LoadTable(t.Context(), ident(arg(t, td, "table")))
	if err != nil {
		td.Fatalf(t, "load %s on %s: %v", arg(t, td, "table"), branch, err)
	}
	return tbl
}

// table table=NS.NAME: a new table on main, partitioned by day(ts).
func (d *scenario) createTable(t *testing.T, td *datadriven.TestData) {
	ctx := t.Context()
	cat := d.catalog(t, versionstore.DefaultBranch)
	id := ident(arg(t, td, "table"))
	ns := catalog.NamespaceFromIdent(id)
	if ok, _ := cat.CheckNamespaceExists(ctx, ns); !ok {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "day", Transform: iceberg.DayTransform{}})
	props := iceberg.Properties{}
	for _, kv := range strings.Split(optArg(td, "properties", ""), ",") {
		if k, v, ok := strings.Cut(kv, ":"); ok {
			props[k] = v
		}
	}
	if _, err := cat.CreateTable(ctx, id, testSchema, catalog.WithPartitionSpec(&spec), catalog.WithProperties(props)); err != nil {
		td.Fatalf(t, "create: %v", err)
	}
}

// branch NAME [from=BRANCH]
func (d *scenario) branch(t *testing.T, td *datadriven.TestData) {
	from, err := d.srv.Store.GetRef(optArg(td, "from", versionstore.DefaultBranch))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.srv.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: td.CmdArgs[0].Key, Type: versionstore.Branch, Target: from.Head}); err != nil {
		t.Fatal(err)
	}
}

// append [on=BRANCH] table=T day=D rows=N: N rows with fresh ids at noon
// of day D.
func (d *scenario) appendRows(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	day, err := time.Parse(time.DateOnly, arg(t, td, "day"))
	if err != nil {
		td.Fatalf(t, "day: %v", err)
	}
	n, _ := strconv.Atoi(arg(t, td, "rows"))
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for range n {
		d.nextID++
		b.Field(0).(*array.Int64Builder).Append(d.nextID)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(day.Add(12 * time.Hour).UnixMicro()))
		for i := 2; i < sc.NumFields(); i++ {
			b.Field(i).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	if _, err := tbl.AppendTable(t.Context(), at, 1024, nil); err != nil {
		td.Fatalf(t, "append: %v", err)
	}
}

// alter [on=BRANCH] table=T add-column=NAME: a schema change.
func (d *scenario) alter(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{arg(t, td, "add-column")}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		td.Fatalf(t, "alter: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "alter: %v", err)
	}
}

// delete [on=BRANCH] table=T id=N: a row-level delete of one row, by
// the table's write.delete.mode: copy-on-write rewrites its file,
// merge-on-read adds a position delete file (a deletion vector on v3).
func (d *scenario) deleteRow(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	id, err := strconv.ParseInt(arg(t, td, "id"), 10, 64)
	if err != nil {
		td.Fatalf(t, "id: %v", err)
	}
	tx := tbl.NewTransaction()
	if err := tx.Delete(t.Context(), iceberg.EqualTo(iceberg.Reference("id"), id), nil); err != nil {
		td.Fatalf(t, "delete: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "delete: %v", err)
	}
}

// submit as=ALIAS source=REF [target=BRANCH] [tables=T,...] [priority=N]
// [checks=C,...] [key=K] [principal=P]
func (d *scenario) submit(t *testing.T, td *datadriven.TestData) string {
	alias := arg(t, td, "as")
	s := mergequeue.SubmitRequest{
		Source: arg(t, td, "source"), Target: optArg(td, "target", "main"), IdempotencyKey: optArg(td, "key", ""),
		Principal: optArg(td, "principal", "etl"),
	}
	if v := optArg(td, "tables", ""); v != "" {
		s.Tables = strings.Split(v, ",")
	}
	if v := optArg(td, "checks", ""); v != "" {
		s.RequiredChecks = strings.Split(v, ",")
	}
	if v := optArg(td, "priority", ""); v != "" {
		s.Priority, _ = strconv.Atoi(v)
	}
	r, created, err := d.srv.Queue.Submit(t.Context(), s)
	if err != nil {
		return "error: " + d.mask(err.Error())
	}
	if prev, ok := d.aliases[r.ID]; ok && prev != alias {
		return fmt.Sprintf("%s is %s (created %v): %s", alias, prev, created, r.State)
	}
	d.ids[alias], d.aliases[r.ID] = r.ID, alias
	return fmt.Sprintf("%s: %s (class %s, created %v)", alias, r.State, r.Class, created)
}

// process [target=BRANCH]: one batch of the target's worker; then every
// request that changed state.
func (d *scenario) process(t *testing.T, td *datadriven.TestData) string {
	before := map[string]string{}
	for _, r := range d.srv.Queue.List(mergequeue.Filter{}) {
		before[r.ID] = r.State
	}
	did, err := d.srv.Queue.Process(t.Context(), optArg(td, "target", "main"))
	if err != nil {
		return "error: " + d.mask(err.Error())
	}
	if !did {
		return "nothing to do"
	}
	var b strings.Builder
	for _, r := range d.srv.Queue.List(mergequeue.Filter{}) {
		if before[r.ID] != r.State {
			fmt.Fprintf(&b, "%s\n", d.line(r))
		}
	}
	return b.String()
}

func (d *scenario) line(r *mergequeue.Request) string {
	s := fmt.Sprintf("%s: %s", d.aliases[r.ID], r.State)
	if r.Classification != "" {
		s += " " + r.Classification
	}
	if r.Batched {
		s += " batched"
	}
	if r.State != mergequeue.StateMerged && r.State != mergequeue.StateQueued && r.Reason != "" {
		s += ": " + d.mask(r.Reason)
	}
	return s
}

// requests: every request in arrival order.
func (d *scenario) requests(t *testing.T) string {
	var b strings.Builder
	for _, r := range d.srv.Queue.List(mergequeue.Filter{}) {
		fmt.Fprintf(&b, "%s\n", d.line(r))
	}
	return b.String()
}

// audit ALIAS: the request's audit trail.
func (d *scenario) audit(t *testing.T, td *datadriven.TestData) string {
	r, err := d.srv.Queue.Get(d.ids[td.CmdArgs[0].Key])
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	var b strings.Builder
	for _, c := range r.Audit {
		from := c.From
		if from == "" {
			from = "-"
		}
		fmt.Fprintf(&b, "%s -> %s by %s: %s\n", from, c.To, c.Principal, d.mask(c.Reason))
	}
	for _, h := range r.Hygiene {
		fmt.Fprintf(&b, "hygiene: %s\n", h)
	}
	return b.String()
}

// validations ALIAS: each validation of the request: how many, whether
// their candidates are distinct, and each result.
func (d *scenario) validations(t *testing.T, td *datadriven.TestData) string {
	r, err := d.srv.Queue.Get(d.ids[td.CmdArgs[0].Key])
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, v := range r.Validations {
		again := ""
		if seen[v.Candidate] {
			again = " (same candidate again!)"
		}
		seen[v.Candidate] = true
		fmt.Fprintf(&b, "candidate passed=%v%s:", v.Passed, again)
		for _, res := range v.Results {
			fmt.Fprintf(&b, " %s=%v", res.Name, res.Passed)
			if res.Reason != "" {
				fmt.Fprintf(&b, " (%s)", d.mask(res.Reason))
			}
		}
		b.WriteString("\n")
	}
	if r.State == mergequeue.StateMerged && len(r.Validations) > 0 && r.Validations[len(r.Validations)-1].Candidate != r.LandedCommit {
		b.WriteString("the last validation is not of the landed commit!\n")
	}
	return b.String()
}

func (d *scenario) review(t *testing.T, td *datadriven.TestData) string {
	id := d.ids[td.CmdArgs[0].Key]
	who := optArg(td, "by", "reviewer")
	var r *mergequeue.Request
	var err error
	switch td.Cmd {
	case "cancel":
		r, err = d.srv.Queue.Cancel(t.Context(), id, who, "")
	case "approve":
		r, err = d.srv.Queue.Approve(t.Context(), id, who, "")
	case "reject":
		r, err = d.srv.Queue.Reject(t.Context(), id, who, "")
	}
	if err != nil {
		return "error: " + d.mask(err.Error())
	}
	return d.line(r)
}

// rows table=T [on=BRANCH]: ids per day.
func (d *scenario) scanRows(t *testing.T, td *datadriven.TestData) string {
	tbl := d.load(t, td)
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		td.Fatalf(t, "scan: %v", err)
	}
	defer at.Release()
	return lakescenario.RowsByDay(t, td, at)
}

// log [on=BRANCH] [n=N]: the branch's last commits, newest first: their
// parents and the merge request they carry.
func (d *scenario) log(t *testing.T, td *datadriven.TestData) string {
	ref, err := d.srv.Store.GetRef(optArg(td, "on", "main"))
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	n, _ := strconv.Atoi(optArg(td, "n", "5"))
	commits, _, err := d.srv.Store.Log(t.Context(), ref.Head, versionstore.LogOptions{Limit: n})
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	var b strings.Builder
	for _, c := range commits {
		req := c.Properties[mergequeue.PropRequest]
		if a, ok := d.aliases[req]; ok {
			req = a
		}
		if req == "" {
			req = "-"
		}
		fmt.Fprintf(&b, "%d parent(s), request %s: %s\n", len(c.Parents), req, d.mask(strings.SplitN(c.Message, "\n", 2)[0]))
	}
	return b.String()
}

// refs: the branches and tags.
func (d *scenario) refs() string {
	var b strings.Builder
	for _, r := range d.srv.Store.ListRefs() {
		fmt.Fprintf(&b, "%s %s\n", r.Type, r.Name)
	}
	return b.String()
}

var (
	hashRE = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	// shortHashRE and snapshotRE: the abbreviated hashes and the snapshot
	// ids mergecheck's reasons name.
	shortHashRE = regexp.MustCompile(`\b[0-9a-f]{12}\b`)
	snapshotRE  = regexp.MustCompile(`\b[0-9]{9,}\b`)
	pathRE      = regexp.MustCompile(`file://[^ ]+`)
	// candidateRE: candidate branches, named with a random suffix.
	candidateRE = regexp.MustCompile(`floe-queue/[^ ]+`)
)

// mask replaces hashes, snapshot ids, file paths, candidate branches and
// request ids, which change from run to run.
func (d *scenario) mask(s string) string {
	s = hashRE.ReplaceAllString(s, "<hash>")
	s = pathRE.ReplaceAllString(s, "<path>")
	s = candidateRE.ReplaceAllString(s, "<candidate>")
	s = shortHashRE.ReplaceAllString(s, "<hash>")
	s = snapshotRE.ReplaceAllString(s, "<id>")
	for id, alias := range d.aliases {
		s = strings.ReplaceAll(s, id, alias)
	}
	return s
}
