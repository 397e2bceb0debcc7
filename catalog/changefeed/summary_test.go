package changefeed_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// tableMetadata is an Iceberg v2 metadata file with one append snapshot.
const tableMetadata = `{
  "format-version": 2,
  "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
  "location": "%LOC%",
  "last-sequence-number": 1,
  "last-updated-ms": 1767225600000,
  "last-column-id": 1,
  "current-schema-id": 0,
  "schemas": [{"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": true, "type": "long"}]}],
  "default-spec-id": 0,
  "partition-specs": [{"spec-id": 0, "fields": []}],
  "last-partition-id": 999,
  "default-sort-order-id": 0,
  "sort-orders": [{"order-id": 0, "fields": []}],
  "properties": {},
  "current-snapshot-id": 77,
  "refs": {"main": {"snapshot-id": 77, "type": "branch"}},
  "snapshots": [{
    "snapshot-id": 77, "sequence-number": 1, "timestamp-ms": 1767225600000,
    "manifest-list": "%LOC%/metadata/snap-77.avro",
    "summary": {"operation": "append", "added-records": "42", "added-data-files": "3", "changed-partition-count": "1"},
    "schema-id": 0
  }],
  "snapshot-log": [],
  "metadata-log": []
}`

// TestSnapshotSummaries reads a table.updated event's snapshot summary
// from a real metadata file in a warehouse, and leaves it out, event
// still there, when the file is gone.
func TestSnapshotSummaries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	loc := "file://" + filepath.ToSlash(dir) + "/db/t"
	meta := filepath.Join(dir, "db", "t", "metadata", "00001.metadata.json")
	if err := os.MkdirAll(filepath.Dir(meta), 0o750); err != nil {
		t.Fatal(err)
	}
	body := []byte(strings.ReplaceAll(tableMetadata, "%LOC%", loc))
	if err := os.WriteFile(meta, body, 0o600); err != nil {
		t.Fatal(err)
	}
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: "file://" + filepath.ToSlash(dir)})
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, t.TempDir(), nil)
	main, _ := s.GetRef("main")
	res, err := s.Commit(t.Context(), versionstore.CommitRequest{Branch: "main", Expected: main.Head, Committer: "t",
		Operations: []versionstore.Operation{
			{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"db"}, Content: &versionstore.Content{Type: versionstore.Namespace}},
			{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"db", "t"}, Content: &versionstore.Content{Type: versionstore.IcebergTable,
				MetadataLocation: loc + "/metadata/00001.metadata.json", SnapshotID: 77}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	read := func() *changefeed.IcebergChange {
		f := changefeed.New(s, changefeed.Options{Summaries: changefeed.WarehouseSummaries(icebergtable.Warehouses{wh})})
		page, err := f.Read(t.Context(), changefeed.Query{Types: []changefeed.Type{changefeed.TableCreated}})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) != 1 || page.Events[0].Commit != res.Commit.Hash.String() {
			t.Fatalf("events: %+v", page.Events)
		}
		return page.Events[0].Content.Iceberg
	}
	ic := read()
	if ic.Summary["operation"] != "append" || ic.Summary["added-records"] != "42" || ic.Summary["added-data-files"] != "3" || ic.SnapshotID != 77 {
		t.Fatalf("iceberg change: %+v", ic)
	}
	if err := os.Remove(meta); err != nil {
		t.Fatal(err)
	}
	wh, err = icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: "file://" + filepath.ToSlash(dir)}) // a cold cache
	if err != nil {
		t.Fatal(err)
	}
	if ic := read(); ic.Summary != nil || ic.SnapshotID != 77 {
		t.Fatalf("with the metadata file gone: %+v", ic)
	}
}
