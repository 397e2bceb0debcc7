package tablemerge_test

import (
	"errors"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/merge/tablemerge"
)

// TestCarryStructure: the source's schemas, specs and sort orders are
// carried under their own ids and made current where the source changed
// them; a column id the source used and dropped again stays used
// (last-column-id); the target's own current schema stays when only the
// target changed it; an id that means something else on the target is
// refused.
func TestCarryStructure(t *testing.T) {
	fields := []iceberg.NestedField{
		{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		{ID: 2, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
	}
	base, err := table.NewMetadata(iceberg.NewSchema(0, fields...), iceberg.UnpartitionedSpec, table.UnsortedSortOrder,
		"file:///tmp/t", iceberg.Properties{"format-version": "2"})
	if err != nil {
		t.Fatal(err)
	}
	build := func(m table.Metadata, f func(*table.MetadataBuilder) error) table.Metadata {
		t.Helper()
		b, err := table.MetadataBuilderFromBase(m, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := f(b); err != nil {
			t.Fatal(err)
		}
		out, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	withSchema := func(m table.Metadata, id int, fs ...iceberg.NestedField) table.Metadata {
		return build(m, func(b *table.MetadataBuilder) error {
			if err := b.AddSchema(iceberg.NewSchema(id, fs...)); err != nil {
				return err
			}
			return b.SetCurrentSchemaID(id)
		})
	}
	note := iceberg.NestedField{ID: 3, Name: "note", Type: iceberg.PrimitiveTypes.String}
	tmp := iceberg.NestedField{ID: 4, Name: "tmp", Type: iceberg.PrimitiveTypes.String}

	// The source added note and tmp (schema 1), then dropped tmp (schema
	// 2), and added a bucket spec; main only appended (its structure is
	// the base's).
	src := withSchema(base, 1, append(fields[:2:2], note, tmp)...)
	src = withSchema(src, 2, append(fields[:2:2], note)...)
	src = build(src, func(b *table.MetadataBuilder) error {
		spec := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4}})
		if err := b.AddPartitionSpec(&spec, false); err != nil {
			return err
		}
		return b.SetDefaultSpecID(1)
	})
	got, err := tablemerge.WithStructure(base, base, src)
	if err != nil {
		t.Fatal(err)
	}
	if got.CurrentSchema().ID != 2 || len(got.Schemas()) != 3 || got.DefaultPartitionSpec() != 1 {
		t.Errorf("carried: current schema %d of %d, default spec %d; want 2 of 3, spec 1",
			got.CurrentSchema().ID, len(got.Schemas()), got.DefaultPartitionSpec())
	}
	if got.LastColumnID() != 4 {
		t.Errorf("last-column-id %d, want 4 (tmp's id stays used)", got.LastColumnID())
	}
	if p := got.LastPartitionSpecID(); p == nil || *p != 1000 {
		t.Errorf("last-partition-id %v, want 1000", p)
	}

	// Only the target changed its schema: nothing to carry, the target
	// keeps its current schema.
	tgt := withSchema(base, 1, append(fields[:2:2], note)...)
	if got, err := tablemerge.WithStructure(base, tgt, base); err != nil || got != tgt {
		t.Errorf("target-only change: %v, changed %t", err, got != tgt)
	}

	// The target's schema 1 is another schema than the source's.
	other := withSchema(base, 1, append(fields[:2:2], iceberg.NestedField{ID: 3, Name: "region", Type: iceberg.PrimitiveTypes.String})...)
	if _, err := tablemerge.WithStructure(base, other, src); !errors.Is(err, tablemerge.ErrStructure) {
		t.Errorf("schema 1 differing on both sides: %v, want ErrStructure", err)
	}
}
