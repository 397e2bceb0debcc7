package mergecheck_test

// The scenario files in testdata/ state the checks as stories over real
// Iceberg tables: iceberg-go writes them through a real floe server (on
// catalog branches lake@BRANCH, Pebble in a temporary directory), the
// merge engine builds candidates as the merge queue does (the source
// merged onto a branch at the target's head), and the validator reads
// what the store holds. testdata/README.md describes the language.
//
// Rewrite the expected outputs after a deliberate change of behavior with
//
//	go test -run TestScenarios ./mergecheck/ -rewrite

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
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

	"github.com/floe-catalog/floe/icebergtable"
	"github.com/floe-catalog/floe/mergecheck"
	"github.com/floe-catalog/floe/mergeengine"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/testkit/testserver"
	"github.com/floe-catalog/floe/versionstore"
)

func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasSuffix(path, ".md") {
			return
		}
		d := newScenario(t)
		datadriven.RunTest(t, path, d.run)
	})
}

// testSchema: ts is partitioned by day (partition field "day"); n is
// optional, so rows may carry nulls in it.
var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp, Required: true},
	iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
)

// policyEngine adapts the real engine to the validator, as the
// composition root will.
type policyEngine struct{ e *policy.Engine }

func (p policyEngine) CheckMerge(ctx context.Context, summary []byte) (mergecheck.PolicyDecision, error) {
	d, err := p.e.CheckMerge(ctx, summary)
	return mergecheck.PolicyDecision(d), err
}

type scenario struct {
	srv       *testserver.Server
	wh        *icebergtable.Warehouse
	cats      map[string]*rest.Catalog
	nextID    int64
	engine    *mergeengine.Engine
	validator *mergecheck.Validator
	cands     map[string]mergecheck.Candidate
	hooks     *hookServer
	built     int // candidates built
}

func newScenario(t *testing.T) *scenario {
	srv := testserver.Start(t, testserver.Options{})
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: srv.Warehouse})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := mergeengine.New(mergeengine.Options{Store: srv.Store, Warehouses: []*icebergtable.Warehouse{wh}})
	if err != nil {
		t.Fatal(err)
	}
	pe, err := policy.New(t.Context(), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pe.Close() })
	hooks := startHookServer(t)
	v, err := mergecheck.New(mergecheck.Options{
		Store: srv.Store, Warehouses: []*icebergtable.Warehouse{wh}, Warehouse: "lake", CatalogURI: srv.URL,
		Policy: policyEngine{pe}, External: hooks.checks(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &scenario{srv: srv, wh: wh, cats: map[string]*rest.Catalog{}, engine: eng, validator: v,
		cands: map[string]mergecheck.Candidate{}, hooks: hooks}
}

func (d *scenario) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "table":
		d.createTable(t, td)
	case "branch":
		d.branch(t, td)
	case "append":
		d.appendRows(t, td)
	case "overwrite":
		d.overwrite(t, td)
	case "alter":
		d.alter(t, td)
	case "republish":
		d.republish(t, td)
	case "drop":
		if err := d.catalog(t, optArg(td, "on", versionstore.DefaultBranch)).DropTable(t.Context(), ident(arg(t, td, "table"))); err != nil {
			td.Fatalf(t, "drop: %v", err)
		}
	case "merge":
		return d.merge(t, td)
	case "candidate":
		return d.candidate(t, td)
	case "summary":
		return d.summary(t, td)
	case "validate":
		return d.validate(t, td)
	case "deliveries":
		d.hooks.mu.Lock()
		defer d.hooks.mu.Unlock()
		return fmt.Sprintf("%d\n", len(d.hooks.seen[arg(t, td, "check")]))
	case "result":
		return d.result(t, td)
	default:
		td.Fatalf(t, "unknown command %q", td.Cmd)
	}
	return ""
}

func (d *scenario) catalog(t *testing.T, branch string) *rest.Catalog {
	t.Helper()
	if c, ok := d.cats[branch]; ok {
		return c
	}
	wh := "lake"
	if branch != versionstore.DefaultBranch {
		wh += "@" + branch
	}
	cat, err := rest.NewCatalog(t.Context(), "floe", d.srv.URL, rest.WithWarehouseLocation(wh))
	if err != nil {
		t.Fatalf("open catalog on %s: %v", wh, err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	d.cats[branch] = cat
	return cat
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

func props(s string) iceberg.Properties {
	p := iceberg.Properties{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && s != "" {
			p[k] = v
		}
	}
	return p
}

// table table=NS.NAME [on=BRANCH] [properties=(k=v,...)]: a new table,
// partitioned by day(ts), in a new namespace if needed.
func (d *scenario) createTable(t *testing.T, td *datadriven.TestData) {
	ctx := t.Context()
	cat := d.catalog(t, optArg(td, "on", versionstore.DefaultBranch))
	id := ident(arg(t, td, "table"))
	ns := catalog.NamespaceFromIdent(id)
	if ok, _ := cat.CheckNamespaceExists(ctx, ns); !ok {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "day", Transform: iceberg.DayTransform{}})
	if _, err := cat.CreateTable(ctx, id, testSchema, catalog.WithPartitionSpec(&spec), catalog.WithProperties(props(optArg(td, "properties", "")))); err != nil {
		td.Fatalf(t, "create: %v", err)
	}
}

// branch NAME [from=BRANCH]: a catalog branch at from's head.
func (d *scenario) branch(t *testing.T, td *datadriven.TestData) {
	from, err := d.srv.Store.GetRef(optArg(td, "from", versionstore.DefaultBranch))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.srv.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: td.CmdArgs[0].Key, Type: versionstore.Branch, Target: from.Head}); err != nil {
		t.Fatal(err)
	}
}

func dayStart(t *testing.T, td *datadriven.TestData) time.Time {
	t.Helper()
	day, err := time.Parse(time.DateOnly, arg(t, td, "day"))
	if err != nil {
		td.Fatalf(t, "day: %v", err)
	}
	return day
}

// rows makes n new rows (fresh ids) at noon of day, the first nulls of
// them with a null n, in tbl's current schema.
func (d *scenario) rows(t *testing.T, tbl *table.Table, day time.Time, n, nulls int) arrow.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range n {
		d.nextID++
		b.Field(0).(*array.Int64Builder).Append(d.nextID)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(day.Add(12 * time.Hour).UnixMicro()))
		if i < nulls {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Int32Builder).Append(int32(d.nextID))
		}
		for i := 3; i < sc.NumFields(); i++ {
			b.Field(i).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

func atoi(t *testing.T, td *datadriven.TestData, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		td.Fatalf(t, "%q is not a number", s)
	}
	return n
}

// append on=BRANCH table=T day=D rows=N [nulls=K] [copies=BRANCH] [opkind=KIND]:
// opkind sets the snapshot's floe.operation.kind;
// copies names the table's head snapshot on BRANCH in the snapshot's
// floe.merge.source-snapshot-id, as a cherry-picked copy of it would.
func (d *scenario) appendRows(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	at := d.rows(t, tbl, dayStart(t, td), atoi(t, td, arg(t, td, "rows")), atoi(t, td, optArg(td, "nulls", "0")))
	defer at.Release()
	snapProps := iceberg.Properties{}
	if kind := optArg(td, "opkind", ""); kind != "" {
		snapProps["floe.operation.kind"] = kind
	}
	if from := optArg(td, "copies", ""); from != "" {
		src, err := d.catalog(t, from).LoadTable(t.Context(), tbl.Identifier())
		if err != nil {
			t.Fatal(err)
		}
		snapProps["floe.merge.source-snapshot-id"] = strconv.FormatInt(src.CurrentSnapshot().SnapshotID, 10)
	}
	if _, err := tbl.AppendTable(t.Context(), at, 1024, snapProps); err != nil {
		td.Fatalf(t, "append: %v", err)
	}
}

func dayFilter(day time.Time) iceberg.BooleanExpression {
	ts := iceberg.Reference("ts")
	return iceberg.NewAnd(
		iceberg.GreaterThanEqual(ts, iceberg.Timestamp(day.UnixMicro())),
		iceberg.LessThan(ts, iceberg.Timestamp(day.Add(24*time.Hour).UnixMicro())))
}

// overwrite on=BRANCH table=T day=D rows=N: replaces day D's rows.
func (d *scenario) overwrite(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	day := dayStart(t, td)
	at := d.rows(t, tbl, day, atoi(t, td, arg(t, td, "rows")), 0)
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.OverwriteTable(t.Context(), at, 1024, nil, table.WithOverwriteFilter(dayFilter(day))); err != nil {
		td.Fatalf(t, "overwrite: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "overwrite: %v", err)
	}
}

// republish on=BRANCH table=T: adds the table's live data files again
// (iceberg-go's add-files, duplicates not refused), the way a pipeline
// re-registering its output would.
func (d *scenario) republish(t *testing.T, td *datadriven.TestData) {
	ctx := t.Context()
	tbl := d.load(t, td)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, task := range tasks {
		paths = append(paths, task.File.FilePath())
	}
	tx := tbl.NewTransaction()
	if err := tx.AddFiles(ctx, paths, nil, true); err != nil {
		td.Fatalf(t, "republish: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		td.Fatalf(t, "republish: %v", err)
	}
}

// alter on=BRANCH table=T (add-column=NAME | add-required=NAME | rename=OLD:NEW | spec=bucket | property=K:V)
func (d *scenario) alter(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	tx := tbl.NewTransaction()
	var err error
	switch a := td.CmdArgs[len(td.CmdArgs)-1]; a.Key {
	case "add-column":
		err = tx.UpdateSchema(true, false).AddColumn([]string{a.Vals[0]}, iceberg.PrimitiveTypes.String, "", false, nil).Commit()
	case "add-required":
		err = tx.UpdateSchema(true, true).AddColumn([]string{a.Vals[0]}, iceberg.PrimitiveTypes.String, "", true, nil).Commit()
	case "rename":
		old, nu, _ := strings.Cut(a.Vals[0], ":")
		err = tx.UpdateSchema(true, false).RenameColumn([]string{old}, nu).Commit()
	case "spec":
		err = tx.UpdateSpec(true).AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket").Commit()
	case "property":
		k, v, _ := strings.Cut(a.Vals[0], ":")
		err = tx.SetProperties(iceberg.Properties{k: v})
	default:
		td.Fatalf(t, "alter: unknown change %q", a.Key)
	}
	if err != nil {
		td.Fatalf(t, "alter: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "alter: %v", err)
	}
}

func (d *scenario) head(t *testing.T, ref string) versionstore.Hash {
	r, err := d.srv.Store.GetRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	return r.Head
}

// merge source=BRANCH target=BRANCH: lands the merge (the merge engine's
// cherry-picks where both changed a table).
func (d *scenario) merge(t *testing.T, td *datadriven.TestData) string {
	src, tgt := arg(t, td, "source"), arg(t, td, "target")
	_, err := d.engine.Merge(t.Context(), versionstore.MergeRequest{
		Target: tgt, ExpectedTarget: d.head(t, tgt), From: d.head(t, src), FromRef: src,
		DefaultMode: versionstore.MergeNormal, Committer: "test", Meta: versionstore.CommitMeta{Message: "merge " + src}})
	if err != nil {
		return "error: " + mask(err.Error()) + "\n"
	}
	return ""
}

// candidate [name=C] source=BRANCH target=BRANCH [direct] [principal=P]
// [checks=A,B] [allow-structural]: a candidate as the queue builds it, the
// source merged onto a new branch at the target's head; direct takes the
// source's head itself as the candidate (what a queue must not publish
// when it does not descend from the target's head).
func (d *scenario) candidate(t *testing.T, td *datadriven.TestData) string {
	src, tgt := arg(t, td, "source"), arg(t, td, "target")
	c := mergecheck.Candidate{
		RequestID: "req-" + optArg(td, "name", "c"), Target: tgt, TargetHead: d.head(t, tgt), SourceRef: src,
		SourceHash: d.head(t, src), Principal: optArg(td, "principal", "pipeline"), AllowStructural: td.HasArg("allow-structural"),
	}
	if checks := optArg(td, "checks", ""); checks != "" {
		c.RequiredChecks = strings.Split(checks, ",")
	}
	if td.HasArg("direct") {
		c.Commit = c.SourceHash
	} else {
		d.built++
		name := fmt.Sprintf("queue/candidate-%d", d.built)
		if _, err := d.srv.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: name, Type: versionstore.Branch, Target: c.TargetHead}); err != nil {
			t.Fatal(err)
		}
		res, err := d.engine.Merge(t.Context(), versionstore.MergeRequest{
			Target: name, ExpectedTarget: c.TargetHead, From: c.SourceHash, FromRef: src,
			DefaultMode: versionstore.MergeNormal, Committer: "queue", Meta: versionstore.CommitMeta{Message: "candidate"}})
		if err != nil {
			return "error: " + mask(err.Error()) + "\n"
		}
		c.Commit = res.ResultantHash
	}
	d.cands[optArg(td, "name", "c")] = c
	return ""
}

var longNumber = regexp.MustCompile(`[0-9a-f]{12,}|[0-9]{6,}`)

var filePath = regexp.MustCompile(`file://[^ ]+`)

func mask(s string) string {
	return longNumber.ReplaceAllString(filePath.ReplaceAllString(s, "<path>"), "<id>")
}

// summary [name=C]: the candidate's merge summary, without ids.
func (d *scenario) summary(t *testing.T, td *datadriven.TestData) string {
	s, err := d.validator.Summary(t.Context(), d.cands[optArg(td, "name", "c")])
	if err != nil {
		return "error: " + mask(err.Error()) + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "source %s, target %s, principal %s, warehouse %s\n", s.Source.Ref, s.Target.Ref, s.Principal, mask(s.Warehouse))
	tt := s.Totals
	fmt.Fprintf(&b, "totals: %d table(s), %d snapshot(s), %d partition(s), data files +%d -%d, delete files +%d -%d, records +%d -%d\n",
		tt.Tables, tt.Snapshots, tt.Partitions, tt.AddedDataFiles, tt.RemovedDataFiles, tt.AddedDeleteFiles, tt.RemovedDeleteFiles, tt.AddedRecords, tt.RemovedRecords)
	for _, tb := range s.Tables {
		var ops []string
		for _, sn := range tb.Snapshots {
			ops = append(ops, sn.Operation)
		}
		fmt.Fprintf(&b, "table %s %s: snapshots [%s]\n", tb.Name, tb.Change, strings.Join(ops, " "))
		for _, p := range tb.Partitions {
			fmt.Fprintf(&b, "  %s: data +%d (%d records) -%d (%d records); records %d -> %d\n", p.Path,
				p.AddedDataFiles, p.AddedRecords, p.RemovedDataFiles, p.RemovedRecords, p.RecordsBefore, p.RecordsAfter)
		}
		for _, c := range tb.SchemaChanges {
			fmt.Fprintf(&b, "  schema: %s\n", c)
		}
		for _, c := range tb.SpecChanges {
			fmt.Fprintf(&b, "  spec: %s\n", c)
		}
		for _, c := range tb.SortOrderChanges {
			fmt.Fprintf(&b, "  sort order: %s\n", c)
		}
		for _, c := range tb.OtherStructuralChanges {
			fmt.Fprintf(&b, "  other: %s\n", c)
		}
	}
	for _, o := range s.OtherChanges {
		fmt.Fprintf(&b, "%s %s %s\n", o.Type, o.Name, o.Change)
	}
	return b.String()
}

// validate [name=C] [only=CHECK,...]: the checks' results (or only some).
func (d *scenario) validate(t *testing.T, td *datadriven.TestData) string {
	c := d.cands[optArg(td, "name", "c")]
	res, err := d.validator.Validate(t.Context(), c)
	if err != nil {
		return "error: " + mask(err.Error()) + "\n"
	}
	only := optArg(td, "only", "")
	var b strings.Builder
	for _, r := range res {
		if only != "" && !strings.Contains(","+only+",", ","+r.Name+",") {
			continue
		}
		verdict := "pass"
		if !r.Passed {
			verdict = "FAIL"
		}
		fmt.Fprintf(&b, "%s: %s: %s\n", r.Name, verdict, mask(r.Reason))
	}
	return b.String()
}

// result [name=C]: the result kept for the candidate, read back by a new
// validator over the same store (so from its store record).
func (d *scenario) result(t *testing.T, td *datadriven.TestData) string {
	v, err := mergecheck.New(mergecheck.Options{Store: d.srv.Store, Warehouses: []*icebergtable.Warehouse{d.wh}})
	if err != nil {
		t.Fatal(err)
	}
	c := d.cands[optArg(td, "name", "c")]
	r, err := v.Result(t.Context(), c.Commit)
	if err != nil {
		return "error: " + mask(err.Error()) + "\n"
	}
	var names []string
	for _, ch := range r.Checks {
		v := "pass"
		if !ch.Passed {
			v = "FAIL"
		}
		names = append(names, ch.Name+"="+v)
	}
	return fmt.Sprintf("candidate %v, request %s, passed %v: %s\n", r.Candidate.Commit == c.Commit, r.Candidate.RequestID, r.Passed, strings.Join(names, " "))
}
