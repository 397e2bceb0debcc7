package nessie_test

import (
	"encoding/json"
	"net/http"
	"net/url"
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

// appendDay appends one row at noon of day to the table on the catalog
// branch warehouse names (lake, lake@dev).
func (e *testEnv) appendDay(warehouse string, id icetable.Identifier, day string, rowID int64) {
	e.t.Helper()
	ctx := e.t.Context()
	cat, err := rest.NewCatalog(ctx, "floe", e.url, rest.WithWarehouseLocation(warehouse))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	d, err := time.Parse(time.DateOnly, day)
	if err != nil {
		e.t.Fatal(err)
	}
	sc, err := icetable.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		e.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(rowID)
	b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(d.Add(12 * time.Hour).UnixMicro()))
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	if _, err := tbl.AppendTable(ctx, at, 1024, nil); err != nil {
		e.t.Fatal(err)
	}
}

// TestDryRunMergeClassifiesTables: a dry-run merge of a branch that
// appended to other partitions than main reports what the real merge
// would do: the table is no conflict (the merge engine cherry-picks it),
// and Nessie clients get Nessie's shape; with floe-classification=true
// the detail carries floe's classification and what the merge does
// (floeMerge). The real merge then lands as the dry run said.
func TestDryRunMergeClassifiesTables(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	cat, err := rest.NewCatalog(ctx, "floe", e.url, rest.WithWarehouseLocation("lake"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp, Required: true})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "day", Transform: iceberg.DayTransform{}})
	id := catalog.ToIdentifier("ns", "events")
	if _, err := cat.CreateTable(ctx, id, schema, catalog.WithPartitionSpec(&spec)); err != nil {
		t.Fatal(err)
	}
	e.appendDay("lake", id, "2026-08-19", 1)
	e.branch("dev", "main")
	e.appendDay("lake@dev", id, "2026-08-20", 2)
	e.appendDay("lake", id, "2026-08-21", 3)

	mainHead := e.head("main")
	body := map[string]any{"fromRefName": "dev", "fromHash": e.head("dev"), "dryRun": true, "returnConflictAsResult": true}
	mergePath := func(q string) string {
		return "/trees/" + url.PathEscape("main@"+e.head("main")) + "/history/merge" + q
	}
	type detail struct {
		Key                key             `json:"key"`
		Conflict           *conflict       `json:"conflict"`
		FloeClassification json.RawMessage `json:"floeClassification"`
	}
	var plain struct {
		WasSuccessful bool     `json:"wasSuccessful"`
		Details       []detail `json:"details"`
	}
	e.ok(http.MethodPost, mergePath(""), body, http.StatusOK, &plain)
	if !plain.WasSuccessful || len(plain.Details) != 1 || plain.Details[0].Conflict != nil {
		t.Fatalf("dry run: %+v", plain)
	}
	if plain.Details[0].FloeClassification != nil {
		t.Fatalf("a Nessie client got floe's document: %s", plain.Details[0].FloeClassification)
	}
	if e.head("main") != mainHead {
		t.Fatal("the dry run moved main")
	}

	var full struct {
		Details []struct {
			FloeClassification *struct {
				Key    []string `json:"key"`
				Class  string   `json:"class"`
				Source struct {
					Partitions []struct {
						SpecID int    `json:"specId"`
						Path   string `json:"path"`
					} `json:"partitions"`
					DataFiles struct {
						AddedCount   int   `json:"addedCount"`
						AddedRecords int64 `json:"addedRecords"`
					} `json:"dataFiles"`
					Snapshots []struct {
						Operation string `json:"operation"`
					} `json:"snapshots"`
				} `json:"source"`
			} `json:"floeClassification"`
			FloeMerge *struct {
				Action    string `json:"action"`
				Snapshots int    `json:"snapshots"`
			} `json:"floeMerge"`
		} `json:"details"`
	}
	e.ok(http.MethodPost, mergePath("?floe-classification=true"), body, http.StatusOK, &full)
	fc := full.Details[0].FloeClassification
	if fc == nil || fc.Class != "disjoint" || strings.Join(fc.Key, ".") != "ns.events" ||
		len(fc.Source.Partitions) != 1 || fc.Source.Partitions[0].Path != "day=2026-08-20" ||
		fc.Source.DataFiles.AddedCount != 1 || fc.Source.DataFiles.AddedRecords != 1 ||
		len(fc.Source.Snapshots) != 1 || fc.Source.Snapshots[0].Operation != "append" {
		t.Fatalf("classification %+v", fc)
	}

	if m := full.Details[0].FloeMerge; m == nil || m.Action != "cherry-pick" || m.Snapshots != 1 {
		t.Fatalf("floeMerge %+v", m)
	}

	// Without returnConflictAsResult the dry run is the same 200: there
	// is no conflict.
	delete(body, "returnConflictAsResult")
	e.ok(http.MethodPost, mergePath(""), body, http.StatusOK, &plain)
	if !plain.WasSuccessful || plain.Details[0].Conflict != nil {
		t.Fatalf("dry run: %+v", plain)
	}

	// A real merge resolves the disjoint table (package mergeengine): it
	// lands as one merge commit.
	body["dryRun"] = false
	var merged struct {
		WasApplied, WasSuccessful bool
	}
	e.ok(http.MethodPost, mergePath(""), body, http.StatusOK, &merged)
	if !merged.WasApplied || !merged.WasSuccessful {
		t.Fatalf("real merge: %+v", merged)
	}
}
