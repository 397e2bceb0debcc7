package classify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// structuralChanges names every difference of side's structure from
// base's: format version, table uuid, the current schema (by id and by
// its fields' ids, names, types and required flags), identifier fields,
// the default partition spec (by id and its fields' source ids,
// transforms, field ids and names) and the default sort order (by id and
// its fields). It compares the metadata itself, never snapshot summaries,
// which a writer may not have set.
func structuralChanges(base, side table.Metadata) []string {
	out := []string{}
	if base.TableUUID() != side.TableUUID() {
		out = append(out, fmt.Sprintf("table replaced (uuid %s, was %s)", side.TableUUID(), base.TableUUID()))
	}
	if base.Version() != side.Version() {
		out = append(out, fmt.Sprintf("format version %d, was %d", side.Version(), base.Version()))
	}
	out = append(out, schemaChanges(base.CurrentSchema(), side.CurrentSchema())...)
	bs, ss := base.PartitionSpec(), side.PartitionSpec()
	if d := specDiff(&bs, &ss); d != "" {
		out = append(out, d)
	}
	bo, so := base.SortOrder(), side.SortOrder()
	if bo.OrderID() != so.OrderID() || sortOrderString(bo) != sortOrderString(so) {
		out = append(out, fmt.Sprintf("sort order %d [%s], was %d [%s]", so.OrderID(), sortOrderString(so), bo.OrderID(), sortOrderString(bo)))
	}
	return out
}

func schemaChanges(base, side *iceberg.Schema) []string {
	var out []string
	if base == nil || side == nil {
		if base != side {
			out = append(out, "current schema changed")
		}
		return out
	}
	if base.ID != side.ID {
		out = append(out, fmt.Sprintf("current schema %d, was %d", side.ID, base.ID))
	}
	bf, err1 := iceberg.IndexByID(base)
	sf, err2 := iceberg.IndexByID(side)
	if err1 != nil || err2 != nil {
		return append(out, "current schema unreadable")
	}
	bn, sn := fullNames(base), fullNames(side)
	for _, id := range sortedIDs(bf, sf) {
		b, inBase := bf[id]
		s, inSide := sf[id]
		switch {
		case !inBase:
			out = append(out, fmt.Sprintf("column %d %s added (%s)", id, sn[id], s.Type))
		case !inSide:
			out = append(out, fmt.Sprintf("column %d %s dropped", id, bn[id]))
		default:
			if bn[id] != sn[id] {
				out = append(out, fmt.Sprintf("column %d renamed from %s to %s", id, bn[id], sn[id]))
			}
			// Nested types are compared through their own fields.
			_, nested := b.Type.(iceberg.NestedType)
			if !nested && !b.Type.Equals(s.Type) {
				out = append(out, fmt.Sprintf("column %d %s type changed from %s to %s", id, sn[id], b.Type, s.Type))
			}
			if b.Required != s.Required {
				out = append(out, fmt.Sprintf("column %d %s required changed to %t", id, sn[id], s.Required))
			}
		}
	}
	bi, si := slices.Sorted(slices.Values(base.IdentifierFieldIDs)), slices.Sorted(slices.Values(side.IdentifierFieldIDs))
	if !slices.Equal(bi, si) {
		out = append(out, fmt.Sprintf("identifier fields %v, were %v", si, bi))
	}
	return out
}

// fullNames maps field ids to dotted names (a.b.c).
func fullNames(s *iceberg.Schema) map[int]string {
	out := map[int]string{}
	var walk func(prefix string, fields []iceberg.NestedField)
	walk = func(prefix string, fields []iceberg.NestedField) {
		for _, f := range fields {
			name := prefix + f.Name
			out[f.ID] = name
			if n, ok := f.Type.(iceberg.NestedType); ok {
				walk(name+".", n.Fields())
			}
		}
	}
	walk("", s.Fields())
	return out
}

func sortedIDs(a, b map[int]iceberg.NestedField) []int {
	var ids []int
	for id := range a {
		ids = append(ids, id)
	}
	for id := range b {
		if _, ok := a[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func specDiff(base, side *iceberg.PartitionSpec) string {
	if base.ID() == side.ID() && specString(base) == specString(side) {
		return ""
	}
	return fmt.Sprintf("partition spec %d [%s], was %d [%s]", side.ID(), specString(side), base.ID(), specString(base))
}

func specString(s *iceberg.PartitionSpec) string {
	var parts []string
	for _, f := range s.Fields() {
		parts = append(parts, fmt.Sprintf("%d: %s=%s(%v)", f.FieldID, f.Name, f.Transform, f.SourceIDs))
	}
	return strings.Join(parts, ", ")
}

func sortOrderString(o table.SortOrder) string {
	var parts []string
	for _, f := range o.Fields() {
		parts = append(parts, fmt.Sprintf("%s(%v) %s %s", f.Transform, f.SourceIDs, f.Direction, f.NullOrder))
	}
	return strings.Join(parts, ", ")
}
