package classify_test

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/merge/classify"
)

// TestStructureCompatibility pins which column changes classify lets a
// merge carry from one side (Compatible: rows written before read right
// through field ids), the type promotions the Iceberg spec allows, and
// which it calls additive; and that StructureConflict refuses an
// incompatible change and different changes on both sides but not a
// compatible one on one side or the same one on both.
func TestStructureCompatibility(t *testing.T) {
	base := []iceberg.NestedField{
		{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		{ID: 2, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
		{ID: 3, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		{ID: 4, Name: "d", Type: iceberg.DecimalTypeOf(10, 2)},
		{ID: 5, Name: "s", Type: iceberg.PrimitiveTypes.String},
		{ID: 6, Name: "r", Type: iceberg.PrimitiveTypes.String, Required: true},
	}
	with := func(id int, f func(*iceberg.NestedField)) []iceberg.NestedField {
		out := append([]iceberg.NestedField{}, base...)
		for i := range out {
			if out[i].ID == id {
				f(&out[i])
			}
		}
		return out
	}
	for _, tc := range []struct {
		name                 string
		fields               []iceberg.NestedField
		compatible, additive bool
	}{
		{"optional column added", append(append([]iceberg.NestedField{}, base...), iceberg.NestedField{ID: 7, Name: "note", Type: iceberg.PrimitiveTypes.String}), true, true},
		{"required column added", append(append([]iceberg.NestedField{}, base...), iceberg.NestedField{ID: 7, Name: "code", Type: iceberg.PrimitiveTypes.String, Required: true}), false, false},
		{"required column with an initial default", append(append([]iceberg.NestedField{}, base...), iceberg.NestedField{ID: 7, Name: "code", Type: iceberg.PrimitiveTypes.String, Required: true, InitialDefault: "x"}), true, false},
		{"column dropped", base[:5], true, false},
		{"column renamed", with(5, func(f *iceberg.NestedField) { f.Name = "t" }), true, false},
		{"int to long", with(2, func(f *iceberg.NestedField) { f.Type = iceberg.PrimitiveTypes.Int64 }), true, false},
		{"float to double", with(3, func(f *iceberg.NestedField) { f.Type = iceberg.PrimitiveTypes.Float64 }), true, false},
		{"decimal precision widened", with(4, func(f *iceberg.NestedField) { f.Type = iceberg.DecimalTypeOf(12, 2) }), true, false},
		{"decimal scale changed", with(4, func(f *iceberg.NestedField) { f.Type = iceberg.DecimalTypeOf(12, 3) }), false, false},
		{"long to int", with(1, func(f *iceberg.NestedField) { f.Type = iceberg.PrimitiveTypes.Int32 }), false, false},
		{"string to int", with(5, func(f *iceberg.NestedField) { f.Type = iceberg.PrimitiveTypes.Int32 }), false, false},
		{"made optional", with(6, func(f *iceberg.NestedField) { f.Required = false }), true, false},
		{"made required", with(5, func(f *iceberg.NestedField) { f.Required = true }), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := metadata(t, base)
			s := evolve(t, b, tc.fields)
			changes := classify.StructureChanges(b, s)
			if len(changes) < 2 || changes[0].Text != "current schema 1, was 0" || !changes[0].Compatible {
				t.Fatalf("changes %+v: want the new schema id first, compatible", changes)
			}
			c := changes[1]
			if c.Kind != classify.StructureSchema || c.Compatible != tc.compatible || c.Additive != tc.additive {
				t.Errorf("%+v: want compatible %t, additive %t", c, tc.compatible, tc.additive)
			}
			why := classify.StructureConflict(b, s, b)
			if (why == "") != tc.compatible {
				t.Errorf("StructureConflict(source only) = %q, compatible %t", why, tc.compatible)
			}
			if why := classify.StructureConflict(b, s, s); why != "" && tc.compatible {
				t.Errorf("the same change on both sides: %q", why)
			}
		})
	}
	b := metadata(t, base)
	left := evolve(t, b, append(append([]iceberg.NestedField{}, base...), iceberg.NestedField{ID: 7, Name: "a", Type: iceberg.PrimitiveTypes.String}))
	right := evolve(t, b, append(append([]iceberg.NestedField{}, base...), iceberg.NestedField{ID: 7, Name: "b", Type: iceberg.PrimitiveTypes.String}))
	if why := classify.StructureConflict(b, left, right); why == "" {
		t.Error("different columns added on both sides: no conflict")
	}
	if why := classify.StructureConflict(b, b, right); why != "" {
		t.Errorf("a change on the target alone: %q", why)
	}
}

func metadata(t *testing.T, fields []iceberg.NestedField) table.Metadata {
	t.Helper()
	m, err := table.NewMetadata(iceberg.NewSchema(0, fields...), iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file:///tmp/t", iceberg.Properties{"format-version": "3"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// evolve is m with a new current schema of fields (id 1).
func evolve(t *testing.T, m table.Metadata, fields []iceberg.NestedField) table.Metadata {
	t.Helper()
	b, err := table.MetadataBuilderFromBase(m, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddSchema(iceberg.NewSchema(1, fields...)); err != nil {
		t.Fatal(err)
	}
	if err := b.SetCurrentSchemaID(1); err != nil {
		t.Fatal(err)
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
