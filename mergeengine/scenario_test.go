package mergeengine_test

// The scenario files in testdata/ state what a merge does with Iceberg
// tables changed on both sides, as stories over real tables: iceberg-go
// writes them through a real floe server on catalog branches
// (lake@BRANCH), merges go through the Nessie API v2, and iceberg-go's
// scanner reads the rows back. testdata/README.md describes the language.
//
// Rewrite the expected outputs after a deliberate change of behavior with
//
//	go test -run TestScenarios ./mergeengine/ -rewrite

import (
	"context"
	"fmt"
	"net/http"
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

	"github.com/floe-catalog/floe/classify"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/rest/nessie"
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

// testSchema is every scenario table's schema, partitioned by day(ts)
// (partition field "day").
var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp, Required: true},
	iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
)

type scenario struct {
	srv     *testserver.Server
	cats    map[string]*rest.Catalog
	nextID  int64
	scratch int
	policy  *denyPolicy
}

// denyPolicy refuses a Nessie merge that writes a table its deny set
// names ("merge NS.NAME"); everything else is allowed.
type denyPolicy struct {
	mu   sync.Mutex
	deny map[string]bool
}

func (p *denyPolicy) Decide(_ context.Context, in policy.Input) (policy.Decision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range in.Contents {
		if n := string(in.Action) + " " + strings.Join(c.Key, "."); p.deny[n] {
			return policy.Decision{ID: "d", Reasons: []string{n + " refused"}}, nil
		}
	}
	return policy.Decision{ID: "d", Allow: true}, nil
}

func newScenario(t *testing.T) *scenario {
	p := &denyPolicy{deny: map[string]bool{}}
	who := func(*http.Request) policy.Principal { return policy.Principal{ID: "etl"} }
	srv := testserver.Start(t, testserver.Options{Nessie: func(d *nessie.Deps) {
		d.Guard = authz.NewGuard(p, "nessie", who, nil)
	}})
	return &scenario{srv: srv, cats: map[string]*rest.Catalog{}, policy: p}
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
		d.delete(t, td)
	case "overwrite":
		d.overwrite(t, td)
	case "compact":
		d.compact(t, td)
	case "ref":
		d.ref(t, td)
	case "metadata":
		return d.metadata(t, td)
	case "deny":
		d.policy.mu.Lock()
		d.policy.deny[td.CmdArgs[0].Key+" "+td.CmdArgs[1].Key] = true
		d.policy.mu.Unlock()
	case "merge":
		return d.merge(t, td)
	case "transplant":
		return d.transplant(t, td)
	case "rows":
		return d.scanRows(t, td)
	case "snapshots":
		return d.snapshots(t, td)
	case "files":
		return d.files(t, td)
	case "head":
		return d.head(t, td)
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

// table table=NS.NAME [properties=k:v,...]: a new table on main,
// partitioned by day(ts), in a new namespace if needed.
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
	if p := optArg(td, "properties", ""); p != "" {
		for _, kv := range strings.Split(p, ",") {
			k, v, _ := strings.Cut(kv, ":")
			props[k] = v
		}
	}
	if _, err := cat.CreateTable(ctx, id, testSchema, catalog.WithPartitionSpec(&spec), catalog.WithProperties(props)); err != nil {
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

// rows makes n new rows (fresh ids) at noon of day, in tbl's current
// schema (n may have been promoted or renamed).
func (d *scenario) rows(t *testing.T, tbl *table.Table, day time.Time, n int, ids []int64) arrow.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range n {
		d.nextID++
		id := d.nextID
		if i < len(ids) {
			id = ids[i]
		}
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(day.Add(12 * time.Hour).UnixMicro()))
		switch f := b.Field(2).(type) {
		case *array.Int32Builder:
			f.Append(int32(id))
		case *array.Int64Builder:
			f.Append(id)
		}
		for i := 3; i < sc.NumFields(); i++ {
			b.Field(i).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

// append on=BRANCH table=T day=D rows=N
func (d *scenario) appendRows(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	n, _ := strconv.Atoi(arg(t, td, "rows"))
	var ids []int64
	if s := optArg(td, "ids", ""); s != "" {
		for _, v := range strings.Split(s, ",") {
			id, _ := strconv.ParseInt(v, 10, 64)
			ids = append(ids, id)
		}
	}
	at := d.rows(t, tbl, dayStart(t, td), n, ids)
	defer at.Release()
	if _, err := tbl.AppendTable(t.Context(), at, 1024, nil); err != nil {
		td.Fatalf(t, "append: %v", err)
	}
}

func dayFilter(day time.Time) iceberg.BooleanExpression {
	ts := iceberg.Reference("ts")
	return iceberg.NewAnd(
		iceberg.GreaterThanEqual(ts, iceberg.Timestamp(day.UnixMicro())),
		iceberg.LessThan(ts, iceberg.Timestamp(day.Add(24*time.Hour).UnixMicro())))
}

// alter on=BRANCH table=T (add-column=NAME | rename=OLD:NEW | promote=n |
// identifier=COLUMN | sort=id | spec=bucket | property=K:V | unset=K)
func (d *scenario) alter(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	tx := tbl.NewTransaction()
	var err error
	switch a := td.CmdArgs[len(td.CmdArgs)-1]; a.Key {
	case "add-column":
		err = tx.UpdateSchema(true, false).AddColumn([]string{a.Vals[0]}, iceberg.PrimitiveTypes.String, "", false, nil).Commit()
	case "rename":
		old, nu, _ := strings.Cut(a.Vals[0], ":")
		err = tx.UpdateSchema(true, false).RenameColumn([]string{old}, nu).Commit()
	case "promote":
		err = tx.UpdateSchema(true, false).UpdateColumn([]string{a.Vals[0]}, table.ColumnUpdate{
			FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}}).Commit()
	case "spec":
		err = tx.UpdateSpec(true).AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket").Commit()
	case "identifier":
		err = tx.UpdateSchema(true, false).SetIdentifierField([][]string{{a.Vals[0]}}).Commit()
	case "sort":
		var order table.SortOrder
		order, err = table.NewSortOrder(1, []table.SortField{{SourceIDs: []int{1}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst}})
		if err == nil {
			err = tx.ReplaceSortOrder(order)
		}
	case "property":
		k, v, _ := strings.Cut(a.Vals[0], ":")
		err = tx.SetProperties(iceberg.Properties{k: v})
	case "unset":
		err = tx.RemoveProperties([]string{a.Vals[0]})
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

// record=pinned|unpinned|self on an overwrite or a delete of a day: the
// operation record (floe.operation.*, OPERATIONS.md) the writer sets in
// the snapshot summary, as a pipeline would: the day's partition, and the
// inputs it read: none (pinned), not said (unpinned), or the table itself
// at the snapshot it read (self).
func (d *scenario) record(t *testing.T, td *datadriven.TestData, tbl *table.Table, kind string) iceberg.Properties {
	how := optArg(td, "record", "")
	if how == "" {
		return nil
	}
	props := iceberg.Properties{
		classify.OpKind:       kind,
		classify.OpPartitions: "day=" + arg(t, td, "day"),
	}
	switch how {
	case "pinned":
		props[classify.OpSourceSnapshotIDs] = "none"
	case "self":
		props[classify.OpSourceSnapshotIDs] = fmt.Sprintf("%s@%d", arg(t, td, "table"), tbl.CurrentSnapshot().SnapshotID)
	case "unpinned":
	default:
		td.Fatalf(t, "record=%s: pinned, unpinned or self", how)
	}
	return props
}

// delete on=BRANCH table=T (day=D [record=...] | id=N): a copy-on-write
// delete of a whole day, or of one row (its file is rewritten).
func (d *scenario) delete(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	var filter iceberg.BooleanExpression
	var props iceberg.Properties
	if id := optArg(td, "id", ""); id != "" {
		n, _ := strconv.ParseInt(id, 10, 64)
		filter = iceberg.EqualTo(iceberg.Reference("id"), n)
	} else {
		filter = dayFilter(dayStart(t, td))
		props = d.record(t, td, tbl, classify.OpKindDeletePartitions)
	}
	tx := tbl.NewTransaction()
	if err := tx.Delete(t.Context(), filter, props); err != nil {
		td.Fatalf(t, "delete: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "delete: %v", err)
	}
}

// overwrite on=BRANCH table=T day=D rows=N [record=...]: replaces day
// D's rows with N new ones.
func (d *scenario) overwrite(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	day := dayStart(t, td)
	n, _ := strconv.Atoi(arg(t, td, "rows"))
	at := d.rows(t, tbl, day, n, nil)
	defer at.Release()
	tx := tbl.NewTransaction()
	props := d.record(t, td, tbl, classify.OpKindOverwritePartitions)
	if err := tx.OverwriteTable(t.Context(), at, 1024, props, table.WithOverwriteFilter(dayFilter(day))); err != nil {
		td.Fatalf(t, "overwrite: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "overwrite: %v", err)
	}
}

// compact on=BRANCH table=T day=D: rewrites day D's data files into one,
// as a compaction job does: a rewrite (iceberg-go's RewriteFiles, like
// Spark's rewrite_data_files) that Iceberg records as "replace". The new
// file is written by appending the day's rows to a scratch table of the
// same spec first.
func (d *scenario) compact(t *testing.T, td *datadriven.TestData) {
	ctx := t.Context()
	tbl := d.load(t, td)
	day := dayStart(t, td)
	scan := tbl.Scan(table.WithRowFilter(dayFilter(day)))
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var old []iceberg.DataFile
	for _, task := range tasks {
		old = append(old, task.File)
	}
	rows, err := scan.ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Release()
	d.scratch++
	cat := d.catalog(t, optArg(td, "on", versionstore.DefaultBranch))
	scratchID := catalog.ToIdentifier(append(catalog.NamespaceFromIdent(tbl.Identifier()), fmt.Sprintf("scratch%d", d.scratch))...)
	spec := tbl.Spec()
	scratch, err := cat.CreateTable(ctx, scratchID, tbl.Schema(), catalog.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatal(err)
	}
	if scratch, err = scratch.AppendTable(ctx, rows, 1024, nil); err != nil {
		t.Fatal(err)
	}
	stasks, err := scratch.Scan().PlanFiles(ctx)
	if err != nil || len(stasks) != 1 {
		t.Fatalf("scratch files: %v %d", err, len(stasks))
	}
	tx := tbl.NewTransaction()
	rw := tx.NewRewrite(nil)
	for _, f := range old {
		rw.DeleteFile(f)
	}
	if err := rw.AddDataFile(stasks[0].File).Commit(ctx); err != nil {
		td.Fatalf(t, "compact: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		td.Fatalf(t, "compact: %v", err)
	}
}
