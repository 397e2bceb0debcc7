package icebergtable_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// localWarehouse is a warehouse in a temporary directory, with a cache.
func localWarehouse(t *testing.T) (*icebergtable.Warehouse, *icebergtable.MetadataCache, string) {
	t.Helper()
	dir := t.TempDir()
	cache := icebergtable.NewMetadataCache(icebergtable.DefaultMetadataCacheBytes)
	root := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: root + "/", Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if wh.Location() != root || wh.Name() != "lake" {
		t.Fatalf("warehouse %s at %s, want lake at %s", wh.Name(), wh.Location(), root)
	}
	return wh, cache, dir
}

func newTable(t *testing.T, wh *icebergtable.Warehouse, props iceberg.Properties) table.Metadata {
	t.Helper()
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	id := uuid.New()
	meta, err := table.NewMetadataWithUUID(schema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder,
		wh.DefaultTableLocation([]string{"ns"}, "t", id.String()), props, id)
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

// withAppend is meta with one more snapshot on main, as an engine's append
// makes it, including characters encoding/json escapes.
func withAppend(t *testing.T, meta table.Metadata, prevLoc string, snapshotID int64) table.Metadata {
	t.Helper()
	b, err := table.MetadataBuilderFromBase(meta, prevLoc)
	if err != nil {
		t.Fatal(err)
	}
	schemaID := 0
	snap := table.Snapshot{
		SnapshotID: snapshotID, SequenceNumber: meta.LastSequenceNumber() + 1, TimestampMs: time.Now().UnixMilli(),
		ManifestList: meta.Location() + "/metadata/snap-<&>.avro", SchemaID: &schemaID,
		Summary: &table.Summary{Operation: table.OpAppend, Properties: map[string]string{"note": "<a & b>"}},
	}
	if err := b.AddSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	if err := b.SetSnapshotRef(table.MainBranch, snapshotID, table.BranchRef); err != nil {
		t.Fatal(err)
	}
	next, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// TestWrittenMetadataEqualsParsed writes table metadata files and checks
// that what WriteTableMetadata returns (and caches) without parsing is
// what parsing the file gives, and that ReadTableMetadata serves it.
func TestWrittenMetadataEqualsParsed(t *testing.T) {
	wh, cache, _ := localWarehouse(t)
	meta := newTable(t, wh, iceberg.Properties{"comment": "<&>"})
	prev := ""
	var prevFile *icebergtable.MetadataFile
	for i := range 3 {
		if i > 0 {
			meta = withAppend(t, meta, prev, int64(100+i))
		}
		loc, err := wh.NewTableMetadataLocation(meta, prev)
		if err != nil {
			t.Fatal(err)
		}
		if want := "/metadata/0000" + string(rune('0'+i)) + "-"; !strings.Contains(loc, want) {
			t.Fatalf("metadata file %d at %s, want a name with %s", i, loc, want)
		}
		// Each file is written from the previous one, whose encodings
		// of unchanged snapshots it copies: the bytes must still be
		// json.Marshal's.
		written, err := wh.WriteTableMetadataFrom(t.Context(), loc, meta, prevFile)
		if err != nil {
			t.Fatal(err)
		}
		if want, err := json.Marshal(meta); err != nil || !bytes.Equal(written.Raw, want) {
			t.Fatalf("%s: written\n%s\nwant json.Marshal's\n%s", loc, written.Raw, want)
		}
		raw, err := wh.ReadFile(t.Context(), loc)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := icebergtable.ParseTableMetadata(loc, raw)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(parsed.Raw, written.Raw) || !bytes.Equal(parsed.JSON, written.JSON) {
			t.Errorf("%s: written bytes differ from the file", loc)
		}
		if !parsed.Metadata.Equals(written.Metadata) {
			t.Errorf("%s: the written metadata is not equal to the parsed file", loc)
		}
		read, err := wh.ReadTableMetadata(t.Context(), loc)
		if err != nil {
			t.Fatal(err)
		}
		if read != written {
			t.Errorf("%s: read back from storage, not from the cache", loc)
		}
		prev, prevFile = loc, written
	}
	if cache.Len() != 3 {
		t.Fatalf("%d files cached, want 3", cache.Len())
	}
}

// TestReadTableMetadataParsesForeignFiles reads files floe did not write:
// indented, unescaped and gzipped, as Java may write them.
func TestReadTableMetadataParsesForeignFiles(t *testing.T) {
	wh, _, dir := localWarehouse(t)
	meta := newTable(t, wh, iceberg.Properties{"comment": "<&>"})
	compact, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, compact, "", "  "); err != nil {
		t.Fatal(err)
	}
	raw := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(indented.String())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"v1.metadata.json": []byte(raw), "v2.gz.metadata.json": gz.Bytes()} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		loc := wh.Location() + "/" + name
		f, err := wh.ReadTableMetadata(t.Context(), loc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(f.Raw) != raw || !bytes.Equal(f.JSON, compact) || !f.Metadata.Equals(meta) {
			t.Errorf("%s: read %d raw bytes, JSON %d bytes; want %d and %d", name, len(f.Raw), len(f.JSON), len(raw), len(compact))
		}
		// The next file of a Hadoop-named one follows its number.
		next, err := wh.NewTableMetadataLocation(f.Metadata, loc)
		if err != nil {
			t.Fatal(err)
		}
		if want := "/metadata/0000" + string(name[1]+1) + "-"; !strings.Contains(next, want) {
			t.Errorf("next file after %s is %s, want a name with %s", name, next, want)
		}
	}
}

func TestNewTableMetadataLocationStaysInTheWarehouse(t *testing.T) {
	wh, _, _ := localWarehouse(t)
	inside := newTable(t, wh, iceberg.Properties{icebergtable.PropMetadataPath: wh.Location() + "/elsewhere/"})
	loc, err := wh.NewTableMetadataLocation(inside, "")
	if err != nil || !strings.HasPrefix(loc, wh.Location()+"/elsewhere/00000-") {
		t.Fatalf("metadata location %q, %v; want one in %s/elsewhere", loc, err, wh.Location())
	}
	outside := newTable(t, wh, iceberg.Properties{icebergtable.PropMetadataPath: "file:///tmp/escape"})
	if loc, err := wh.NewTableMetadataLocation(outside, ""); err == nil {
		t.Fatalf("metadata location %q outside the warehouse accepted", loc)
	}
}

func TestNewViewMetadataLocationHonoursMetadataPath(t *testing.T) {
	wh, _, _ := localWarehouse(t)
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	newView := func(props iceberg.Properties) view.Metadata {
		vm, err := view.NewMetadata(&view.Version{VersionID: 1, SchemaID: 0, TimestampMS: time.Now().UnixMilli(),
			Summary:          map[string]string{"engine-name": "test"},
			Representations:  []view.Representation{view.NewRepresentation("select 1", "spark")},
			DefaultNamespace: []string{"ns"}}, schema, wh.DefaultTableLocation([]string{"ns"}, "v", "u"), props)
		if err != nil {
			t.Fatal(err)
		}
		return vm
	}
	loc, err := wh.NewViewMetadataLocation(newView(iceberg.Properties{icebergtable.PropMetadataPath: wh.Location() + "/custom/"}), "")
	if err != nil || !strings.HasPrefix(loc, wh.Location()+"/custom/00000-") {
		t.Fatalf("view metadata location %q, %v; want one in %s/custom", loc, err, wh.Location())
	}
	if loc, err := wh.NewViewMetadataLocation(newView(iceberg.Properties{icebergtable.PropMetadataPath: "file:///tmp/escape"}), ""); err == nil {
		t.Fatalf("view metadata location %q outside the warehouse accepted", loc)
	}
}

// TestContentRoundTrip maps a table's and a view's metadata files to
// content values and reads them back through those values.
func TestContentRoundTrip(t *testing.T) {
	wh, _, _ := localWarehouse(t)
	meta := newTable(t, wh, nil)
	loc, err := wh.NewTableMetadataLocation(meta, "")
	if err != nil {
		t.Fatal(err)
	}
	first, err := wh.WriteTableMetadata(t.Context(), loc, meta)
	if err != nil {
		t.Fatal(err)
	}
	meta = withAppend(t, meta, loc, 7)
	loc, err = wh.NewTableMetadataLocation(meta, loc)
	if err != nil {
		t.Fatal(err)
	}
	f, err := wh.WriteTableMetadata(t.Context(), loc, meta)
	if err != nil {
		t.Fatal(err)
	}
	c := icebergtable.TableContent("cid", f)
	want := versionstore.Content{
		Type: versionstore.IcebergTable, ID: "cid", MetadataLocation: loc, UUID: meta.TableUUID().String(),
		SnapshotID: 7, SchemaID: 0, SpecID: 0, SortOrderID: 0, LastSequenceNumber: 1,
	}
	if c.Type != want.Type || c.ID != want.ID || c.MetadataLocation != want.MetadataLocation || c.UUID != want.UUID ||
		c.SnapshotID != want.SnapshotID || c.SchemaID != want.SchemaID || c.LastSequenceNumber != want.LastSequenceNumber {
		t.Fatalf("table content %+v, want %+v", *c, want)
	}
	if c := icebergtable.TableContent("", first); c.SnapshotID != -1 {
		t.Errorf("a table without snapshots has snapshot id %d, want -1", c.SnapshotID)
	}
	got, err := wh.ReadTable(t.Context(), c)
	if err != nil || got != f {
		t.Fatalf("ReadTable: %v", err)
	}

	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	vm, err := view.NewMetadata(&view.Version{VersionID: 1, SchemaID: 0, TimestampMS: time.Now().UnixMilli(),
		Summary:          map[string]string{"engine-name": "test"},
		Representations:  []view.Representation{view.NewRepresentation("select 1", "spark")},
		DefaultNamespace: []string{"ns"}}, schema, wh.DefaultTableLocation([]string{"ns"}, "v", "u"), nil)
	if err != nil {
		t.Fatal(err)
	}
	vloc, err := wh.NewViewMetadataLocation(vm, "")
	if err != nil {
		t.Fatal(err)
	}
	vf, err := wh.WriteViewMetadata(t.Context(), vloc, vm)
	if err != nil {
		t.Fatal(err)
	}
	vc := icebergtable.ViewContent("vid", vf)
	if vc.Type != versionstore.IcebergView || vc.MetadataLocation != vloc || vc.VersionID != 1 || vc.UUID != vm.ViewUUID().String() {
		t.Fatalf("view content %+v", *vc)
	}
	back, err := wh.ReadView(t.Context(), vc)
	if err != nil || back.Location != vloc || !bytes.Equal(back.Raw, vf.Raw) {
		t.Fatalf("ReadView: %+v, %v", back, err)
	}
	if _, err := wh.ReadTable(t.Context(), vc); err == nil {
		t.Error("ReadTable read a view")
	}
	if _, err := wh.ReadView(t.Context(), c); err == nil {
		t.Error("ReadView read a table")
	}
}

func TestRemoveFile(t *testing.T) {
	wh, _, dir := localWarehouse(t)
	loc := wh.Location() + "/a.metadata.json"
	if err := wh.WriteFile(t.Context(), loc, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := wh.RemoveFile(t.Context(), loc); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.metadata.json")); !os.IsNotExist(err) {
		t.Fatalf("file still there: %v", err)
	}
	if err := wh.RemoveFile(t.Context(), loc); err != nil {
		t.Fatalf("removing a missing file: %v", err)
	}
}

// TestWriteFileCreatesNewFilesOnly writes a local file into a directory
// that does not exist yet, then again at the same location: the second
// write fails and the first file keeps its content.
func TestWriteFileCreatesNewFilesOnly(t *testing.T) {
	wh, _, dir := localWarehouse(t)
	loc := wh.Location() + "/ns/t/metadata/00000-x.metadata.json"
	if err := wh.WriteFile(t.Context(), loc, []byte(`{"first":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := wh.WriteFile(t.Context(), loc, []byte(`{}`)); err == nil {
		t.Fatal("a second write of the same file succeeded")
	}
	got, err := os.ReadFile(filepath.Join(dir, "ns", "t", "metadata", "00000-x.metadata.json"))
	if err != nil || string(got) != `{"first":true}` {
		t.Fatalf("the file holds %q (%v) after a refused write", got, err)
	}
}
