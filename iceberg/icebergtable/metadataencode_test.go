package icebergtable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// TestEncodeTableMetadataMatchesJSONMarshal builds tables of every format
// version through a history of changes (snapshots added, tagged, expired,
// schema evolved, statistics, properties with characters encoding/json
// escapes) and checks at every step that encodeTableMetadata gives
// json.Marshal's bytes, with and without the previous file's encodings,
// and for the metadata parsed back from those bytes.
func TestEncodeTableMetadataMatchesJSONMarshal(t *testing.T) {
	for _, version := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
			meta, err := table.NewMetadataWithUUID(schema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder,
				"file:///wh/ns/t", iceberg.Properties{"format-version": fmt.Sprint(version), "comment": "<&> \u2028"}, uuid.New())
			if err != nil {
				t.Fatal(err)
			}
			if version > 1 {
				if metadataLayouts[reflect.TypeOf(meta)] == nil {
					t.Fatalf("no fast layout for format version %d (%T)", version, meta)
				}
			}
			prev := check(t, "created", meta, nil)
			loc := "file:///wh/ns/t/metadata/00000.metadata.json"
			seq := int64(0)
			nextRow := int64(0)
			snapshot := func(id int64, parent *int64, summary *table.Summary) *table.Snapshot {
				seq++
				s := &table.Snapshot{SnapshotID: id, ParentSnapshotID: parent, SequenceNumber: seq, TimestampMs: time.Now().UnixMilli() + id,
					ManifestList: fmt.Sprintf("file:///wh/ns/t/metadata/snap-%d-<&>.avro", id), Summary: summary}
				if version == 1 {
					s.SequenceNumber = 0
				}
				if version == 3 {
					first, added := nextRow, int64(10)
					s.FirstRowID, s.AddedRows = &first, &added
					nextRow += added
				}
				schemaID := 0
				s.SchemaID = &schemaID
				return s
			}
			steps := []struct {
				name  string
				apply func(b *table.MetadataBuilder) error
			}{
				{"properties", func(b *table.MetadataBuilder) error {
					return b.SetProperties(iceberg.Properties{"a": "1", "html": "<script>&"})
				}},
				{"append", func(b *table.MetadataBuilder) error {
					if err := b.AddSnapshot(snapshot(1, nil, &table.Summary{Operation: table.OpAppend, Properties: map[string]string{"note": "<a & b>"}})); err != nil {
						return err
					}
					return b.SetSnapshotRef(table.MainBranch, 1, table.BranchRef)
				}},
				{"two appends and a tag", func(b *table.MetadataBuilder) error {
					parent := int64(1)
					if err := b.AddSnapshot(snapshot(2, &parent, &table.Summary{Operation: table.OpAppend})); err != nil {
						return err
					}
					parent = 2
					if err := b.AddSnapshot(snapshot(3, &parent, &table.Summary{Operation: table.OpOverwrite, Properties: map[string]string{}})); err != nil {
						return err
					}
					if err := b.SetSnapshotRef(table.MainBranch, 3, table.BranchRef); err != nil {
						return err
					}
					return b.SetSnapshotRef("v1", 2, table.TagRef)
				}},
				{"properties only", func(b *table.MetadataBuilder) error {
					return b.SetProperties(iceberg.Properties{"a": "2"})
				}},
				{"schema", func(b *table.MetadataBuilder) error {
					s := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
						iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String, Doc: "<&>"})
					if err := b.AddSchema(s); err != nil {
						return err
					}
					return b.SetCurrentSchemaID(1)
				}},
				{"nested schema", func(b *table.MetadataBuilder) error {
					point := &iceberg.StructType{FieldList: []iceberg.NestedField{
						{ID: 5, Name: "x", Type: iceberg.PrimitiveTypes.Float64, Required: true},
						{ID: 6, Name: "y", Type: iceberg.DecimalTypeOf(10, 2), Doc: "a \"quoted\" <doc>"},
					}}
					s := iceberg.NewSchemaWithIdentifiers(2, []int{1},
						iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
						iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String, Doc: "<&>"},
						iceberg.NestedField{ID: 3, Name: "points", Type: &iceberg.ListType{ElementID: 4, Element: point, ElementRequired: true}},
						iceberg.NestedField{ID: 7, Name: "tags", Type: &iceberg.MapType{KeyID: 8, KeyType: iceberg.PrimitiveTypes.String,
							ValueID: 9, ValueType: iceberg.FixedTypeOf(16), ValueRequired: false}})
					if err := b.AddSchema(s); err != nil {
						return err
					}
					return b.SetCurrentSchemaID(2)
				}},
				{"statistics", func(b *table.MetadataBuilder) error {
					return b.SetStatistics(table.StatisticsFile{SnapshotID: 3, StatisticsPath: "file:///wh/ns/t/metadata/3.stats", FileSizeInBytes: 10, FileFooterSizeInBytes: 2,
						BlobMetadata: []table.BlobMetadata{{Type: "apache-datasketches-theta-v1", SnapshotID: 3, SequenceNumber: 3, Fields: []int32{1}}}})
				}},
				{"expire the first snapshot", func(b *table.MetadataBuilder) error {
					return b.RemoveSnapshots([]int64{1}, false)
				}},
				{"append after expiry", func(b *table.MetadataBuilder) error {
					parent := int64(3)
					if err := b.AddSnapshot(snapshot(4, &parent, &table.Summary{Operation: table.OpAppend, Properties: map[string]string{"x": "y"}})); err != nil {
						return err
					}
					return b.SetSnapshotRef(table.MainBranch, 4, table.BranchRef)
				}},
				{"remove a property", func(b *table.MetadataBuilder) error {
					return b.RemoveProperties([]string{"html"})
				}},
			}
			for i, step := range steps {
				b, err := table.MetadataBuilderFromBase(meta, loc)
				if err != nil {
					t.Fatal(err)
				}
				if err := step.apply(b); err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				if meta, err = b.Build(); err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				prev = check(t, step.name, meta, prev)
				loc = fmt.Sprintf("file:///wh/ns/t/metadata/%05d.metadata.json", i+1)
			}
		})
	}
}

// check compares encodeTableMetadata with json.Marshal for meta (encoded
// from prev and from nothing) and for meta parsed back, and returns the
// encodings to build on.
func check(t *testing.T, step string, meta table.Metadata, prev *encodedFile) *encodedFile {
	t.Helper()
	want, err := json.Marshal(meta)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	// One scratch pool for all: a pooled buffer's reuse must not touch a
	// file encoded before.
	var scratch encodeBuffers
	got, enc, err := encodeTableMetadata(meta, prev, &scratch)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: encoded\n%s\nwant\n%s", step, got, want)
	}
	if fresh, _, err := encodeTableMetadata(meta, nil, &scratch); err != nil || !bytes.Equal(fresh, want) {
		t.Fatalf("%s: encoded without the previous file: %v\n%s\nwant\n%s", step, err, fresh, want)
	}
	if meta.Version() > 1 && enc == nil {
		t.Fatalf("%s: format version %d encoded by json.Marshal", step, meta.Version())
	}
	if enc != nil {
		checkRanges(t, step+": snapshot", got, enc.snapshots)
		checkRanges(t, step+": metadata-log entry", got, enc.metadataLog)
		checkRanges(t, step+": snapshot-log entry", got, enc.snapshotLog)
		checkRanges(t, step+": schema", got, enc.schemas)
		if len(enc.schemas.ranges) != len(meta.Schemas()) {
			t.Fatalf("%s: %d schema ranges for %d schemas", step, len(enc.schemas.ranges), len(meta.Schemas()))
		}
	}
	parsed, err := table.ParseMetadataBytes(want)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	wantParsed, err := json.Marshal(parsed)
	if err != nil {
		t.Fatal(err)
	}
	if gotParsed, _, err := encodeTableMetadata(parsed, enc, &scratch); err != nil || !bytes.Equal(gotParsed, wantParsed) {
		t.Fatalf("%s: parsed metadata encoded as\n%s\nwant\n%s", step, gotParsed, wantParsed)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: the first encoding changed when its buffer was used again:\n%s", step, got)
	}
	return enc
}

// checkRanges checks that each item's range in raw holds its encoding.
func checkRanges[T any](t *testing.T, what string, raw []byte, list encodedList[T]) {
	t.Helper()
	for i, r := range list.ranges {
		one, err := json.Marshal(&list.items[i])
		if err != nil || !bytes.Equal(raw[r.start:r.end], one) {
			t.Fatalf("%s %d: its range holds %s, want %s", what, i, raw[r.start:r.end], one)
		}
	}
}

// TestEncodeJavaStyleMetadata encodes metadata as Java writes it (no
// snapshots and current-snapshot-id -1, which json.Marshal keeps).
func TestEncodeJavaStyleMetadata(t *testing.T) {
	raw := `{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"file:///wh/t","last-sequence-number":0,
"last-updated-ms":1602638573590,"last-column-id":1,"current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","required":true,"type":"long"}]}],
"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,"default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],
"properties":{},"current-snapshot-id":-1,"refs":{},"snapshots":[],"statistics":[],"snapshot-log":[],"metadata-log":[]}`
	meta, err := table.ParseMetadataBytes([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "java", meta, nil)
}

// TestSameSchema changes a schema in each way its encoding can change:
// every change must make the schemas differ, and a clone, or nil against
// empty identifier ids (both written []), must not.
func TestSameSchema(t *testing.T) {
	build := func(change func(ids *[]int, fields []iceberg.NestedField) (int, []iceberg.NestedField)) *iceberg.Schema {
		ids := []int{1}
		fields := []iceberg.NestedField{
			{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			{ID: 2, Name: "price", Type: iceberg.DecimalTypeOf(10, 2), Doc: "in euros"},
			{ID: 3, Name: "tags", Type: &iceberg.ListType{ElementID: 4, Element: iceberg.PrimitiveTypes.String}},
		}
		id := 0
		if change != nil {
			id, fields = change(&ids, fields)
		}
		return iceberg.NewSchemaWithIdentifiers(id, ids, fields...)
	}
	base := build(nil)
	same := func(a, b *iceberg.Schema) bool { return sameSchema(&a, &b) }
	clone := build(nil)
	if !same(base, clone) || !same(base, base) {
		t.Fatal("equal schemas differ")
	}
	noIDs := build(func(ids *[]int, f []iceberg.NestedField) (int, []iceberg.NestedField) { *ids = nil; return 0, f })
	emptyIDs := build(func(ids *[]int, f []iceberg.NestedField) (int, []iceberg.NestedField) { *ids = []int{}; return 0, f })
	if !same(noIDs, emptyIDs) {
		t.Error("nil and empty identifier ids, both encoded [], differ")
	}
	for name, change := range map[string]func(ids *[]int, f []iceberg.NestedField) (int, []iceberg.NestedField){
		"schema id":      func(ids *[]int, f []iceberg.NestedField) (int, []iceberg.NestedField) { return 1, f },
		"identifier ids": func(ids *[]int, f []iceberg.NestedField) (int, []iceberg.NestedField) { *ids = nil; return 0, f },
		"field name":     func(ids *[]int, f []iceberg.NestedField) (int, []iceberg.NestedField) { f[0].Name = "key"; return 0, f },
		"field doc": func(ids *[]int, f []iceberg.NestedField) (int, []iceberg.NestedField) {
			f[1].Doc = "in dollars"
			return 0, f
		},
		"required": func(ids *[]int, f []iceberg.NestedField) (int, []iceberg.NestedField) {
			f[1].Required = true
			return 0, f
		},
		"decimal scale": func(ids *[]int, f []iceberg.NestedField) (int, []iceberg.NestedField) {
			f[1].Type = iceberg.DecimalTypeOf(10, 3)
			return 0, f
		},
		"list element": func(ids *[]int, f []iceberg.NestedField) (int, []iceberg.NestedField) {
			f[2].Type = &iceberg.ListType{ElementID: 4, Element: iceberg.PrimitiveTypes.Binary}
			return 0, f
		},
		"write default": func(ids *[]int, f []iceberg.NestedField) (int, []iceberg.NestedField) {
			f[0].WriteDefault = int64(7)
			return 0, f
		},
		"one field more": func(ids *[]int, f []iceberg.NestedField) (int, []iceberg.NestedField) {
			return 0, append(f, iceberg.NestedField{ID: 5, Name: "note", Type: iceberg.PrimitiveTypes.String})
		},
	} {
		changed := build(change)
		a, errA := json.Marshal(base)
		b, errB := json.Marshal(changed)
		if errA != nil || errB != nil || bytes.Equal(a, b) {
			t.Fatalf("%s: the change does not change the encoding (%v, %v)", name, errA, errB)
		}
		if same(base, changed) || same(changed, base) {
			t.Errorf("%s: the schemas are taken as the same", name)
		}
	}
	var none *iceberg.Schema
	if same(base, none) || same(none, base) || !same(none, none) {
		t.Error("a nil schema compared wrongly")
	}
}

// TestSameSnapshot changes each field of a snapshot in turn: every
// change, nil against empty included where the encodings differ, must
// make the snapshots differ.
func TestSameSnapshot(t *testing.T) {
	one, two := int64(1), int64(2)
	zero := 0
	base := func() table.Snapshot {
		return table.Snapshot{SnapshotID: 5, ParentSnapshotID: &one, SequenceNumber: 3, TimestampMs: 7, ManifestList: "m",
			Summary: &table.Summary{Operation: table.OpAppend, Properties: map[string]string{"k": "v"}}, SchemaID: &zero,
			FirstRowID: &one, AddedRows: &two}
	}
	changes := map[string]func(s *table.Snapshot){
		"id":                 func(s *table.Snapshot) { s.SnapshotID++ },
		"parent":             func(s *table.Snapshot) { s.ParentSnapshotID = &two },
		"no parent":          func(s *table.Snapshot) { s.ParentSnapshotID = nil },
		"sequence":           func(s *table.Snapshot) { s.SequenceNumber++ },
		"timestamp":          func(s *table.Snapshot) { s.TimestampMs++ },
		"manifest list":      func(s *table.Snapshot) { s.ManifestList = "n" },
		"manifests":          func(s *table.Snapshot) { s.ManifestLocations = []string{"a"} },
		"empty manifests":    func(s *table.Snapshot) { s.ManifestLocations = []string{} },
		"no summary":         func(s *table.Snapshot) { s.Summary = nil },
		"operation":          func(s *table.Snapshot) { s.Summary.Operation = table.OpDelete },
		"summary value":      func(s *table.Snapshot) { s.Summary.Properties["k"] = "w" },
		"summary key":        func(s *table.Snapshot) { s.Summary.Properties["j"] = "v" },
		"nil summary map":    func(s *table.Snapshot) { s.Summary.Properties = nil },
		"schema id":          func(s *table.Snapshot) { s.SchemaID = nil },
		"first row id":       func(s *table.Snapshot) { s.FirstRowID = &two },
		"added rows":         func(s *table.Snapshot) { s.AddedRows = nil },
		"summary properties": func(s *table.Snapshot) { s.Summary.Properties = map[string]string{} },
	}
	a := base()
	if b := base(); !sameSnapshot(&a, &b) {
		t.Fatal("equal snapshots differ")
	}
	for name, change := range changes {
		b := base()
		change(&b)
		if sameSnapshot(&a, &b) {
			t.Errorf("%s: snapshots compare equal", name)
		}
	}
	if !knownSnapshotFields() {
		t.Fatal("table.Snapshot or table.Summary has fields sameSnapshot does not compare")
	}
	if !knownSchemaFields() {
		t.Fatal("iceberg.Schema has exported fields sameSchema does not compare")
	}
}

// BenchmarkEncodeTableMetadata encodes the next file of a table after a
// property commit, as a commit does: json.Marshal against
// encodeTableMetadata copying from the previous file. small has an empty
// history and a full metadata-log (100 entries), big 1,000 snapshots too,
// wide a schema of 100 columns.
func BenchmarkEncodeTableMetadata(b *testing.B) {
	for _, tc := range []struct {
		name               string
		snapshots, columns int
	}{{"small", 0, 1}, {"big", 1000, 1}, {"wide", 0, 100}} {
		name, snapshots := tc.name, tc.snapshots
		fields := []iceberg.NestedField{{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}}
		for id := 2; id <= tc.columns; id++ {
			fields = append(fields, iceberg.NestedField{ID: id, Name: fmt.Sprintf("column_%03d", id), Type: iceberg.PrimitiveTypes.String, Doc: "a column of a wide table"})
		}
		schema := iceberg.NewSchema(0, fields...)
		meta, err := table.NewMetadataWithUUID(schema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder,
			"file:///warehouse/bench/t00-0a6f1f4c-5c61-4fd8-a5a5-d2bd7d5a1d7e", iceberg.Properties{"format-version": "2"}, uuid.New())
		if err != nil {
			b.Fatal(err)
		}
		step := func(i int, apply func(*table.MetadataBuilder) error) {
			bl, err := table.MetadataBuilderFromBase(meta, fmt.Sprintf("%s/metadata/%05d-%s.metadata.json", meta.Location(), i, uuid.NewString()))
			if err != nil {
				b.Fatal(err)
			}
			if err := apply(bl); err != nil {
				b.Fatal(err)
			}
			if meta, err = bl.Build(); err != nil {
				b.Fatal(err)
			}
		}
		now := time.Now().UnixMilli()
		for i := range snapshots {
			step(i, func(bl *table.MetadataBuilder) error {
				var parent *int64
				if i > 0 {
					p := int64(i)
					parent = &p
				}
				s := &table.Snapshot{SnapshotID: int64(i + 1), ParentSnapshotID: parent, SequenceNumber: int64(i + 1), TimestampMs: now + int64(i),
					ManifestList: fmt.Sprintf("%s/metadata/snap-%d-1-0000.avro", meta.Location(), i+1),
					Summary: &table.Summary{Operation: table.OpAppend, Properties: map[string]string{"added-data-files": "1", "added-records": "1000",
						"added-files-size": "65536", "changed-partition-count": "1", "total-records": "1000", "total-files-size": "65536",
						"total-data-files": "1", "total-delete-files": "0", "total-position-deletes": "0", "total-equality-deletes": "0"}}}
				if err := bl.AddSnapshot(s); err != nil {
					return err
				}
				return bl.SetSnapshotRef(table.MainBranch, s.SnapshotID, table.BranchRef)
			})
		}
		for i := range 100 {
			step(snapshots+i, func(bl *table.MetadataBuilder) error {
				return bl.SetProperties(iceberg.Properties{"bench.seq": fmt.Sprint(i)})
			})
		}
		_, prev, err := encodeTableMetadata(meta, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		step(snapshots+100, func(bl *table.MetadataBuilder) error {
			return bl.SetProperties(iceberg.Properties{"bench.seq": "next"})
		})
		b.Run(name+"/json.Marshal", func(b *testing.B) {
			for b.Loop() {
				if _, err := json.Marshal(meta); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/encode", func(b *testing.B) {
			var scratch encodeBuffers
			for b.Loop() {
				if _, _, err := encodeTableMetadata(meta, prev, &scratch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestUnchangedItemsAreCopied: a commit's file copies the encodings of
// the schemas and metadata-log entries it carries over from the file it
// was built from rather than encoding them again. The earlier file's
// bytes are marked where those items lie, and the marks must show up in
// the next file.
func TestUnchangedItemsAreCopied(t *testing.T) {
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	meta, err := table.NewMetadataWithUUID(schema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder,
		"file:///wh/ns/t", iceberg.Properties{"format-version": "2"}, uuid.New())
	if err != nil {
		t.Fatal(err)
	}
	build := func(base table.Metadata, loc string, props iceberg.Properties) table.Metadata {
		b, err := table.MetadataBuilderFromBase(base, loc)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.SetProperties(props); err != nil {
			t.Fatal(err)
		}
		next, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	meta = build(meta, "file:///wh/ns/t/metadata/00000.metadata.json", iceberg.Properties{"a": "1"})
	_, prev, err := encodeTableMetadata(meta, nil, nil)
	if err != nil || prev == nil {
		t.Fatalf("no encodings to build on: %v", err)
	}
	// Mark each item: "id" becomes "ID" in the schema, and the file name's
	// "metadata" becomes "METADATA" in the log entry.
	marked := *prev
	marked.raw = bytes.Clone(prev.raw)
	mark := func(r itemRange, from, to string) {
		item := marked.raw[r.start:r.end]
		i := bytes.Index(item, []byte(from))
		if i < 0 {
			t.Fatalf("%q not in %s", from, item)
		}
		copy(item[i:], to)
	}
	mark(marked.schemas.ranges[0], `"name":"id"`, `"name":"ID"`)
	mark(marked.metadataLog.ranges[0], "metadata.json", "METADATA.json")

	next := build(meta, "file:///wh/ns/t/metadata/00001.metadata.json", iceberg.Properties{"a": "2"})
	got, _, err := encodeTableMetadata(next, &marked, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"ID"`, "00000.METADATA.json"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("the item marked %q was encoded again, not copied:\n%s", want, got)
		}
	}
}
