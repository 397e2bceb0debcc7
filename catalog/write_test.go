package catalog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// testWrite is a write on main in warehouse "lake".
var testWrite = Write{Warehouse: "lake", Branch: versionstore.DefaultBranch, Committer: "test"}

// refusal checks that err is a refusal of kind with message msg ("" for
// any message).
func refusal(t *testing.T, what string, err error, kind Kind, msg string) {
	t.Helper()
	ce, ok := errors.AsType[*Error](err)
	if !ok || ce.Kind != kind || (msg != "" && ce.Msg != msg) {
		t.Errorf("%s: %v, want a %v refusal %q", what, err, kind, msg)
	}
}

func testSchema() *iceberg.Schema {
	return iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
}

func ident(ns, name string) Identifier { return Identifier{Namespace: []string{ns}, Name: name} }

// testView is a view version over testSchema.
func testView() *view.Version {
	return &view.Version{VersionID: 1, SchemaID: 0, TimestampMS: 1, Summary: map[string]string{"engine-name": "test"},
		Representations: []view.Representation{view.NewRepresentation("select 1", "spark")}, DefaultNamespace: []string{"ns"}}
}

// TestNamespaceWrites drives namespaces below the APIs: a create, a
// property update, a no-op update, a drop, and each refusal with its Kind
// and the words the APIs answer with.
func TestNamespaceWrites(t *testing.T) {
	s := newTestService(t)
	ctx := t.Context()
	var recorded int
	w := testWrite
	w.Record = func(*Written) *versionstore.Record { recorded++; return nil }
	done, err := s.CreateNamespace(ctx, w, []string{"ns", "child"}, map[string]string{"a": "1"})
	if err != nil || done.Commit == nil || done.Op != "create-namespace" || done.Content.Properties["a"] != "1" || recorded != 1 {
		t.Fatalf("create: %+v, %v (recorded %d)", done, err, recorded)
	}
	up, err := s.UpdateNamespaceProperties(ctx, testWrite, []string{"ns", "child"}, []string{"a", "gone"}, map[string]string{"b": "2"})
	if err != nil || up.Commit == nil {
		t.Fatalf("update: %+v, %v", up, err)
	}
	if p := up.Properties; len(p.Updated) != 1 || len(p.Removed) != 1 || len(p.Missing) != 1 || p.Missing[0] != "gone" {
		t.Errorf("update did %+v", p)
	}
	again, err := s.UpdateNamespaceProperties(ctx, testWrite, []string{"ns", "child"}, nil, map[string]string{"b": "2"})
	if err != nil || again.Commit != nil {
		t.Errorf("a no-op update committed: %+v, %v", again, err)
	}
	if _, err := s.CreateTable(ctx, testWrite, TableCreate{ID: ident("ns", "t"), Schema: testSchema()}); err != nil {
		t.Fatal(err)
	}

	_, err = s.CreateNamespace(ctx, testWrite, nil, nil)
	refusal(t, "no levels", err, Invalid, "cannot create a namespace with no levels")
	_, err = s.CreateNamespace(ctx, testWrite, []string{"ns"}, nil)
	refusal(t, "exists", err, AlreadyExists, "Namespace already exists: ns")
	_, err = s.CreateNamespace(ctx, testWrite, []string{"ns", "t"}, nil)
	refusal(t, "onto a table", err, AlreadyExists, "Cannot create namespace ns.t: a table with the same name exists")
	_, err = s.CreateNamespace(ctx, testWrite, []string{"nope", "child"}, nil)
	refusal(t, "no parent", err, NoSuchNamespace, "Namespace does not exist: nope")
	_, err = s.UpdateNamespaceProperties(ctx, testWrite, []string{"ns"}, []string{"k"}, map[string]string{"k": "v"})
	refusal(t, "set and removed", err, Unprocessable, "Cannot update and remove the same properties: [k]")
	_, err = s.UpdateNamespaceProperties(ctx, testWrite, []string{"nope"}, nil, map[string]string{"k": "v"})
	refusal(t, "update no namespace", err, NoSuchNamespace, "Namespace does not exist: nope")
	_, err = s.DropNamespace(ctx, testWrite, []string{"ns"})
	refusal(t, "not empty", err, NamespaceNotEmpty, "Namespace not empty: ns is not empty, it still holds tables, views or namespaces")
	_, err = s.DropNamespace(ctx, testWrite, []string{"nope"})
	refusal(t, "drop no namespace", err, NoSuchNamespace, "Namespace does not exist: nope")
	_, err = s.DropNamespace(ctx, Write{Branch: "gone"}, []string{"ns"})
	refusal(t, "no branch", err, NoSuchBranch, "Branch gone no longer exists")

	if _, err := s.DropNamespace(ctx, testWrite, []string{"ns", "child"}); err != nil {
		t.Errorf("drop: %v", err)
	}
}

// TestTableAndViewWrites drives creates, registrations, renames and
// drops of tables and views below the APIs, and their refusals.
func TestTableAndViewWrites(t *testing.T) {
	s := newTestService(t)
	ctx := t.Context()
	created, err := s.CreateTable(ctx, testWrite, TableCreate{ID: ident("ns", "t"), Schema: testSchema()})
	if err != nil || created.Commit == nil || created.Op != "create" || created.Table == nil {
		t.Fatalf("create table: %+v, %v", created, err)
	}
	staged, err := s.CreateTable(ctx, testWrite, TableCreate{ID: ident("ns", "staged"), Schema: testSchema(), Stage: true})
	if err != nil || staged.Commit != nil || staged.StagedTable == nil {
		t.Fatalf("staged create: %+v, %v", staged, err)
	}
	v, err := s.CreateView(ctx, testWrite, ViewCreate{ID: ident("ns", "v"), Schema: testSchema(), Version: testView()})
	if err != nil || v.Op != "create-view" || v.View == nil {
		t.Fatalf("create view: %+v, %v", v, err)
	}
	admitErr := errors.New("no credentials for you")
	for name, tc := range map[string]struct {
		create TableCreate
		kind   Kind
		msg    string
	}{
		"no schema":       {TableCreate{ID: ident("ns", "x")}, Invalid, "cannot create table ns.x: the schema is missing"},
		"exists":          {TableCreate{ID: ident("ns", "t"), Schema: testSchema()}, AlreadyExists, "Table already exists: ns.t"},
		"onto a view":     {TableCreate{ID: ident("ns", "v"), Schema: testSchema()}, AlreadyExists, "View with same name already exists: ns.v"},
		"no namespace":    {TableCreate{ID: ident("nope", "x"), Schema: testSchema()}, NoSuchNamespace, "Namespace does not exist: nope"},
		"outside":         {TableCreate{ID: ident("ns", "x"), Schema: testSchema(), Location: "file:///elsewhere/x"}, Invalid, ""},
		"shared files on": {TableCreate{ID: ident("ns", "x"), Schema: testSchema(), Properties: map[string]string{"gc.enabled": "true"}}, Invalid, ""},
	} {
		_, err := s.CreateTable(ctx, testWrite, tc.create)
		refusal(t, "create table, "+name, err, tc.kind, tc.msg)
	}
	if _, err := s.CreateTable(ctx, testWrite, TableCreate{ID: ident("ns", "x"), Schema: testSchema(),
		Admit: func(table.Metadata) error { return admitErr }}); !errors.Is(err, admitErr) {
		t.Errorf("create refused by Admit: %v", err)
	}
	_, err = s.CreateView(ctx, testWrite, ViewCreate{ID: ident("ns", "t"), Schema: testSchema(), Version: testView()})
	refusal(t, "view onto a table", err, AlreadyExists, "Table with same name already exists: ns.t")
	_, err = s.CreateView(ctx, testWrite, ViewCreate{ID: ident("ns", "w"), Schema: testSchema()})
	refusal(t, "view without version", err, Invalid, "cannot create view ns.w: schema and view-version are required")

	// Registration of the table's own file under another name, and onto
	// an existing name.
	loc := created.Table.Location
	reg, err := s.RegisterTable(ctx, testWrite, ident("ns", "copy"), loc, false, nil)
	if err != nil || reg.Op != "register" || reg.Table.Location != loc || len(reg.TableBody) == 0 {
		t.Fatalf("register: %+v, %v", reg, err)
	}
	_, err = s.RegisterTable(ctx, testWrite, ident("ns", "copy"), loc, false, nil)
	refusal(t, "register onto a table", err, AlreadyExists, "Table already exists: ns.copy")
	if _, err := s.RegisterTable(ctx, testWrite, ident("ns", "copy"), loc, true, nil); err != nil {
		t.Errorf("register with overwrite: %v", err)
	}
	_, err = s.RegisterTable(ctx, testWrite, ident("ns", "y"), loc, false, func(*icebergtable.MetadataFile) error { return admitErr })
	refusal(t, "register refused by admit", err, Invalid, "cannot register table ns.y: no credentials for you")
	_, err = s.RegisterTable(ctx, testWrite, ident("ns", "y"), "file:///elsewhere/m.json", false, nil)
	refusal(t, "register outside", err, Invalid, "")
	_, err = s.RegisterView(ctx, testWrite, ident("ns", "w2"), v.View.Location)
	if err != nil {
		t.Errorf("register view: %v", err)
	}

	// Renames.
	for _, tc := range []struct {
		rename   func(context.Context, Write, Identifier, Identifier) (*Written, error)
		src, dst Identifier
		kind     Kind
		msg      string
	}{
		{s.RenameTable, ident("ns", "t"), ident("ns", "t"), AlreadyExists, "Table already exists: ns.t"},
		{s.RenameTable, ident("ns", "t"), ident("ns", "v"), AlreadyExists, "Cannot rename ns.t to ns.v. View already exists"},
		{s.RenameView, ident("ns", "v"), ident("ns", "t"), AlreadyExists, "Cannot rename ns.v to ns.t. Table already exists"},
		{s.RenameTable, ident("ns", "nope"), ident("ns", "z"), NoSuchTable, "Table does not exist: ns.nope"},
		{s.RenameTable, ident("ns", "v"), ident("ns", "z"), NoSuchTable, "Table does not exist: ns.v"},
		{s.RenameTable, ident("ns", "t"), ident("nope", "z"), NoSuchNamespace, "Namespace does not exist: nope"},
	} {
		_, err := tc.rename(ctx, testWrite, tc.src, tc.dst)
		refusal(t, "rename "+tc.src.String()+" to "+tc.dst.String(), err, tc.kind, tc.msg)
	}
	renamed, err := s.RenameTable(ctx, testWrite, ident("ns", "copy"), ident("ns", "moved"))
	if err != nil || renamed.Op != "rename" {
		t.Fatalf("rename: %+v, %v", renamed, err)
	}

	// Drops.
	_, err = s.DropView(ctx, testWrite, ident("ns", "t"))
	refusal(t, "drop a table as a view", err, NoSuchView, "View does not exist: ns.t")
	dropped, err := s.DropTable(ctx, testWrite, ident("ns", "moved"), true)
	if err != nil || dropped.Op != "drop" || dropped.Content.MetadataLocation != loc {
		t.Fatalf("drop: %+v, %v", dropped, err)
	}
	if !strings.HasSuffix(dropped.Message, "(purge requested; no files deleted)") {
		t.Errorf("drop with purge: %q", dropped.Message)
	}
	_, err = s.DropTable(ctx, testWrite, ident("ns", "moved"), false)
	refusal(t, "drop again", err, NoSuchTable, "Table does not exist: ns.moved")
	un, err := s.UnregisterTable(ctx, testWrite, ident("ns", "t"))
	if err != nil || un.Op != "unregister" || len(un.TableBody) == 0 {
		t.Errorf("unregister: %+v, %v", un, err)
	}
}

// TestCommitView commits a view change below the APIs: a property set, a
// no-op, and the refusals.
func TestCommitView(t *testing.T) {
	s := newTestService(t)
	ctx := t.Context()
	v, err := s.CreateView(ctx, testWrite, ViewCreate{ID: ident("ns", "v"), Schema: testSchema(), Version: testView()})
	if err != nil {
		t.Fatal(err)
	}
	set := ViewChange{ID: ident("ns", "v"), Updates: view.Updates{view.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})}}
	done, err := s.CommitView(ctx, testWrite, set)
	if err != nil || done.Commit == nil || done.Op != "replace-view" || done.View.Location == v.View.Location {
		t.Fatalf("commit: %+v, %v", done, err)
	}
	again, err := s.CommitView(ctx, testWrite, ViewChange{ID: set.ID})
	if err != nil || again.Commit != nil || again.View.Location != done.View.Location {
		t.Errorf("a no-op commit: %+v, %v", again, err)
	}
	_, err = s.CommitView(ctx, testWrite, ViewChange{ID: ident("ns", "nope")})
	refusal(t, "no view", err, NoSuchView, "View does not exist: ns.nope")
	_, err = s.CommitView(ctx, testWrite, ViewChange{ID: ident("ns", "v"), Requirements: view.Requirements{view.AssertViewUUID(uuid.New())}})
	refusal(t, "requirement", err, CommitFailed, "")
	_, err = s.CommitView(ctx, testWrite, ViewChange{ID: ident("ns", "v"), Updates: view.Updates{view.NewSetLocationUpdate("file:///elsewhere/v")}})
	refusal(t, "location outside", err, Invalid, "")
}
