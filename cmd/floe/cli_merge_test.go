package main

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icetable "github.com/apache/iceberg-go/table"
)

// TestMergeDryRunClassification: `floe merge --dry-run` of a branch that
// appended to the same partition as main reports what the merge would do,
// writing nothing: under the default rule (check, no identifier fields)
// the table is mergeable, shown with its classification per side and the
// snapshots the merge would cherry-pick; once the table's rule refuses
// overlaps, the dry run fails as the merge would, with the reason.
func TestMergeDryRunClassification(t *testing.T) {
	e := newCLIEnv(t)
	ctx := t.Context()
	open := func(wh string) *rest.Catalog {
		cat, err := rest.NewCatalog(ctx, "floe", "http://"+e.addr, rest.WithWarehouseLocation(wh))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cat.Close() })
		return cat
	}
	main := open("lake")
	if err := main.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp, Required: true})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "day", Transform: iceberg.DayTransform{}})
	id := catalog.ToIdentifier("ns", "events")
	if _, err := main.CreateTable(ctx, id, schema, catalog.WithPartitionSpec(&spec)); err != nil {
		t.Fatal(err)
	}
	appendRows := func(cat *rest.Catalog, day string, ids ...int64) {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := time.Parse(time.DateOnly, day)
		sc, err := icetable.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
		if err != nil {
			t.Fatal(err)
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		for _, n := range ids {
			b.Field(0).(*array.Int64Builder).Append(n)
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(d.Add(12 * time.Hour).UnixMicro()))
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
		defer at.Release()
		if _, err := tbl.AppendTable(ctx, at, 1024, nil); err != nil {
			t.Fatal(err)
		}
	}
	appendRows(main, "2026-08-19", 1)
	e.ok(t, "branch", "create", "etl")
	appendRows(open("lake@etl"), "2026-08-20", 2, 3, 4)
	appendRows(main, "2026-08-20", 5)

	// The warehouse's metadata files and manifest lists: a dry run
	// leaves none behind.
	files := func() int {
		t.Helper()
		n := 0
		err := filepath.WalkDir(strings.TrimPrefix(e.warehouse, "file://"), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if name := d.Name(); strings.HasSuffix(name, ".metadata.json") || strings.HasPrefix(name, "snap-") {
				n++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := files()
	head := e.ok(t, "log", "-n", "1", "main")

	out := e.ok(t, "merge", "etl", "--dry-run")
	t.Logf("merge --dry-run:\n%s", out)
	for _, want := range []string{
		"Dry run: merge etl into main would succeed",
		"Tables changed on both sides:",
		"TABLE      CLASS              SIDE    SNAPSHOTS   PARTITIONS      DATA-FILES",
		"ns.events  partition-overlap  source  1 (append)  day=2026-08-20  +1 (3 rows) -0 (0 rows)",
		"                              target  1 (append)  day=2026-08-20  +1 (1 rows) -0 (0 rows)",
		"ns.events: partition-overlap: both sides touched day=2026-08-20",
		"  merge: cherry-pick 1 snapshot(s) of the source onto the target",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("merge --dry-run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "VALUE_DIFFERS") {
		t.Errorf("merge --dry-run reports a mergeable table as a conflict:\n%s", out)
	}
	if n := files(); n != before {
		t.Errorf("the dry run left %d metadata files and manifest lists behind", n-before)
	}
	if now := e.ok(t, "log", "-n", "1", "main"); now != head {
		t.Errorf("the dry run moved main:\n%s\nwas\n%s", now, head)
	}

	tbl, err := main.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"floe.merge.partition-overlap": "refuse"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	before = files()
	out, errOut, code := e.floe(t, "merge", "etl", "--dry-run")
	checkFailure(t, []string{"merge", "etl", "--dry-run"}, errOut, code, "REFERENCE_CONFLICT", "ns.events")
	t.Logf("merge --dry-run (refused):\n%s%s", out, errOut)
	for _, want := range []string{
		"Would fail: merge etl into main",
		"ns.events  NORMAL          VALUE_DIFFERS",
		"ns.events: partition-overlap: both sides touched day=2026-08-20",
		"  merge: refuse: partition-overlap: both sides touched day=2026-08-20, and the table's rule (floe.merge.partition-overlap) is refuse",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("merge --dry-run lacks %q:\n%s", want, out)
		}
	}
	if n := files(); n != before {
		t.Errorf("the refused dry run left %d metadata files and manifest lists behind", n-before)
	}

	// A transplant of etl's commit, once the table allows overlaps: the
	// dry run says it cherry-picks the commit's snapshot, and the
	// transplant does; a second one has nothing to do.
	tbl, err = main.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	tx = tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"floe.merge.partition-overlap": "allow"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	commit := e.head("etl")
	out = e.ok(t, "transplant", commit, "--into", "main", "--from", "etl", "--dry-run")
	t.Logf("transplant --dry-run:\n%s", out)
	for _, want := range []string{
		"Dry run: transplant 1 commit(s) onto main would succeed",
		"ns.events: partition-overlap: both sides touched day=2026-08-20",
		"  merge: cherry-pick 1 snapshot(s) of the source onto the target",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("transplant --dry-run lacks %q:\n%s", want, out)
		}
	}
	if out := e.ok(t, "transplant", commit, "--into", "main", "--from", "etl"); !strings.HasPrefix(out, "Done: transplant 1 commit(s) onto main") {
		t.Errorf("transplant:\n%s", out)
	}
	if out := e.ok(t, "transplant", commit, "--into", "main", "--from", "etl"); !strings.HasPrefix(out, "Nothing to do: transplant 1 commit(s) onto main") {
		t.Errorf("transplant again:\n%s", out)
	}
}
