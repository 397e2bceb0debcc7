package icebergo

import (
	"errors"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/view"
)

// TestViewLifecycle creates, loads, replaces, renames and drops a view
// through iceberg-go, and checks that views and tables share one name
// space.
func TestViewLifecycle(t *testing.T) {
	t.Parallel()
	f := startFloe(t)
	ctx := t.Context()
	cat := f.catalog(t, "lake")
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	v1, err := view.NewVersionFromSQL(1, 0, "SELECT id FROM ns.t", catalog.ToIdentifier("ns"))
	if err != nil {
		t.Fatal(err)
	}
	ident := catalog.ToIdentifier("ns", "v")
	created, err := cat.CreateView(ctx, ident, v1, sc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateView(ctx, ident, v1, sc); !errors.Is(err, catalog.ErrViewAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	createTable(t, cat, catalog.ToIdentifier("ns", "t"))
	if _, err := cat.CreateView(ctx, catalog.ToIdentifier("ns", "t"), v1, sc); !errors.Is(err, catalog.ErrViewAlreadyExists) {
		t.Fatalf("view over a table: %v", err)
	}
	if ok, err := cat.CheckViewExists(ctx, ident); err != nil || !ok {
		t.Fatalf("exists: %v %v", ok, err)
	}
	var views []string
	for id, err := range cat.ListViews(ctx, catalog.ToIdentifier("ns")) {
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, id[len(id)-1])
	}
	if len(views) != 1 || views[0] != "v" {
		t.Fatalf("views %v", views)
	}

	v2, err := view.NewVersionFromSQL(2, 0, "SELECT id + 1 AS id FROM ns.t", catalog.ToIdentifier("ns"))
	if err != nil {
		t.Fatal(err)
	}
	replaced, err := cat.UpdateView(ctx, ident,
		[]view.Requirement{view.AssertViewUUID(created.Metadata().ViewUUID())},
		[]view.Update{view.NewAddViewVersionUpdate(v2), view.NewSetCurrentVersionUpdate(-1)})
	if err != nil {
		t.Fatal(err)
	}
	if replaced.Metadata().CurrentVersionID() != 2 {
		t.Fatalf("current version %d", replaced.Metadata().CurrentVersionID())
	}
	loaded, err := cat.LoadView(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if got := loaded.Metadata().CurrentVersion().Representations[0].Sql; got != "SELECT id + 1 AS id FROM ns.t" {
		t.Fatalf("sql %q", got)
	}

	renamed := catalog.ToIdentifier("ns", "v_renamed")
	if _, err := cat.RenameView(ctx, ident, renamed); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.LoadView(ctx, ident); !errors.Is(err, catalog.ErrNoSuchView) {
		t.Fatalf("old name: %v", err)
	}
	if err := cat.DropView(ctx, renamed); err != nil {
		t.Fatal(err)
	}
	if ok, err := cat.CheckViewExists(ctx, renamed); err != nil || ok {
		t.Fatalf("exists after drop: %v %v", ok, err)
	}
}
