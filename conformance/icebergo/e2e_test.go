package icebergo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/versionstore"
)

var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
)

// retryProps make iceberg-go retry its own commits on 409, which the
// concurrent tests rely on; the library default is no retries.
var retryProps = iceberg.Properties{
	table.CommitNumRetriesKey:          "100",
	table.CommitMinRetryWaitMsKey:      "2",
	table.CommitMaxRetryWaitMsKey:      "50",
	table.CommitTotalRetryTimeoutMsKey: "60000",
}

// row is one row of testSchema.
type row struct {
	id     int64
	region string
	amount float64
}

func arrowTable(t *testing.T, tbl *table.Table, rows []row) arrow.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		b.Field(1).(*array.StringBuilder).Append(r.region)
		b.Field(2).(*array.Float64Builder).Append(r.amount)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

func appendRows(t *testing.T, tbl *table.Table, rows []row) *table.Table {
	t.Helper()
	at := arrowTable(t, tbl, rows)
	defer at.Release()
	out, err := tbl.AppendTable(t.Context(), at, 1024, nil)
	if err != nil {
		t.Fatalf("append to %v: %v", tbl.Identifier(), err)
	}
	return out
}

// scanRows reads a table (or one of its refs) back, sorted by id.
func scanRows(t *testing.T, tbl *table.Table, ref string) []row {
	t.Helper()
	scan := tbl.Scan()
	if ref != "" {
		var err error
		if scan, err = scan.UseRef(ref); err != nil {
			t.Fatalf("use ref %s: %v", ref, err)
		}
	}
	at, err := scan.ToArrowTable(t.Context())
	if err != nil {
		t.Fatalf("scan %v: %v", tbl.Identifier(), err)
	}
	defer at.Release()
	var out []row
	rdr := array.NewTableReader(at, 0)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		regions := rec.Column(1).(*array.String)
		amounts := rec.Column(2).(*array.Float64)
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, row{ids.Value(i), regions.Value(i), amounts.Value(i)})
		}
	}
	slices.SortFunc(out, func(a, b row) int { return int(a.id - b.id) })
	return out
}

func rowsEqual(t *testing.T, got, want []row) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("rows differ:\n got %v\nwant %v", got, want)
	}
}

func createTable(t *testing.T, cat *rest.Catalog, ident table.Identifier, opts ...catalog.CreateTableOpt) *table.Table {
	t.Helper()
	tbl, err := cat.CreateTable(t.Context(), ident, testSchema, opts...)
	if err != nil {
		t.Fatalf("create %v: %v", ident, err)
	}
	return tbl
}

// TestAppendAndScanPartitioned writes Arrow data into a partitioned table
// through floe and reads it back.
func TestAppendAndScanPartitioned(t *testing.T) {
	t.Parallel()
	f := startFloe(t)
	cat := f.catalog(t, "lake")
	ctx := t.Context()
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("sales"), iceberg.Properties{"owner": "e2e"}); err != nil {
		t.Fatal(err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	tbl := createTable(t, cat, catalog.ToIdentifier("sales", "orders"), catalog.WithPartitionSpec(&spec))
	if tbl.Spec().IsUnpartitioned() {
		t.Fatal("created table is unpartitioned")
	}
	first := []row{{1, "eu", 1.5}, {2, "us", 2.5}, {3, "eu", 3.5}}
	second := []row{{4, "apac", 4.5}, {5, "us", 5.5}}
	tbl = appendRows(t, tbl, first)
	tbl = appendRows(t, tbl, second)

	loaded, err := cat.LoadTable(ctx, catalog.ToIdentifier("sales", "orders"))
	if err != nil {
		t.Fatal(err)
	}
	rowsEqual(t, scanRows(t, loaded, ""), append(slices.Clone(first), second...))
	if n := len(loaded.Metadata().Snapshots()); n != 2 {
		t.Fatalf("table has %d snapshots, want 2", n)
	}
	var history []string
	for e := range loaded.Metadata().PreviousFiles() {
		history = append(history, e.MetadataFile)
	}
	if len(history) != 2 {
		t.Fatalf("metadata-log has %d entries, want 2: %v", len(history), history)
	}

	// A client loading only ref heads gets one snapshot and reads the same
	// rows.
	refsCat, err := rest.NewCatalog(ctx, "floe", "http://"+f.addr, rest.WithWarehouseLocation("lake"),
		rest.WithAdditionalProps(iceberg.Properties{"snapshot-loading-mode": "refs"}))
	if err != nil {
		t.Fatal(err)
	}
	defer refsCat.Close()
	refsTbl, err := refsCat.LoadTable(ctx, catalog.ToIdentifier("sales", "orders"))
	if err != nil {
		t.Fatal(err)
	}
	rowsEqual(t, scanRows(t, refsTbl, ""), append(slices.Clone(first), second...))
	res, err := http.Get("http://" + f.addr + "/v1/lake/namespaces/sales/tables/orders?snapshots=refs")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var refsOnly struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &refsOnly); err != nil {
		t.Fatal(err)
	}
	refsMeta, err := table.ParseMetadataBytes(refsOnly.Metadata)
	if err != nil {
		t.Fatalf("snapshots=refs metadata does not parse: %v", err)
	}
	if n := len(refsMeta.Snapshots()); n != 1 || refsMeta.CurrentSnapshot().SnapshotID != tbl.CurrentSnapshot().SnapshotID {
		t.Fatalf("snapshots=refs kept %d snapshots", n)
	}

	// The catalog history records each Iceberg operation.
	main, err := f.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	commits, _, err := f.store.Log(ctx, main.Head, versionstore.LogOptions{Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	wantOps := []string{"append", "append", "create", "create-namespace"}
	for i, c := range commits {
		if got := c.Properties["iceberg.operation"]; got != wantOps[i] {
			t.Errorf("commit %d: operation %q, want %q (message %q)", i, got, wantOps[i], c.Message)
		}
	}
	if got := commits[0].Message; got != "iceberg: append to sales.orders" {
		t.Errorf("message %q", got)
	}
	if got := commits[0].Properties["iceberg.snapshot-id"]; got != strconv.FormatInt(tbl.CurrentSnapshot().SnapshotID, 10) {
		t.Errorf("snapshot id property %q, want %d", got, tbl.CurrentSnapshot().SnapshotID)
	}
}

// TestCatalogBranchIsolation writes through warehouse lake@dev and checks
// that main does not see it, then that a tag is read-only.
func TestCatalogBranchIsolation(t *testing.T) {
	t.Parallel()
	f := startFloe(t)
	ctx := t.Context()
	mainCat := f.catalog(t, "lake")
	if err := mainCat.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	base := createTable(t, mainCat, catalog.ToIdentifier("ns", "shared"))
	base = appendRows(t, base, []row{{1, "eu", 1}})

	head, err := f.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "dev", Type: versionstore.Branch, Target: head.Head}); err != nil {
		t.Fatal(err)
	}
	devCat := f.catalog(t, "lake@dev")

	devTbl, err := devCat.LoadTable(ctx, catalog.ToIdentifier("ns", "shared"))
	if err != nil {
		t.Fatal(err)
	}
	appendRows(t, devTbl, []row{{2, "us", 2}})
	only := createTable(t, devCat, catalog.ToIdentifier("ns", "dev_only"))
	appendRows(t, only, []row{{3, "apac", 3}})

	// main: one row, no dev_only.
	mainTbl, err := mainCat.LoadTable(ctx, catalog.ToIdentifier("ns", "shared"))
	if err != nil {
		t.Fatal(err)
	}
	rowsEqual(t, scanRows(t, mainTbl, ""), []row{{1, "eu", 1}})
	if ok, err := mainCat.CheckTableExists(ctx, catalog.ToIdentifier("ns", "dev_only")); err != nil || ok {
		t.Fatalf("dev_only visible on main: %v %v", ok, err)
	}
	// dev: both rows and the new table.
	devTbl, err = devCat.LoadTable(ctx, catalog.ToIdentifier("ns", "shared"))
	if err != nil {
		t.Fatal(err)
	}
	rowsEqual(t, scanRows(t, devTbl, ""), []row{{1, "eu", 1}, {2, "us", 2}})
	if ok, err := devCat.CheckTableExists(ctx, catalog.ToIdentifier("ns", "dev_only")); err != nil || !ok {
		t.Fatalf("dev_only missing on dev: %v %v", ok, err)
	}

	// A tag reads like a branch and refuses writes.
	devHead, err := f.store.GetRef("dev")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "v1", Type: versionstore.Tag, Target: devHead.Head}); err != nil {
		t.Fatal(err)
	}
	tagCat := f.catalog(t, "lake@v1")
	tagTbl, err := tagCat.LoadTable(ctx, catalog.ToIdentifier("ns", "shared"))
	if err != nil {
		t.Fatal(err)
	}
	rowsEqual(t, scanRows(t, tagTbl, ""), []row{{1, "eu", 1}, {2, "us", 2}})
	at := arrowTable(t, tagTbl, []row{{9, "eu", 9}})
	defer at.Release()
	if _, err := tagTbl.AppendTable(ctx, at, 1024, nil); !errors.Is(err, rest.ErrForbidden) {
		t.Fatalf("append through a tag: %v, want forbidden", err)
	}
	if err := tagCat.CreateNamespace(ctx, catalog.ToIdentifier("x"), nil); !errors.Is(err, rest.ErrForbidden) {
		t.Fatalf("create namespace through a tag: %v, want forbidden", err)
	}
	_ = base
}

// TestTableBranch uses Iceberg's own table-level branches (refs inside the
// metadata), which floe must leave working as Iceberg defines them.
func TestTableBranch(t *testing.T) {
	t.Parallel()
	f := startFloe(t)
	ctx := t.Context()
	cat := f.catalog(t, "lake")
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	tbl := createTable(t, cat, catalog.ToIdentifier("ns", "events"))
	tbl = appendRows(t, tbl, []row{{1, "eu", 1}})

	tx := tbl.NewTransactionOnBranch("audit")
	at := arrowTable(t, tbl, []row{{2, "us", 2}})
	defer at.Release()
	if err := tx.AppendTable(ctx, at, 1024, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := cat.LoadTable(ctx, catalog.ToIdentifier("ns", "events"))
	if err != nil {
		t.Fatal(err)
	}
	rowsEqual(t, scanRows(t, loaded, ""), []row{{1, "eu", 1}})
	rowsEqual(t, scanRows(t, loaded, "audit"), []row{{1, "eu", 1}, {2, "us", 2}})
	if loaded.Metadata().SnapshotByName("audit") == nil {
		t.Fatal("table branch audit missing")
	}

	main, err := f.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.store.ReadCommit(ctx, main.Head)
	if err != nil {
		t.Fatal(err)
	}
	if c.Properties["iceberg.ref"] != "audit" || c.Properties["iceberg.operation"] != "append" {
		t.Fatalf("commit properties %v", c.Properties)
	}
	_ = tbl
}

// TestMultiTableTransactionAtomic commits two tables in one transaction,
// then shows that a transaction with one failing requirement changes
// nothing at all.
func TestMultiTableTransactionAtomic(t *testing.T) {
	t.Parallel()
	f := startFloe(t)
	ctx := t.Context()
	cat := f.catalog(t, "lake")
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	t1 := createTable(t, cat, catalog.ToIdentifier("ns", "t1"))
	// t2 opts out of zero-retry appends, so that its stale append below
	// is a real conflict (rebase_test.go has the rebased transaction).
	t2 := createTable(t, cat, catalog.ToIdentifier("ns", "t2"),
		catalog.WithProperties(iceberg.Properties{"floe.commit.rebase-appends": "false"}))

	// A successful transaction: append to t1, set a property on t2.
	mtx, err := catalog.NewMultiTableTransaction(cat)
	if err != nil {
		t.Fatal(err)
	}
	tx1 := t1.NewTransaction()
	at := arrowTable(t, t1, []row{{1, "eu", 1}})
	defer at.Release()
	if err := tx1.AppendTable(ctx, at, 1024, nil); err != nil {
		t.Fatal(err)
	}
	tx2 := t2.NewTransaction()
	if err := tx2.SetProperties(iceberg.Properties{"stage": "one"}); err != nil {
		t.Fatal(err)
	}
	if err := mtx.AddTransaction(tx1); err != nil {
		t.Fatal(err)
	}
	if err := mtx.AddTransaction(tx2); err != nil {
		t.Fatal(err)
	}
	tables, err := mtx.CommitAndReload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t1, t2 = tables[0], tables[1]
	rowsEqual(t, scanRows(t, t1, ""), []row{{1, "eu", 1}})
	if t2.Properties()["stage"] != "one" {
		t.Fatalf("t2 properties %v", t2.Properties())
	}
	main, _ := f.store.GetRef(versionstore.DefaultBranch)
	c, err := f.store.ReadCommit(ctx, main.Head)
	if err != nil {
		t.Fatal(err)
	}
	if c.Properties["iceberg.operation"] != "transaction" || c.Properties["iceberg.tables"] != "ns.t1,ns.t2" {
		t.Fatalf("transaction commit properties %v", c.Properties)
	}

	// t2 moves on behind the transaction's back, so its append's
	// assert-ref-snapshot-id fails; t1's change must not land either.
	stale2 := t2
	if _, err := cat.LoadTable(ctx, catalog.ToIdentifier("ns", "t2")); err != nil {
		t.Fatal(err)
	}
	appendRows(t, t2, []row{{10, "us", 10}})
	before1 := t1.MetadataLocation()

	mtx, err = catalog.NewMultiTableTransaction(cat)
	if err != nil {
		t.Fatal(err)
	}
	tx1 = t1.NewTransaction()
	if err := tx1.AppendTable(ctx, at, 1024, nil); err != nil {
		t.Fatal(err)
	}
	tx2 = stale2.NewTransaction()
	at2 := arrowTable(t, stale2, []row{{11, "us", 11}})
	defer at2.Release()
	if err := tx2.AppendTable(ctx, at2, 1024, nil); err != nil {
		t.Fatal(err)
	}
	if err := mtx.AddTransaction(tx1); err != nil {
		t.Fatal(err)
	}
	if err := mtx.AddTransaction(tx2); err != nil {
		t.Fatal(err)
	}
	if err := mtx.Commit(ctx); !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("transaction with a stale table: %v, want commit failed", err)
	}
	after1, err := cat.LoadTable(ctx, catalog.ToIdentifier("ns", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	if after1.MetadataLocation() != before1 {
		t.Fatalf("t1 changed by a failed transaction: %s -> %s", before1, after1.MetadataLocation())
	}
	rowsEqual(t, scanRows(t, after1, ""), []row{{1, "eu", 1}})
	after2, err := cat.LoadTable(ctx, catalog.ToIdentifier("ns", "t2"))
	if err != nil {
		t.Fatal(err)
	}
	rowsEqual(t, scanRows(t, after2, ""), []row{{10, "us", 10}})
}

// TestConcurrentTablesOneBranch commits to 32 tables from 32 goroutines
// at once: the store rebases commits of different keys, so none may fail.
func TestConcurrentTablesOneBranch(t *testing.T) {
	t.Parallel()
	f := startFloe(t)
	ctx := t.Context()
	cat := f.catalog(t, "lake")
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	const n = 32
	tables := make([]*table.Table, n)
	for i := range tables {
		tables[i] = createTable(t, cat, catalog.ToIdentifier("ns", fmt.Sprintf("t%02d", i)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, tbl := range tables {
		wg.Go(func() {
			at := arrowTable(t, tbl, []row{{int64(i), "eu", float64(i)}})
			defer at.Release()
			if _, err := tbl.AppendTable(ctx, at, 1024, nil); err != nil {
				errs <- fmt.Errorf("table %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range tables {
		tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier("ns", fmt.Sprintf("t%02d", i)))
		if err != nil {
			t.Fatal(err)
		}
		rowsEqual(t, scanRows(t, tbl, ""), []row{{int64(i), "eu", float64(i)}})
	}
}

// TestConcurrentAppendsOneTable has 8 clients append to one table at once.
// Losers get 409 and iceberg-go retries on a fresh head; every append
// must land exactly once.
func TestConcurrentAppendsOneTable(t *testing.T) {
	t.Parallel()
	f := startFloe(t)
	ctx := t.Context()
	setup := f.catalog(t, "lake")
	if err := setup.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	createTable(t, setup, catalog.ToIdentifier("ns", "hot"), catalog.WithProperties(retryProps))

	const clients, appends = 8, 3
	var wg sync.WaitGroup
	errs := make(chan error, clients*appends)
	for c := range clients {
		cat := f.catalog(t, "lake")
		wg.Go(func() {
			for k := range appends {
				if err := appendOnce(ctx, cat, int64(c*100+k)); err != nil {
					errs <- fmt.Errorf("client %d append %d: %w", c, k, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	tbl, err := setup.LoadTable(ctx, catalog.ToIdentifier("ns", "hot"))
	if err != nil {
		t.Fatal(err)
	}
	var want []row
	for c := range clients {
		for k := range appends {
			want = append(want, row{int64(c*100 + k), "eu", 1})
		}
	}
	rowsEqual(t, scanRows(t, tbl, ""), want)
	if n := len(tbl.Metadata().Snapshots()); n != clients*appends {
		t.Fatalf("%d snapshots, want %d", n, clients*appends)
	}
}

func appendOnce(ctx context.Context, cat *rest.Catalog, id int64) error {
	tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier("ns", "hot"))
	if err != nil {
		return err
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(id)
	b.Field(1).(*array.StringBuilder).Append("eu")
	b.Field(2).(*array.Float64Builder).Append(1)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	_, err = tbl.AppendTable(ctx, at, 1024, nil)
	return err
}
