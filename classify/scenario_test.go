package classify_test

// The scenario files in testdata/ state the classification rules as
// stories over real Iceberg tables: iceberg-go writes them through a real
// floe server (on catalog branches lake@BRANCH), and the classifier reads
// what the version store holds at the merge base and both heads.
// testdata/README.md describes the language.
//
// Rewrite the expected outputs after a deliberate change of behavior with
//
//	go test -run TestScenarios ./classify/ -rewrite

import (
	"errors"
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

	"github.com/floe-catalog/floe/classify"
	"github.com/floe-catalog/floe/icebergtable"
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

// testSchema is every scenario table's schema: ts is partitioned by day
// (partition field "day"), n is there to be promoted and renamed.
var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp, Required: true},
	iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
)

type scenario struct {
	srv      *testserver.Server
	cats     map[string]*rest.Catalog
	nextID   int64
	scratch  int
	classify *classify.Classifier
}

func newScenario(t *testing.T) *scenario {
	srv := testserver.Start(t, testserver.Options{})
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: srv.Warehouse})
	if err != nil {
		t.Fatal(err)
	}
	return &scenario{srv: srv, cats: map[string]*rest.Catalog{}, classify: classify.New(wh)}
}

func (d *scenario) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "table":
		d.createTable(t, td)
	case "branch":
		d.branch(t, td)
	case "append":
		d.appendRows(t, td)
	case "delete":
		d.delete(t, td)
	case "overwrite":
		d.overwrite(t, td)
	case "compact":
		d.compact(t, td)
	case "alter":
		d.alter(t, td)
	case "rollback":
		d.rollback(t, td)
	case "drop":
		if err := d.catalog(t, optArg(td, "on", versionstore.DefaultBranch)).DropTable(t.Context(), ident(arg(t, td, "table"))); err != nil {
			td.Fatalf(t, "drop: %v", err)
		}
	case "classify":
		return d.classifyTable(t, td)
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
func (d *scenario) rows(t *testing.T, tbl *table.Table, day time.Time, n int) arrow.Table {
	t.Helper()
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
		switch f := b.Field(2).(type) {
		case *array.Int32Builder:
			f.Append(int32(d.nextID))
		case *array.Int64Builder:
			f.Append(d.nextID)
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
	at := d.rows(t, tbl, dayStart(t, td), n)
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

// delete on=BRANCH table=T (day=D | id=N): a copy-on-write delete of a
// whole day, or of one row (its file is rewritten).
func (d *scenario) delete(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	var filter iceberg.BooleanExpression
	if id := optArg(td, "id", ""); id != "" {
		n, _ := strconv.ParseInt(id, 10, 64)
		filter = iceberg.EqualTo(iceberg.Reference("id"), n)
	} else {
		filter = dayFilter(dayStart(t, td))
	}
	tx := tbl.NewTransaction()
	if err := tx.Delete(t.Context(), filter, nil); err != nil {
		td.Fatalf(t, "delete: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "delete: %v", err)
	}
}

// overwrite on=BRANCH table=T day=D rows=N [recorded]: replaces day D's
// rows with N new ones; recorded sets the operation record
// (overwrite-partitions of the day, no inputs).
func (d *scenario) overwrite(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	day := dayStart(t, td)
	n, _ := strconv.Atoi(arg(t, td, "rows"))
	at := d.rows(t, tbl, day, n)
	defer at.Release()
	var record iceberg.Properties
	if td.HasArg("recorded") {
		// The operation record a pipeline sets (mergeengine/OPERATIONS.md).
		record = iceberg.Properties{
			classify.OpKind: classify.OpKindOverwritePartitions, classify.OpPartitions: "day=" + arg(t, td, "day"),
			classify.OpSourceSnapshotIDs: "none",
		}
	}
	tx := tbl.NewTransaction()
	if err := tx.OverwriteTable(t.Context(), at, 1024, record, table.WithOverwriteFilter(dayFilter(day))); err != nil {
		td.Fatalf(t, "overwrite: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "overwrite: %v", err)
	}
}

// compact on=BRANCH table=T day=D: rewrites day D's data files into one,
// as a compaction job does (iceberg-go records it as an "overwrite"). The new file is
// written by appending the day's rows to a scratch table first.
func (d *scenario) compact(t *testing.T, td *datadriven.TestData) {
	ctx := t.Context()
	tbl := d.load(t, td)
	day := dayStart(t, td)
	scan := tbl.Scan(table.WithRowFilter(dayFilter(day)))
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var old []string
	for _, task := range tasks {
		old = append(old, task.File.FilePath())
	}
	rows, err := scan.ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Release()
	d.scratch++
	cat := d.catalog(t, optArg(td, "on", versionstore.DefaultBranch))
	scratchID := catalog.ToIdentifier(append(catalog.NamespaceFromIdent(tbl.Identifier()), fmt.Sprintf("scratch%d", d.scratch))...)
	scratch, err := cat.CreateTable(ctx, scratchID, tbl.Schema())
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
	if err := tx.ReplaceDataFiles(ctx, old, []string{stasks[0].File.FilePath()}, nil); err != nil {
		td.Fatalf(t, "compact: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		td.Fatalf(t, "compact: %v", err)
	}
}

// rollback on=BRANCH table=T: the table's main ref back to its first
// snapshot.
func (d *scenario) rollback(t *testing.T, td *datadriven.TestData) {
	tbl := d.load(t, td)
	snaps := tbl.Metadata().Snapshots()
	tx := tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(snaps[0].SnapshotID); err != nil {
		td.Fatalf(t, "rollback: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "rollback: %v", err)
	}
}

// alter on=BRANCH table=T (add-column=NAME | rename=OLD:NEW | promote=n |
// identifier=COLUMN | sort=id | spec=bucket | property=K:V)
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

// classify source=BRANCH target=BRANCH table=T: the classification of T
// for a merge of source into target, from the store's values at the
// merge base and both heads.
func (d *scenario) classifyTable(t *testing.T, td *datadriven.TestData) string {
	ctx := t.Context()
	st := d.srv.Store
	src, err := st.GetRef(arg(t, td, "source"))
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := st.GetRef(arg(t, td, "target"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := st.MergeBase(ctx, src.Head, tgt.Head)
	if err != nil {
		t.Fatal(err)
	}
	key := versionstore.ContentKey(strings.Split(arg(t, td, "table"), "."))
	at := func(h versionstore.Hash) *versionstore.Content {
		c, err := st.GetContent(ctx, h, key)
		if errors.Is(err, versionstore.ErrContentNotFound) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	res, err := d.classify.Classify(ctx, at(base), at(src.Head), at(tgt.Head))
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return render(res)
}

var longNumber = regexp.MustCompile(`[0-9]{6,}`)

// render writes the parts of a classification that do not depend on
// random ids and file names.
func render(r *classify.Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "class: %s\nreason: %s\n", r.Class, longNumber.ReplaceAllString(r.Reason, "<id>"))
	side := func(name string, s classify.Side) {
		if !s.Changed {
			fmt.Fprintf(&b, "%s: unchanged\n", name)
			return
		}
		var ops []string
		for _, sn := range s.Snapshots {
			ops = append(ops, sn.Operation)
		}
		var parts []string
		for _, p := range s.Partitions {
			parts = append(parts, p.String())
		}
		fmt.Fprintf(&b, "%s: snapshots [%s]; partitions [%s]\n", name, strings.Join(ops, " "), strings.Join(parts, " "))
		fmt.Fprintf(&b, "  data files +%d (%d records) -%d (%d records); delete files +%d -%d\n",
			s.DataFiles.AddedCount, s.DataFiles.AddedRecords, s.DataFiles.RemovedCount, s.DataFiles.RemovedRecords,
			s.DeleteFiles.AddedCount, s.DeleteFiles.RemovedCount)
		for _, c := range s.StructuralChanges {
			fmt.Fprintf(&b, "  structural: %s\n", c)
		}
		for i, sn := range s.Snapshots {
			if o := sn.FloeOperation; o != nil {
				var touched []string
				for _, p := range sn.Partitions {
					touched = append(touched, p.String())
				}
				fmt.Fprintf(&b, "  snapshot %d (%s) records %s of [%s], pinned %v with %d input(s), replayable %v; it touched [%s]\n",
					i+1, sn.Operation, o.Kind, strings.Join(o.Partitions, " "), o.Pinned, len(o.Sources), o.Replayable(), strings.Join(touched, " "))
			}
		}
	}
	side("source", r.Source)
	side("target", r.Target)
	if len(r.CommonPartitions) > 0 {
		var parts []string
		for _, p := range r.CommonPartitions {
			parts = append(parts, p.String())
		}
		fmt.Fprintf(&b, "common partitions: [%s]\n", strings.Join(parts, " "))
	}
	if len(r.ConflictingFiles) > 0 {
		fmt.Fprintf(&b, "conflicting files: %d\n", len(r.ConflictingFiles))
	}
	return b.String()
}
