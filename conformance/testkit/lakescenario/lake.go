package lakescenario

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/versionstore"
)

// Warehouse is the warehouse testserver serves; its branch B is the
// catalog "lake@B" (main is plain "lake").
const Warehouse = "lake"

// Schema is every scenario table's schema: ts is partitioned by day
// (partition field "day", see DaySpec); n is optional (rows may carry
// nulls in it), there to be promoted and renamed.
var Schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp, Required: true},
	iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
)

// DaySpec is every scenario table's partition spec: day(ts), field "day".
func DaySpec() iceberg.PartitionSpec {
	return iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "day", Transform: iceberg.DayTransform{}})
}

// Lake is one scenario's view of a floe server: iceberg-go's REST catalog
// on each branch it has been asked for, opened once and closed when the
// test ends, and the counters that keep row ids and scratch tables fresh
// across the scenario. It is not safe for concurrent use (scenario
// commands run one at a time).
type Lake struct {
	srv     *testserver.Server
	cats    *Catalogs
	nextID  int64
	scratch int
}

// New is a Lake over srv.
func New(srv *testserver.Server) *Lake {
	return &Lake{srv: srv, cats: NewCatalogs(srv.URL)}
}

// LastID is the last fresh row id the scenario's writes handed out (0
// before the first), so a model of the scenario can predict the ids of
// the rows a command adds.
func (l *Lake) LastID() int64 { return l.nextID }

// Catalog is the REST catalog on branch (lake@branch).
func (l *Lake) Catalog(t *testing.T, branch string) *rest.Catalog {
	t.Helper()
	return l.cats.On(t, branch)
}

// Load is the command's table=T on on=BRANCH (main by default).
func (l *Lake) Load(t *testing.T, td *datadriven.TestData) *table.Table {
	t.Helper()
	branch := OptArg(td, "on", versionstore.DefaultBranch)
	tbl, err := l.Catalog(t, branch).LoadTable(t.Context(), Ident(Arg(t, td, "table")))
	if err != nil {
		td.Fatalf(t, "load %s on %s: %v", Arg(t, td, "table"), branch, err)
	}
	return tbl
}

// CreateTable runs `table table=NS.NAME [on=BRANCH]`: a new table of
// Schema, partitioned by DaySpec, with props, in a new namespace if
// needed.
func (l *Lake) CreateTable(t *testing.T, td *datadriven.TestData, props iceberg.Properties) {
	ctx := t.Context()
	cat := l.Catalog(t, OptArg(td, "on", versionstore.DefaultBranch))
	id := Ident(Arg(t, td, "table"))
	ns := catalog.NamespaceFromIdent(id)
	if ok, _ := cat.CheckNamespaceExists(ctx, ns); !ok {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	spec := DaySpec()
	if _, err := cat.CreateTable(ctx, id, Schema, catalog.WithPartitionSpec(&spec), catalog.WithProperties(props)); err != nil {
		td.Fatalf(t, "create: %v", err)
	}
}

// Branch runs `branch NAME [from=BRANCH]`: a catalog branch at from's
// head (main's by default), made in the version store.
func (l *Lake) Branch(t *testing.T, td *datadriven.TestData) {
	from, err := l.srv.Store.GetRef(OptArg(td, "from", versionstore.DefaultBranch))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.srv.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: td.CmdArgs[0].Key, Type: versionstore.Branch, Target: from.Head}); err != nil {
		t.Fatal(err)
	}
}

// Drop runs `drop table=T [on=BRANCH]`.
func (l *Lake) Drop(t *testing.T, td *datadriven.TestData) {
	if err := l.Catalog(t, OptArg(td, "on", versionstore.DefaultBranch)).DropTable(t.Context(), Ident(Arg(t, td, "table"))); err != nil {
		td.Fatalf(t, "drop: %v", err)
	}
}

// scratchTable is a new, empty table beside tbl on branch, of tbl's
// schema, created with opts; each has a fresh name.
func (l *Lake) scratchTable(t *testing.T, branch string, tbl *table.Table, opts ...catalog.CreateTableOpt) *table.Table {
	l.scratch++
	id := catalog.ToIdentifier(append(catalog.NamespaceFromIdent(tbl.Identifier()), fmt.Sprintf("scratch%d", l.scratch))...)
	scratch, err := l.Catalog(t, branch).CreateTable(t.Context(), id, tbl.Schema(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return scratch
}
