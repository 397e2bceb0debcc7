package icebergtable

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// TestViewOf: ViewOf answers what the copying accessors answer, for
// every format version, and for the versions the encoder knows without
// copying (the schemas are the metadata's own).
func TestViewOf(t *testing.T) {
	for _, version := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
			meta, err := table.NewMetadataWithUUID(schema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder,
				"file:///wh/ns/t", iceberg.Properties{"format-version": fmt.Sprint(version), "a": "1"}, uuid.New())
			if err != nil {
				t.Fatal(err)
			}
			b, err := table.MetadataBuilderFromBase(meta, "")
			if err != nil {
				t.Fatal(err)
			}
			wider := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
				iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String})
			if err := b.AddSchema(wider); err != nil {
				t.Fatal(err)
			}
			seq := int64(1)
			if version == 1 {
				seq = 0
			}
			snap := &table.Snapshot{SnapshotID: 7, SequenceNumber: seq, TimestampMs: time.Now().UnixMilli() + 1000, ManifestList: "file:///wh/ns/t/metadata/snap-7.avro",
				Summary: &table.Summary{Operation: table.OpAppend}}
			if version == 3 {
				first, added := int64(0), int64(1)
				snap.FirstRowID, snap.AddedRows = &first, &added
			}
			if err := b.AddSnapshot(snap); err != nil {
				t.Fatal(err)
			}
			if err := b.SetSnapshotRef(table.MainBranch, 7, table.BranchRef); err != nil {
				t.Fatal(err)
			}
			if err := b.SetStatistics(table.StatisticsFile{SnapshotID: 7, StatisticsPath: "file:///wh/ns/t/metadata/7.stats"}); err != nil {
				t.Fatal(err)
			}
			next, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			if props := PropertiesOf(next); !maps.Equal(props, next.Properties()) || props["a"] != "1" {
				t.Errorf("PropertiesOf: %v, want %v", props, next.Properties())
			}
			got := ViewOf(next)
			want := MetadataView{
				CurrentSchemaID:     next.CurrentSchema().ID,
				Schemas:             next.Schemas(),
				Specs:               next.PartitionSpecs(),
				SortOrders:          next.SortOrders(),
				Properties:          next.Properties(),
				Refs:                maps.Collect(next.Refs()),
				Statistics:          slices.Collect(next.Statistics()),
				PartitionStatistics: slices.Collect(next.PartitionStatistics()),
			}
			if len(got.Schemas) != 2 || len(got.Refs) != 1 || len(got.Statistics) != 1 {
				t.Fatalf("ViewOf: %d schemas, %d refs, %d statistics files; want 2, 1, 1", len(got.Schemas), len(got.Refs), len(got.Statistics))
			}
			for i := range got.Schemas {
				if !got.Schemas[i].Equals(want.Schemas[i]) {
					t.Errorf("schema %d: %v, want %v", i, got.Schemas[i], want.Schemas[i])
				}
			}
			view := got
			got.Schemas, want.Schemas = nil, nil
			if len(got.PartitionStatistics) == 0 {
				got.PartitionStatistics = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ViewOf:\n%#v\nthe accessors:\n%#v", got, want)
			}
			if cs := view.CurrentSchema(); cs == nil || !cs.Equals(next.CurrentSchema()) {
				t.Errorf("the view's current schema %v, want %v", cs, next.CurrentSchema())
			}
			// Its own schema, not a copy: the same pointer twice.
			inPlace := ViewOf(next).Schemas[0] == ViewOf(next).Schemas[0]
			if known := metadataLayouts[reflect.TypeOf(next)] != nil; inPlace != known {
				t.Errorf("schemas read in place: %v; the encoder knows %T: %v", inPlace, next, known)
			}
		})
	}
}

func BenchmarkViewOf(b *testing.B) {
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	meta, err := table.NewMetadataWithUUID(schema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file:///wh/ns/t", iceberg.Properties{"format-version": "2"}, uuid.New())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if v := ViewOf(meta); len(v.Schemas) != 1 {
			b.Fatal(len(v.Schemas))
		}
	}
}
