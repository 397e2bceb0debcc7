package classify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/versionstore"
)

// StructureKind says what part of a table's structure a change is of.
type StructureKind string

// Kinds of structure changes.
const (
	// StructureTable: the table itself (its uuid: replaced; its format
	// version).
	StructureTable StructureKind = "table"
	// StructureSchema: the current schema: its id, a column (by field
	// id), the identifier fields.
	StructureSchema StructureKind = "schema"
	// StructureSpec: the default partition spec.
	StructureSpec StructureKind = "partition-spec"
	// StructureSortOrder: the default sort order.
	StructureSortOrder StructureKind = "sort-order"
)

// StructureChange is one difference of a table's structure between two
// versions of its metadata: the one notion of structure that
// classification, the merge engine, the merge checks and the merge queue
// share.
type StructureChange struct {
	Kind StructureKind `json:"kind"`
	// Text says it in words: "column 4 note added (string)".
	Text string `json:"text"`
	// Compatible: data files written under the old structure read right
	// under the new one, through field ids, so a merge may carry the
	// change from one side onto rows the other side wrote: a new optional
	// column (or a required one with an initial default), a column
	// dropped or renamed, a type promotion the Iceberg spec allows (int to
	// long, float to double, decimal precision widened, v3's unknown to
	// any type), a column made optional, new identifier fields, a new
	// partition spec or sort order, the new current schema id that
	// carries them. Not compatible: a new required column without a
	// default, any other type change, a column made required, a new table
	// uuid or format version.
	Compatible bool `json:"compatible"`
	// Additive: a new optional column, or the current schema id that
	// carries it; nothing else (mergecheck's "additive" schema rule).
	Additive bool `json:"additive"`
}

// StructureChanges names every difference of to's structure from from's:
// format version, table uuid, the current schema (by id and by its
// fields' ids, names, types and required flags), identifier fields, the
// default partition spec (by id and its fields' source ids, transforms,
// field ids and names) and the default sort order (by id and its
// fields). It compares the metadata itself, never snapshot summaries,
// which a writer may not have set. Nil metadata has no structure to
// compare: no change.
func StructureChanges(from, to table.Metadata) []StructureChange {
	if from == nil || to == nil {
		return nil
	}
	var out []StructureChange
	if from.TableUUID() != to.TableUUID() {
		out = append(out, StructureChange{Kind: StructureTable, Text: fmt.Sprintf("table replaced (uuid %s, was %s)", to.TableUUID(), from.TableUUID())})
	}
	if from.Version() != to.Version() {
		out = append(out, StructureChange{Kind: StructureTable, Text: fmt.Sprintf("format version %d, was %d", to.Version(), from.Version())})
	}
	out = append(out, schemaChanges(from.CurrentSchema(), to.CurrentSchema())...)
	bs, ss := from.PartitionSpec(), to.PartitionSpec()
	if d := specDiff(&bs, &ss); d != "" {
		out = append(out, StructureChange{Kind: StructureSpec, Text: d, Compatible: true})
	}
	bo, so := from.SortOrder(), to.SortOrder()
	if bo.OrderID() != so.OrderID() || sortOrderString(bo) != sortOrderString(so) {
		out = append(out, StructureChange{Kind: StructureSortOrder, Compatible: true,
			Text: fmt.Sprintf("sort order %d [%s], was %d [%s]", so.OrderID(), sortOrderString(so), bo.OrderID(), sortOrderString(bo))})
	}
	return out
}

// StructureConflict says why a merge of a table both sides changed since base
// cannot carry their structure ("" when it can): the source changed it
// in a way that is not compatible (StructureChange.Compatible), or
// replaced the table; or both sides changed it, differently. A
// compatible change of one side merges: the merged table takes that
// side's structure, every data file keeps its own spec and schema and is
// read through field ids. The target's changes alone never make a merge
// structural but for a new table uuid or format version: the source's
// snapshots, written under the base's structure, which the target still
// holds, apply to it as they are.
func StructureConflict(base, source, target table.Metadata) string {
	if base == nil || source == nil || target == nil {
		return ""
	}
	src, tgt := StructureChanges(base, source), StructureChanges(base, target)
	var bad []string
	for _, c := range src {
		if !c.Compatible {
			bad = append(bad, c.Text)
		}
	}
	if len(bad) > 0 {
		return "the source changed the table's structure in a way rows written before cannot be read through: " + strings.Join(bad, "; ")
	}
	for _, c := range tgt {
		if c.Kind == StructureTable {
			bad = append(bad, c.Text)
		}
	}
	if len(bad) > 0 {
		return "the target replaced the table: " + strings.Join(bad, "; ")
	}
	if len(src) > 0 && len(tgt) > 0 && len(StructureChanges(target, source)) > 0 {
		return "both sides changed the table's structure: the source " + changeTexts(src) + "; the target " + changeTexts(tgt)
	}
	return ""
}

// structuralChanges is StructureChanges in words: what a side's document
// lists.
func structuralChanges(base, side table.Metadata) []string {
	out := []string{}
	for _, c := range StructureChanges(base, side) {
		out = append(out, c.Text)
	}
	return out
}

func changeTexts(cs []StructureChange) string {
	texts := make([]string, len(cs))
	for i, c := range cs {
		texts[i] = c.Text
	}
	return "(" + strings.Join(texts, "; ") + ")"
}

func schemaChanges(base, side *iceberg.Schema) []StructureChange {
	var out []StructureChange
	add := func(text string, compatible, additive bool) {
		out = append(out, StructureChange{Kind: StructureSchema, Text: text, Compatible: compatible, Additive: additive})
	}
	if base == nil || side == nil {
		if base != side {
			add("current schema changed", false, false)
		}
		return out
	}
	if base.ID != side.ID {
		add(fmt.Sprintf("current schema %d, was %d", side.ID, base.ID), true, true)
	}
	bf, err1 := iceberg.IndexByID(base)
	sf, err2 := iceberg.IndexByID(side)
	if err1 != nil || err2 != nil {
		add("current schema unreadable", false, false)
		return out
	}
	bn, sn := fullNames(base), fullNames(side)
	for _, id := range sortedIDs(bf, sf) {
		b, inBase := bf[id]
		s, inSide := sf[id]
		switch {
		case !inBase:
			add(fmt.Sprintf("column %d %s added (%s)", id, sn[id], s.Type), !s.Required || s.InitialDefault != nil, !s.Required)
		case !inSide:
			add(fmt.Sprintf("column %d %s dropped", id, bn[id]), true, false)
		default:
			if bn[id] != sn[id] {
				add(fmt.Sprintf("column %d renamed from %s to %s", id, bn[id], sn[id]), true, false)
			}
			// Nested types are compared through their own fields.
			_, nested := b.Type.(iceberg.NestedType)
			if !nested && !b.Type.Equals(s.Type) {
				add(fmt.Sprintf("column %d %s type changed from %s to %s", id, sn[id], b.Type, s.Type), promotable(b.Type, s.Type), false)
			}
			if b.Required != s.Required {
				add(fmt.Sprintf("column %d %s required changed to %t", id, sn[id], s.Required), !s.Required, false)
			}
		}
	}
	bi, si := slices.Sorted(slices.Values(base.IdentifierFieldIDs)), slices.Sorted(slices.Values(side.IdentifierFieldIDs))
	if !slices.Equal(bi, si) {
		add(fmt.Sprintf("identifier fields %v, were %v", si, bi), true, false)
	}
	return out
}

// promotable reports whether the Iceberg spec lets a column of type from
// be read as to: int to long, float to double, decimal(P, S) to
// decimal(P', S) with P' > P, and (v3) unknown to any type. Date to
// timestamp, which v3 allows with conditions on partition transforms,
// is not taken as compatible.
func promotable(from, to iceberg.Type) bool {
	switch f := from.(type) {
	case iceberg.Int32Type:
		_, ok := to.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := to.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		t, ok := to.(iceberg.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() > f.Precision()
	case iceberg.UnknownType:
		return true
	}
	return false
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

// StructureChangedIDs says how source's structure differs from base's as
// far as the ids a version-store value records tell (table uuid, current
// schema, default partition spec, default sort order): "" when they are
// equal. It is StructureChanges for callers that do not read metadata
// (the merge queue's review of schema changes): every change
// StructureChanges names moves one of these ids, but a format version
// upgrade. A value that is not a table, or a missing one (created or
// dropped), has no structure to compare.
func StructureChangedIDs(base, source *versionstore.Content) string {
	switch {
	case base == nil || source == nil || base.Type != versionstore.IcebergTable || source.Type != versionstore.IcebergTable:
		return ""
	case base.UUID != "" && source.UUID != "" && base.UUID != source.UUID:
		return "the source replaced the table (new table UUID)"
	case base.SchemaID != source.SchemaID:
		return fmt.Sprintf("the source changed the schema (id %d to %d)", base.SchemaID, source.SchemaID)
	case base.SpecID != source.SpecID:
		return fmt.Sprintf("the source changed the partition spec (id %d to %d)", base.SpecID, source.SpecID)
	case base.SortOrderID != source.SortOrderID:
		return fmt.Sprintf("the source changed the sort order (id %d to %d)", base.SortOrderID, source.SortOrderID)
	}
	return ""
}
