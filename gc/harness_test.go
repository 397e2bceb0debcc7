package gc_test

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
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

	"github.com/floe-catalog/floe/gc"
	"github.com/floe-catalog/floe/icebergtable"
	"github.com/floe-catalog/floe/testkit/testserver"
	"github.com/floe-catalog/floe/versionstore"
)

var schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String},
)

// lake is a real floe with tables written by iceberg-go on catalog
// branches, and the rows every (ref, table) is expected to hold.
type lake struct {
	t    *testing.T
	srv  *testserver.Server
	whs  icebergtable.Warehouses
	cats map[string]*rest.Catalog
	// rows[ref][table] are the ids a full scan must return.
	rows   map[string]map[string][]int64
	nextID int64
}

func newLake(t *testing.T) *lake {
	return newLakeAt(t, testserver.Options{}, nil)
}

// newLakeAt is newLake with the server's options given, and the
// warehouse the collector sweeps; nil is the server's local one.
func newLakeAt(t *testing.T, opts testserver.Options, wh *icebergtable.Config) *lake {
	srv := testserver.Start(t, opts)
	cfg := icebergtable.Config{Name: "lake", Location: srv.Warehouse}
	if wh != nil {
		cfg = *wh
	}
	w, err := icebergtable.OpenWarehouse(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &lake{t: t, srv: srv, whs: icebergtable.Warehouses{w}, cats: map[string]*rest.Catalog{},
		rows: map[string]map[string][]int64{}}
}

func (l *lake) catalog(ref string) *rest.Catalog {
	l.t.Helper()
	if c, ok := l.cats[ref]; ok {
		return c
	}
	wh := "lake"
	if ref != versionstore.DefaultBranch {
		wh += "@" + ref
	}
	c, err := rest.NewCatalog(l.t.Context(), "floe", l.srv.URL, rest.WithWarehouseLocation(wh))
	if err != nil {
		l.t.Fatalf("catalog %s: %v", wh, err)
	}
	l.t.Cleanup(func() { _ = c.Close() })
	l.cats[ref] = c
	return c
}

func ident(name string) table.Identifier { return catalog.ToIdentifier(strings.Split(name, ".")...) }

func (l *lake) expect(ref string) map[string][]int64 {
	if l.rows[ref] == nil {
		l.rows[ref] = map[string][]int64{}
	}
	return l.rows[ref]
}

// create makes table name (NS.T) on branch ref, in a new namespace if
// needed, deleting rows by position delete files (merge-on-read).
func (l *lake) create(ref, name string) {
	l.t.Helper()
	ctx := l.t.Context()
	cat := l.catalog(ref)
	id := ident(name)
	ns := catalog.NamespaceFromIdent(id)
	if ok, _ := cat.CheckNamespaceExists(ctx, ns); !ok {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
			l.t.Fatal(err)
		}
	}
	props := iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}
	if _, err := cat.CreateTable(ctx, id, schema, catalog.WithProperties(props)); err != nil {
		l.t.Fatalf("create %s on %s: %v", name, ref, err)
	}
	l.expect(ref)[name] = []int64{}
}

func (l *lake) load(ref, name string) *table.Table {
	l.t.Helper()
	tbl, err := l.catalog(ref).LoadTable(l.t.Context(), ident(name))
	if err != nil {
		l.t.Fatalf("load %s on %s: %v", name, ref, err)
	}
	return tbl
}

// appendRows appends n new rows to a table on branch ref.
func (l *lake) appendRows(ref, name string, n int) {
	l.t.Helper()
	tbl := l.load(ref, name)
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		l.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	var ids []int64
	for range n {
		l.nextID++
		ids = append(ids, l.nextID)
		b.Field(0).(*array.Int64Builder).Append(l.nextID)
		b.Field(1).(*array.StringBuilder).Append("row")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	if _, err := tbl.AppendTable(l.t.Context(), at, 1024, nil); err != nil {
		l.t.Fatalf("append to %s on %s: %v", name, ref, err)
	}
	l.expect(ref)[name] = append(l.expect(ref)[name], ids...)
}

// deleteID deletes the row with id from a table on ref: a new position
// delete file.
func (l *lake) deleteID(ref, name string, id int64) {
	l.t.Helper()
	tx := l.load(ref, name).NewTransaction()
	if err := tx.Delete(l.t.Context(), iceberg.EqualTo(iceberg.Reference("id"), id), nil); err != nil {
		l.t.Fatalf("delete from %s on %s: %v", name, ref, err)
	}
	if _, err := tx.Commit(l.t.Context()); err != nil {
		l.t.Fatalf("delete from %s on %s: %v", name, ref, err)
	}
	l.expect(ref)[name] = slices.DeleteFunc(l.expect(ref)[name], func(v int64) bool { return v == id })
}

// expireAllButLast removes every snapshot but the current one from the
// table's metadata on ref (a metadata change; no file is deleted). It is
// sent by hand as the spec spells it: iceberg-go's ExpireSnapshots refuses
// tables whose gc.enabled is false, as floe's are, before asking.
func (l *lake) expireAllButLast(ref, name string) {
	l.t.Helper()
	tbl := l.load(ref, name)
	cur := tbl.CurrentSnapshot()
	var ids []int64
	for _, s := range tbl.Metadata().Snapshots() {
		if cur == nil || s.SnapshotID != cur.SnapshotID {
			ids = append(ids, s.SnapshotID)
		}
	}
	if len(ids) == 0 {
		return
	}
	body, err := json.Marshal(map[string]any{
		"requirements": []any{},
		"updates":      []any{map[string]any{"action": "remove-snapshots", "snapshot-ids": ids}},
	})
	if err != nil {
		l.t.Fatal(err)
	}
	prefix := "lake"
	if ref != versionstore.DefaultBranch {
		prefix += "@" + ref
	}
	id := ident(name)
	path := "/v1/" + url.PathEscape(prefix) + "/namespaces/" + url.PathEscape(strings.Join(id[:len(id)-1], "\x1f")) +
		"/tables/" + url.PathEscape(id[len(id)-1])
	req, err := http.NewRequestWithContext(l.t.Context(), http.MethodPost, l.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		l.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatalf("expire snapshots of %s on %s: %v", name, ref, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		l.t.Fatalf("expire snapshots of %s on %s: %d %s", name, ref, resp.StatusCode, msg)
	}
}

func (l *lake) drop(ref, name string) {
	l.t.Helper()
	if err := l.catalog(ref).DropTable(l.t.Context(), ident(name)); err != nil {
		l.t.Fatalf("drop %s on %s: %v", name, ref, err)
	}
	delete(l.expect(ref), name)
}

// branch makes a branch (or tag) at from's head, expecting what from holds.
func (l *lake) branch(name, from string, typ versionstore.RefType) {
	l.t.Helper()
	f, err := l.srv.Store.GetRef(from)
	if err != nil {
		l.t.Fatal(err)
	}
	l.refAt(name, f.Head, typ)
	for k, v := range l.expect(from) {
		l.expect(name)[k] = slices.Clone(v)
	}
}

func (l *lake) refAt(name string, at versionstore.Hash, typ versionstore.RefType) {
	l.t.Helper()
	if _, err := l.srv.Store.CreateRef(l.t.Context(), versionstore.CreateRefRequest{Name: name, Type: typ, Target: at}); err != nil {
		l.t.Fatal(err)
	}
}

func (l *lake) deleteRef(name string) {
	l.t.Helper()
	r, err := l.srv.Store.GetRef(name)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := l.srv.Store.DeleteRef(l.t.Context(), versionstore.DeleteRefRequest{Name: name, Expected: r.Head}); err != nil {
		l.t.Fatal(err)
	}
	delete(l.rows, name)
}

// scanAll scans every expected table on every expected ref in full with
// iceberg-go and checks the rows are exactly the expected ones.
func (l *lake) scanAll() {
	l.t.Helper()
	for ref, tables := range l.rows {
		for name, want := range tables {
			tbl := l.load(ref, name)
			at, err := tbl.Scan().ToArrowTable(l.t.Context())
			if err != nil {
				l.t.Fatalf("scan %s on %s: %v", name, ref, err)
			}
			var got []int64
			for i := range int(at.NumCols()) {
				if at.Schema().Field(i).Name != "id" {
					continue
				}
				for _, ch := range at.Column(i).Data().Chunks() {
					got = append(got, ch.(*array.Int64).Int64Values()...)
				}
			}
			at.Release()
			slices.Sort(got)
			w := slices.Sorted(slices.Values(want))
			if !slices.Equal(got, w) {
				l.t.Fatalf("scan %s on %s: ids %v, want %v", name, ref, got, w)
			}
		}
	}
}

// age sets every file of the warehouse to be d old, as if written then.
func (l *lake) age(d time.Duration) {
	l.t.Helper()
	old := time.Now().Add(-d)
	err := filepath.WalkDir(l.srv.WarehouseDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		l.t.Fatal(err)
	}
}

// files lists the warehouse's files.
func (l *lake) files() map[string]bool {
	l.t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(l.srv.WarehouseDir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			out[p] = true
		}
		return err
	})
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

// tableDir is the local directory of a table on ref.
func (l *lake) tableDir(ref, name string) string {
	l.t.Helper()
	return strings.TrimPrefix(l.load(ref, name).Location(), "file://")
}

func (l *lake) collector(opts gc.Options) *gc.Collector {
	l.t.Helper()
	opts.Store, opts.Warehouses = l.srv.Store, l.whs
	if opts.TempDir == "" {
		opts.TempDir = l.t.TempDir()
	}
	c, err := gc.New(opts)
	if err != nil {
		l.t.Fatal(err)
	}
	return c
}

func under(files map[string]bool, dir string) int {
	n := 0
	for f := range files {
		if strings.HasPrefix(f, dir+"/") {
			n++
		}
	}
	return n
}
