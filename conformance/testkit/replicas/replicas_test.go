package replicas

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icetable "github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/rest/icebergrest"
)

var cluster *pgtest.Cluster

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(serveChild())
	}
	os.Exit(pgtest.Main(m, &cluster))
}

// lake is n floe replicas over one database and one warehouse.
type lake struct {
	t        testing.TB
	dsn      string
	wh       string // the shared warehouse's file:// URL
	replicas []*testserver.Server
}

func newLake(t testing.TB, n int) *lake {
	c := pgtest.Need(t, cluster)
	dsn, err := c.Schema(t.Context(), pgtest.SchemaName(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return newLakeOn(t, dsn, n)
}

// newLakeOn starts n replicas over the store dsn names ("" is Pebble, for
// one replica only).
func newLakeOn(t testing.TB, dsn string, n int) *lake {
	whDir := filepath.Join(t.TempDir(), "warehouse")
	l := &lake{t: t, dsn: dsn, wh: (&url.URL{Scheme: "file", Path: filepath.ToSlash(whDir)}).String()}
	for range n {
		l.replicas = append(l.replicas, l.start())
	}
	return l
}

// start starts one more replica.
func (l *lake) start() *testserver.Server {
	return testserver.Start(l.t, testserver.Options{
		Store: l.dsn,
		Iceberg: func(d *icebergrest.Deps) {
			d.Warehouses = []icebergrest.Warehouse{{Name: "lake", Location: l.wh}}
		},
	})
}

func (l *lake) catalog(i int) *rest.Catalog {
	l.t.Helper()
	c, err := rest.NewCatalog(l.t.Context(), "floe", l.replicas[i%len(l.replicas)].URL, rest.WithWarehouseLocation("lake"))
	if err != nil {
		l.t.Fatalf("catalog on replica %d: %v", i%len(l.replicas), err)
	}
	return c
}

var schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})

func (l *lake) createTable(cat *rest.Catalog, ns, name string) error {
	_, err := cat.CreateTable(l.t.Context(), catalog.ToIdentifier(ns, name), schema)
	return err
}

// appendIDs appends rows with the given ids as one snapshot. A commit the
// server could not apply because the table moved (409) is retried on the
// reloaded table, as engines do; anything else is returned.
func appendIDs(ctx context.Context, cat *rest.Catalog, id icetable.Identifier, ids []int64) (retries int, err error) {
	sc, err := icetable.SchemaToArrowSchema(schema, nil, false, false)
	if err != nil {
		return 0, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, v := range ids {
		b.Field(0).(*array.Int64Builder).Append(v)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	for attempt := 0; ; attempt++ {
		tbl, err := cat.LoadTable(ctx, id)
		if err != nil {
			return attempt, fmt.Errorf("load %v: %w", id, err)
		}
		_, err = tbl.AppendTable(ctx, at, 1024, nil)
		if err == nil {
			return attempt, nil
		}
		if !errors.Is(err, rest.ErrCommitFailed) || attempt == 20 {
			return attempt, fmt.Errorf("append to %v: %w", id, err)
		}
	}
}

// scanIDs returns the ids of a table, sorted.
func scanIDs(t *testing.T, cat *rest.Catalog, id icetable.Identifier) []int64 {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), id)
	if err != nil {
		t.Fatalf("load %v: %v", id, err)
	}
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatalf("scan %v: %v", id, err)
	}
	defer at.Release()
	var got []int64
	for _, ch := range at.Column(0).Data().Chunks() {
		got = append(got, ch.(*array.Int64).Int64Values()...)
	}
	slices.Sort(got)
	return got
}

func seq(from, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = from + int64(i)
	}
	return out
}

// TestDistinctTablesAcrossReplicas: clients on three replicas create and
// append to their own tables on one branch at once. Every commit must
// succeed (the replicas' rounds lose compare-and-swaps to each other and
// are rebased), and every replica must then read every table's rows.
func TestDistinctTablesAcrossReplicas(t *testing.T) {
	l := newLake(t, 3)
	ctx := t.Context()
	if err := l.catalog(0).CreateNamespace(ctx, catalog.ToIdentifier("db"), nil); err != nil {
		t.Fatal(err)
	}
	const clients, appends, rows = 9, 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			cat := l.catalog(c)
			name := fmt.Sprintf("t%02d", c)
			if err := l.createTable(cat, "db", name); err != nil {
				errs <- fmt.Errorf("client %d: create: %w", c, err)
				return
			}
			for a := range appends {
				// One client, one table: a 409 here would be a
				// cross-replica commit failing another's.
				tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier("db", name))
				if err == nil {
					_, err = appendOnce(ctx, tbl, seq(int64(a*rows), rows))
				}
				if err != nil {
					errs <- fmt.Errorf("client %d append %d: %w", c, a, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	want := seq(0, appends*rows)
	for r := range l.replicas {
		cat := l.catalog(r)
		for c := range clients {
			id := catalog.ToIdentifier("db", fmt.Sprintf("t%02d", c))
			if got := scanIDs(t, cat, id); !slices.Equal(got, want) {
				t.Fatalf("replica %d reads %v: ids %v, want %v", r, id, got, want)
			}
		}
	}
	var retries uint64
	for _, r := range l.replicas {
		retries += r.Store.Stats().BackendRetries.Load()
	}
	t.Logf("%d group-commit rounds were rebased after another replica moved main", retries)
}

func appendOnce(ctx context.Context, tbl *icetable.Table, ids []int64) (*icetable.Table, error) {
	sc, err := icetable.SchemaToArrowSchema(schema, nil, false, false)
	if err != nil {
		return nil, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, v := range ids {
		b.Field(0).(*array.Int64Builder).Append(v)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	return tbl.AppendTable(ctx, at, 1024, nil)
}

// TestOneTableAppendsLandOnce: clients on three replicas append to one
// table at once. Each append must land exactly once: none lost, none
// doubled, whether the server rebased it or the client retried it.
func TestOneTableAppendsLandOnce(t *testing.T) {
	l := newLake(t, 3)
	ctx := t.Context()
	cat0 := l.catalog(0)
	if err := cat0.CreateNamespace(ctx, catalog.ToIdentifier("db"), nil); err != nil {
		t.Fatal(err)
	}
	if err := l.createTable(cat0, "db", "events"); err != nil {
		t.Fatal(err)
	}
	id := catalog.ToIdentifier("db", "events")
	const clients, appends, rows = 6, 4, 3
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		retries int
	)
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			cat := l.catalog(c)
			for a := range appends {
				n, err := appendIDs(ctx, cat, id, seq(int64((c*appends+a)*rows), rows))
				mu.Lock()
				retries += n
				mu.Unlock()
				if err != nil {
					errs <- fmt.Errorf("client %d append %d: %w", c, a, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	want := seq(0, clients*appends*rows)
	for r := range l.replicas {
		if got := scanIDs(t, l.catalog(r), id); !slices.Equal(got, want) {
			t.Fatalf("replica %d: ids %v, want each of %v exactly once", r, got, want)
		}
	}
	t.Logf("%d appends were retried by their client after a 409", retries)
}
