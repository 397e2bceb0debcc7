package classify

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// Classifier classifies tables whose metadata lies in its warehouses. It
// holds no state between calls and is safe for concurrent use.
type Classifier struct {
	warehouses []*icebergtable.Warehouse
}

// New returns a classifier reading through whs; a metadata location is
// read through the innermost warehouse that holds it.
func New(whs ...*icebergtable.Warehouse) *Classifier {
	return &Classifier{warehouses: whs}
}

// mainRef is the table-level branch whose history a side's change is.
const mainRef = "main"

// Classify reports what source and target did to one table since base,
// three version-store values of the same key: base is the value at the
// merge base, nil when the key did not exist there; source or target nil
// means the side dropped the table. Errors are for unreadable metadata or
// manifests; every shape of history, however odd, is a classification.
func (c *Classifier) Classify(ctx context.Context, base, source, target *versionstore.Content) (*Table, error) {
	return c.classify(ctx, base, source, target, false)
}

// ClassifyTransplant is Classify for a transplant: base and source are the
// table before and after the transplanted commit, and the target, which
// does not descend from that commit, need not hold every change of base
// either (it may lack earlier snapshots of the source's branch). Its side
// is what it did since its history meets base's; only the source's
// history must descend from base.
func (c *Classifier) ClassifyTransplant(ctx context.Context, base, source, target *versionstore.Content) (*Table, error) {
	return c.classify(ctx, base, source, target, true)
}

func (c *Classifier) classify(ctx context.Context, base, source, target *versionstore.Content, transplant bool) (*Table, error) {
	out := &Table{CommonPartitions: []Partition{}, ConflictingFiles: []string{}, RowMergedFiles: []string{}}
	out.Source, out.Target = emptySide(), emptySide()
	for _, v := range []*versionstore.Content{base, source, target} {
		if v != nil && v.Type != versionstore.IcebergTable {
			return nil, fmt.Errorf("content %s is a %s, not an Iceberg table", v.ID, v.Type)
		}
	}
	if base != nil {
		out.BaseMetadataLocation = base.MetadataLocation
	}
	srcChanged, tgtChanged := !sameTable(base, source), !sameTable(base, target)
	out.Source.Changed, out.Target.Changed = srcChanged, tgtChanged
	if source != nil {
		out.Source.MetadataLocation = source.MetadataLocation
	}
	if target != nil {
		out.Target.MetadataLocation = target.MetadataLocation
	}
	switch {
	case source == nil && target == nil:
		out.Class, out.Reason = FastForward, "both sides dropped the table"
		return out, nil
	case source == nil || target == nil:
		if !srcChanged || !tgtChanged {
			break // a drop on one side, nothing on the other
		}
		side := "source"
		if target == nil {
			side = "target"
		}
		out.Class, out.Reason = Structural, "the table was dropped on the "+side+" and changed on the other side"
		return out, nil
	case base == nil && srcChanged && tgtChanged && !sameTable(source, target):
		out.Class, out.Reason = Structural, "the table was created on both sides"
		return out, nil
	}

	var baseMeta table.Metadata
	if base != nil {
		f, err := c.read(ctx, base)
		if err != nil {
			return nil, fmt.Errorf("merge base: %w", err)
		}
		baseMeta = f.Metadata
		out.BaseSnapshotID = headSnapshot(baseMeta)
	}
	var srcMeta, tgtMeta table.Metadata
	if source != nil {
		f, err := c.read(ctx, source)
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		srcMeta = f.Metadata
	}
	if target != nil {
		f, err := c.read(ctx, target)
		if err != nil {
			return nil, fmt.Errorf("target: %w", err)
		}
		tgtMeta = f.Metadata
	}

	// A change both sides hold (one has the other's snapshot, or a copy
	// of it: merged or transplanted before) is common to them, as the
	// base's changes are: neither side's change, and no overlap.
	srcHolds, tgtHolds := holds(baseMeta, srcMeta, true), holds(baseMeta, tgtMeta, !transplant)
	src, err := c.readSide(ctx, &out.Source, baseMeta, srcMeta, srcChanged, true, tgtHolds)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	tgt, err := c.readSide(ctx, &out.Target, baseMeta, tgtMeta, tgtChanged, !transplant, srcHolds)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}

	switch {
	case !srcChanged && !tgtChanged:
		out.Class, out.Reason = FastForward, "neither side changed the table"
		return out, nil
	case !srcChanged:
		out.Class, out.Reason = FastForward, "only the target changed the table; the merge keeps it"
		return out, nil
	case !tgtChanged:
		out.Class, out.Reason = FastForward, fmt.Sprintf("only the source changed the table (%d snapshot(s)); the merge takes it", len(out.Source.Snapshots))
		return out, nil
	case sameTable(source, target):
		out.Class, out.Reason = FastForward, "both sides hold the same metadata"
		return out, nil
	}
	src.structure = StructureConflict(baseMeta, srcMeta, tgtMeta)
	decide(out, src, tgt, tgtMeta)
	return out, nil
}

// decide classifies a table both sides changed, from what each side read.
func decide(out *Table, src, tgt *sideChanges, tgtMeta table.Metadata) {
	if src.diverged != "" {
		out.Class, out.Reason = Structural, "the source's history has diverged: "+src.diverged
		return
	}
	if tgt.diverged != "" {
		out.Class, out.Reason = Structural, "the target's history has diverged: "+tgt.diverged
		return
	}
	if src.structure != "" {
		out.Class, out.Reason = Structural, src.structure
		return
	}

	common := commonPartitions(src.partitions, tgt.partitions)
	out.CommonPartitions = common
	rows := mergesRows(tgtMeta)
	conflicts, rowMerged, why := fileConflicts(src, tgt, tgtMeta, rows)
	if len(conflicts) > 0 {
		out.ConflictingFiles = conflicts
		out.Class, out.Reason = FileConflict, why
		if !rows && rowsPossible(src, tgt, tgtMeta) {
			out.Reason += fmt.Sprintf("; on a format v3 table, %s=%s merges files rewritten on both sides by row id", PropRowLevel, RowLevelRows)
		}
		return
	}
	if len(rowMerged) > 0 {
		out.RowMergedFiles = rowMerged
	}
	both := 0
	for p := range src.dataAdded {
		if _, ok := tgt.dataAdded[p]; ok {
			both++
		}
	}
	switch {
	case len(common) > 0:
		out.Class = PartitionOverlap
		out.Reason = fmt.Sprintf("both sides touched %s", partitionList(common))
		if both > 0 {
			out.Reason += fmt.Sprintf("; %d data file(s) were added on both sides (already published?)", both)
		}
		if len(rowMerged) > 0 {
			out.Reason += fmt.Sprintf("; %d data file(s) rewritten on both sides merge by row id (%s=%s)", len(rowMerged), PropRowLevel, RowLevelRows)
		}
	default:
		out.Class = Disjoint
		out.Reason = fmt.Sprintf("the sides touched different partitions (source %s; target %s)",
			partitionList(out.Source.Partitions), partitionList(out.Target.Partitions))
		switch {
		case len(out.Source.Partitions) == 0:
			out.Reason = "the source changed no data or delete file"
		case len(out.Target.Partitions) == 0:
			out.Reason = "the target changed no data or delete file"
		}
	}
}

// fileConflicts finds the files that make replaying the source's
// snapshots onto the target wrong, and says why. A file either side
// removed existed at the base (the sides' net changes exclude files they
// added themselves), so "a removed file is not on the other's head" is
// "both removed it"; deletes that apply to a file the other side removed
// would be lost; and a row-level delete or overwrite under serializable
// isolation must see the rows the target added to its partitions.
//
// With rows (the table merges by row id), data files both sides removed,
// or one side removed and the other gave a deletion vector, are no
// conflict but returned as rowMerged, with their vectors; serializable
// isolation is then kept by row id in their partitions (a row changed on
// both sides conflicts), not by partition.
func fileConflicts(src, tgt *sideChanges, tgtMeta table.Metadata, rows bool) (conflicts, rowMerged []string, reason string) {
	var files, why []string
	// Deletion vectors of one data file written on both sides merge as
	// their union (tablemerge), and so does the vector of the base both
	// replaced: it is no conflict.
	unioned := deletionVectorsOnBothSides(src.deletesAdded, tgt.deletesAdded)
	var both []string
	var bothRows int64
	rowMergedParts := map[Partition]bool{}
	inRowMerge := map[string]bool{}
	if rows {
		// Data files removed on both sides, or removed on one side and
		// given a deletion vector on the other: their rows merge by id.
		mark := func(f File) {
			if !inRowMerge[f.Path] {
				inRowMerge[f.Path] = true
				rowMerged = append(rowMerged, f.Path)
				rowMergedParts[f.Partition] = true
			}
		}
		for p, f := range src.removed {
			if _, ok := tgt.removed[p]; ok && f.Content == "data" {
				mark(f)
			}
		}
		for _, pair := range [][2]*sideChanges{{src, tgt}, {tgt, src}} {
			for _, d := range pair[0].deletesAdded {
				if f, ok := pair[1].removed[d.ReferencedDataFile]; ok && isDeletionVector(d) && f.Content == "data" {
					mark(f)
				}
			}
		}
	}
	for p, f := range src.removed {
		if isDeletionVector(f) && unioned[f.ReferencedDataFile] {
			continue
		}
		if _, ok := tgt.removed[p]; ok {
			if inRowMerge[f.Path] || isDeletionVector(f) && inRowMerge[f.ReferencedDataFile] {
				continue
			}
			both = append(both, p)
			if f.Content == "data" {
				bothRows += f.Records
			}
		}
	}
	slices.Sort(rowMerged)
	if len(both) > 0 {
		slices.Sort(both)
		files = append(files, both...)
		why = append(why, fmt.Sprintf("%d file(s) removed or rewritten on both sides (%d row(s) in their data files)", len(both), bothRows))
	}
	orphaned := func(deletes map[string]File, removed map[string]File, removedParts map[Partition]bool) []string {
		var out []string
		for p, f := range deletes {
			switch {
			case inRowMerge[f.ReferencedDataFile] && isDeletionVector(f):
				// Merged by row id.
			case f.ReferencedDataFile != "":
				if _, ok := removed[f.ReferencedDataFile]; ok {
					out = append(out, p)
				}
			case removedParts[f.Partition]:
				// Without a referenced file, a delete file may apply to any
				// data file of its partition.
				out = append(out, p)
			}
		}
		slices.Sort(out)
		return out
	}
	if o := orphaned(src.deletesAdded, tgt.removed, tgt.dataRemovedParts); len(o) > 0 {
		files = append(files, o...)
		why = append(why, fmt.Sprintf("%d delete file(s) of the source apply to data files the target removed or rewrote", len(o)))
	}
	if o := orphaned(tgt.deletesAdded, src.removed, src.dataRemovedParts); len(o) > 0 {
		files = append(files, o...)
		why = append(why, fmt.Sprintf("the source removed or rewrote data files %d delete file(s) of the target apply to", len(o)))
	}
	var serial []string
	serialParts := map[Partition]bool{}
	for part, ops := range src.rowDeletes {
		if !tgt.rowsAddedParts[part] || rowMergedParts[part] {
			continue
		}
		if prop, ok := serializable(tgtMeta, ops); ok {
			serial = append(serial, part.String()+" ("+prop+")")
			serialParts[part] = true
		}
	}
	if len(serial) > 0 {
		slices.Sort(serial)
		why = append(why, "under serializable isolation the source's delete or overwrite must see the rows the target appended in "+strings.Join(serial, ", "))
		// The source's files behind those deletes: the data files it
		// removed and the delete files it added there.
		var behind []string
		for _, m := range []map[string]File{src.removed, src.deletesAdded} {
			for p, f := range m {
				if serialParts[f.Partition] {
					behind = append(behind, p)
				}
			}
		}
		slices.Sort(behind)
		files = append(files, behind...)
	}
	slices.Sort(files)
	files = slices.Compact(files)
	return files, rowMerged, strings.Join(why, "; ")
}

// deletionVectorsOnBothSides returns the data files each side wrote a
// deletion vector for. A v3 table holds one vector per data file, so the
// merge writes their union (package tablemerge), refusing when a row is in
// both sides' new deletes; position delete files (v2) may be many per
// data file, and a reader applies them all.
func deletionVectorsOnBothSides(src, tgt map[string]File) map[string]bool {
	byData := func(m map[string]File) map[string]bool {
		out := map[string]bool{}
		for _, f := range m {
			if f.ReferencedDataFile != "" && isDeletionVector(f) {
				out[f.ReferencedDataFile] = true
			}
		}
		return out
	}
	s, t := byData(src), byData(tgt)
	out := map[string]bool{}
	for data := range s {
		if t[data] {
			out[data] = true
		}
	}
	return out
}

// isDeletionVector reports whether a delete file is a v3 deletion vector:
// a blob of a Puffin file, which only vectors have an offset into
// (position delete files are whole Parquet, Avro or ORC files).
func isDeletionVector(f File) bool {
	return f.Content == "position-deletes" && f.ContentOffset != nil
}

// serializable reports whether the operations ops, run on the source,
// run under serializable isolation by the table's properties (Iceberg's
// default), and names the property that says so. A delete is governed by
// write.delete.isolation-level; an overwrite may come from an UPDATE or a
// MERGE, and which is not recorded, so either level being serializable
// counts.
func serializable(meta table.Metadata, ops map[string]bool) (string, bool) {
	level := func(prop string) bool {
		v := "serializable"
		if meta != nil {
			v = meta.Properties().Get(prop, "serializable")
		}
		return !strings.EqualFold(v, "snapshot")
	}
	var props []string
	if ops[string(table.OpDelete)] {
		props = append(props, "write.delete.isolation-level")
	}
	if ops[string(table.OpOverwrite)] {
		props = append(props, "write.update.isolation-level", "write.merge.isolation-level")
	}
	for _, p := range props {
		if level(p) {
			return p + "=serializable", true
		}
	}
	return "", false
}

func (c *Classifier) read(ctx context.Context, v *versionstore.Content) (*icebergtable.MetadataFile, error) {
	wh := icebergtable.Innermost(v.MetadataLocation, c.warehouses)
	if wh == nil {
		return nil, fmt.Errorf("metadata location %s lies in no warehouse", v.MetadataLocation)
	}
	f, err := wh.ReadTable(ctx, v)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// sameTable reports whether two values hold the same table metadata.
func sameTable(a, b *versionstore.Content) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.MetadataLocation == b.MetadataLocation
}

// headSnapshot is the snapshot id of the table's main ref, or of its
// current snapshot when it has no main ref; nil for no snapshot.
func headSnapshot(m table.Metadata) *int64 {
	if m == nil {
		return nil
	}
	if s := m.SnapshotByName(mainRef); s != nil {
		id := s.SnapshotID
		return &id
	}
	if s := m.CurrentSnapshot(); s != nil {
		id := s.SnapshotID
		return &id
	}
	return nil
}

func emptySide() Side {
	return Side{
		Snapshots: []Snapshot{}, StructuralChanges: []string{}, Partitions: []Partition{},
		DataFiles: emptyChanges(), DeleteFiles: emptyChanges(),
	}
}

func emptyChanges() FileChanges { return FileChanges{Added: []File{}, Removed: []File{}} }

func partitionList(ps []Partition) string {
	if len(ps) == 0 {
		return "no partition"
	}
	const max = 5
	var names []string
	for i, p := range ps {
		if i == max {
			names = append(names, fmt.Sprintf("and %d more", len(ps)-max))
			break
		}
		names = append(names, p.String())
	}
	return strings.Join(names, ", ")
}

func commonPartitions(a, b map[Partition]bool) []Partition {
	out := []Partition{}
	for p := range a {
		if b[p] {
			out = append(out, p)
		}
	}
	sortPartitions(out)
	return out
}

func sortPartitions(ps []Partition) {
	slices.SortFunc(ps, func(a, b Partition) int {
		if a.SpecID != b.SpecID {
			return int(a.SpecID - b.SpecID)
		}
		return strings.Compare(a.Path, b.Path)
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
