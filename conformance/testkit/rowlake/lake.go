package rowlake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
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

// Warehouse is the warehouse the server serves; its ref R is the catalog
// "lake@R" (main is plain "lake").
const Warehouse = "lake"

// Schema is every table's schema: an id per row, and a value.
var Schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String},
)

// Ident is the table identifier of a dotted name, NS.T.
func Ident(name string) table.Identifier {
	return catalog.ToIdentifier(strings.Split(name, ".")...)
}

// Lake is the tables a test writes and the rows it expects of them. It
// opens a catalog per ref on first use and closes them when the test
// ends (or at CloseCatalogs). It is not safe for concurrent use.
type Lake struct {
	t    *testing.T
	url  string
	cats map[string]*rest.Catalog
	// Rows[ref][table] are the ids a full scan of table on ref must
	// return; ScanAll checks every one.
	Rows   map[string]map[string][]int64
	nextID int64
}

// New is an empty lake on the server at serverURL.
func New(t *testing.T, serverURL string) *Lake {
	l := &Lake{t: t, url: serverURL, cats: map[string]*rest.Catalog{}, Rows: map[string]map[string][]int64{}}
	t.Cleanup(l.CloseCatalogs)
	return l
}

// Connect points the lake at the server at serverURL (the same data,
// served again after a restart): open catalogs are closed.
func (l *Lake) Connect(serverURL string) {
	l.CloseCatalogs()
	l.url = serverURL
}

// CloseCatalogs closes the open catalogs; they open again on next use.
func (l *Lake) CloseCatalogs() {
	for _, c := range l.cats {
		_ = c.Close()
	}
	clear(l.cats)
}

// LastID is the id of the last row appended (0 before the first): ids
// are handed out in order, one per row, across all tables.
func (l *Lake) LastID() int64 { return l.nextID }

func prefix(ref string) string {
	if ref == versionstore.DefaultBranch {
		return Warehouse
	}
	return Warehouse + "@" + ref
}

// Catalog is the REST catalog on ref (lake@ref).
func (l *Lake) Catalog(ref string) *rest.Catalog {
	l.t.Helper()
	if c, ok := l.cats[ref]; ok {
		return c
	}
	wh := prefix(ref)
	c, err := rest.NewCatalog(l.t.Context(), "floe", l.url, rest.WithWarehouseLocation(wh))
	if err != nil {
		l.t.Fatalf("catalog %s: %v", wh, err)
	}
	l.cats[ref] = c
	return c
}

// Expect is the expected rows of ref's tables.
func (l *Lake) Expect(ref string) map[string][]int64 {
	if l.Rows[ref] == nil {
		l.Rows[ref] = map[string][]int64{}
	}
	return l.Rows[ref]
}

// ExpectCopy makes ref to expect what from holds (to was made at from's
// head).
func (l *Lake) ExpectCopy(to, from string) {
	for k, v := range l.Expect(from) {
		l.Expect(to)[k] = slices.Clone(v)
	}
}

// Create makes table name (NS.T) on branch ref, in a new namespace if
// needed, deleting rows by position delete files (merge-on-read).
func (l *Lake) Create(ref, name string) {
	l.t.Helper()
	ctx, cat, id := l.t.Context(), l.Catalog(ref), Ident(name)
	ns := catalog.NamespaceFromIdent(id)
	if ok, _ := cat.CheckNamespaceExists(ctx, ns); !ok {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
			l.t.Fatal(err)
		}
	}
	props := iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}
	if _, err := cat.CreateTable(ctx, id, Schema, catalog.WithProperties(props)); err != nil {
		l.t.Fatalf("create %s on %s: %v", name, ref, err)
	}
	l.Expect(ref)[name] = []int64{}
}

// Load is table name on ref.
func (l *Lake) Load(ref, name string) *table.Table {
	l.t.Helper()
	tbl, err := l.Catalog(ref).LoadTable(l.t.Context(), Ident(name))
	if err != nil {
		l.t.Fatalf("load %s on %s: %v", name, ref, err)
	}
	return tbl
}

// AppendRows appends n new rows (fresh ids) to a table on branch ref.
func (l *Lake) AppendRows(ref, name string, n int) {
	l.t.Helper()
	tbl := l.Load(ref, name)
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
	l.Expect(ref)[name] = append(l.Expect(ref)[name], ids...)
}

// DeleteID deletes the row with id from a table on ref: a new position
// delete file.
func (l *Lake) DeleteID(ref, name string, id int64) {
	l.t.Helper()
	tx := l.Load(ref, name).NewTransaction()
	if err := tx.Delete(l.t.Context(), iceberg.EqualTo(iceberg.Reference("id"), id), nil); err != nil {
		l.t.Fatalf("delete from %s on %s: %v", name, ref, err)
	}
	if _, err := tx.Commit(l.t.Context()); err != nil {
		l.t.Fatalf("delete from %s on %s: %v", name, ref, err)
	}
	l.Expect(ref)[name] = slices.DeleteFunc(l.Expect(ref)[name], func(v int64) bool { return v == id })
}

// ExpireAllButLast removes every snapshot but the current one from the
// table's metadata on ref (a metadata change; no file is deleted), and
// says how many it removed. It is sent by hand as the spec spells it:
// iceberg-go's ExpireSnapshots refuses tables whose gc.enabled is false,
// as floe's are, before asking.
func (l *Lake) ExpireAllButLast(ref, name string) int {
	l.t.Helper()
	tbl := l.Load(ref, name)
	cur := tbl.CurrentSnapshot()
	var ids []int64
	for _, s := range tbl.Metadata().Snapshots() {
		if cur == nil || s.SnapshotID != cur.SnapshotID {
			ids = append(ids, s.SnapshotID)
		}
	}
	if len(ids) == 0 {
		return 0
	}
	body, err := json.Marshal(map[string]any{
		"requirements": []any{},
		"updates":      []any{map[string]any{"action": "remove-snapshots", "snapshot-ids": ids}},
	})
	if err != nil {
		l.t.Fatal(err)
	}
	id := Ident(name)
	path := "/v1/" + url.PathEscape(prefix(ref)) + "/namespaces/" + url.PathEscape(strings.Join(id[:len(id)-1], "\x1f")) +
		"/tables/" + url.PathEscape(id[len(id)-1])
	req, err := http.NewRequestWithContext(l.t.Context(), http.MethodPost, l.url+path, bytes.NewReader(body))
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
	return len(ids)
}

// Drop drops a table on ref.
func (l *Lake) Drop(ref, name string) {
	l.t.Helper()
	if err := l.Catalog(ref).DropTable(l.t.Context(), Ident(name)); err != nil {
		l.t.Fatalf("drop %s on %s: %v", name, ref, err)
	}
	delete(l.Expect(ref), name)
}

// ScanAll scans every expected table on every expected ref in full with
// iceberg-go and checks the rows are exactly the expected ones.
func (l *Lake) ScanAll() {
	l.t.Helper()
	for ref, tables := range l.Rows {
		for name, want := range tables {
			at, err := l.Load(ref, name).Scan().ToArrowTable(l.t.Context())
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
			if w := slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
				l.t.Fatalf("scan %s on %s: ids %v, want %v", name, ref, got, w)
			}
		}
	}
}
