package mergeengine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/tablemerge"
	"github.com/floe-catalog/floe/versionstore"
)

// A merge of a table both sides changed carries, besides the source's
// snapshots, what the source changed of the table's other metadata since
// the base, by a three-way merge against the target:
//
//   - table properties: each key the source set, changed or removed is
//     applied on the target, unless the target changed the same key to
//     something else (then the table is refused, naming the key and both
//     values); keys only the target changed stay. The shared-file
//     properties floe forces on every table (icebergtable.SharedFileProperties)
//     and Iceberg's reserved ones are never changed by a merge.
//   - table-level refs other than main (Iceberg branches and tags): one the
//     source created or moved is set on the target, pointing at the
//     cherry-picked copy of its snapshot, or at the snapshot (or a copy of
//     it) the target already has, with its retention; one pointing at a
//     snapshot that is neither refuses the table. One the source removed
//     is removed. A ref both sides changed differently (moved or removed)
//     refuses the table.
//
// Not carried, on purpose: the source's statistics and partition
// statistics files, and its snapshot log. A statistics file describes the
// table's contents as of its snapshot (NDV sketches over every row), and a
// picked copy holds the target's rows as well as the source's, so the
// source's file would describe another table; an engine recomputes it. The
// snapshot log records when this table's main moved; the merge's own moves
// are logged by the cherry-pick, and the branch's moves belong to the
// branch.

// carryMetadata applies to cp's builder what the source changed of the
// table's properties and refs since base (nil: the table had no base),
// cp.Snapshots being the copies of the source's picked snapshots. why is
// a refusal: the clashes with what the target changed.
func (e *Engine) carryMetadata(ctx context.Context, base *versionstore.Content, src, tgt table.Metadata, cp *tablemerge.Result) (why string, err error) {
	baseMeta, err := e.baseMetadata(ctx, base)
	if err != nil {
		return "", err
	}
	return mergeMetadata(baseMeta, src, tgt, cp.Builder, cp.Snapshots)
}

// carryMetadataOnly is the merge of a table whose every source snapshot
// is on the target already: nil, "" when the source changed nothing else
// the target lacks (the merge changes nothing), else the target's table
// with the source's metadata changes, written to a new metadata file.
func (e *Engine) carryMetadataOnly(ctx context.Context, wh *icebergtable.Warehouse, base *versionstore.Content, src, tgt *icebergtable.MetadataFile, w *written) (*icebergtable.MetadataFile, string, error) {
	b, err := table.MetadataBuilderFromBase(tgt.Metadata, tgt.Location)
	if err != nil {
		return nil, "", fmt.Errorf("carry metadata onto %s: %w", tgt.Location, err)
	}
	why, err := e.carryStructure(ctx, b, base, src.Metadata, tgt.Metadata)
	if err == nil && why == "" {
		why, err = e.carryMetadata(ctx, base, src.Metadata, tgt.Metadata, &tablemerge.Result{Builder: b})
	}
	if err != nil || why != "" || !b.HasChanges() {
		return nil, why, err
	}
	meta, err := b.Build()
	if err != nil {
		return nil, "", fmt.Errorf("carry metadata: build metadata: %w", err)
	}
	loc, err := wh.NewTableMetadataLocation(meta, tgt.Location)
	if err != nil {
		return nil, "", err
	}
	f, err := wh.WriteTableMetadataFrom(ctx, loc, meta, tgt)
	w.add(wh, loc)
	if err != nil {
		return nil, "", err
	}
	return f, "", nil
}

func (e *Engine) baseMetadata(ctx context.Context, base *versionstore.Content) (table.Metadata, error) {
	if base == nil {
		return nil, nil
	}
	wh := icebergtable.Innermost(base.MetadataLocation, e.warehouses)
	if wh == nil {
		return nil, fmt.Errorf("metadata file %s lies in no warehouse", base.MetadataLocation)
	}
	f, err := wh.ReadTable(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	return f.Metadata, nil
}

// mergeMetadata is carryMetadata on metadata already read; base may be
// nil. Nothing is applied to b when it refuses.
func mergeMetadata(base, src, tgt table.Metadata, b *table.MetadataBuilder, picked []table.Snapshot) (string, error) {
	var baseProps iceberg.Properties
	baseRefs := map[string]table.SnapshotRef{}
	if base != nil {
		baseProps, baseRefs = base.Properties(), maps.Collect(base.Refs())
	}
	set, remove, clashes := mergeProperties(baseProps, src.Properties(), tgt.Properties())
	refs, refClashes := mergeRefs(baseRefs, maps.Collect(src.Refs()), maps.Collect(tgt.Refs()), targetIDs(tgt, picked))
	if clashes = append(clashes, refClashes...); len(clashes) > 0 {
		return strings.Join(clashes, "; "), nil
	}
	if err := b.SetProperties(set); err != nil {
		return "", fmt.Errorf("carry table properties: %w", err)
	}
	if err := b.RemoveProperties(remove); err != nil {
		return "", fmt.Errorf("carry table properties: %w", err)
	}
	for _, r := range refs {
		if r.remove {
			if err := b.RemoveSnapshotRef(r.name); err != nil {
				return "", fmt.Errorf("carry table ref %s: %w", r.name, err)
			}
			continue
		}
		if err := setRef(r.name, r.ref).Apply(b); err != nil {
			return "", fmt.Errorf("carry table ref %s: %w", r.name, err)
		}
	}
	return "", nil
}

// protectedProperty reports whether a merge leaves key as the target has
// it: the properties floe forces on every table, and those Iceberg
// reserves (the builder refuses to set them).
func protectedProperty(key string) bool {
	return icebergtable.IsSharedFileProperty(key) || slices.Contains(table.ReservedProperties[:], key)
}

// mergeProperties is the three-way merge of table properties: what to set
// and remove on the target, or the clashes (keys both sides changed
// differently).
func mergeProperties(base, src, tgt iceberg.Properties) (set iceberg.Properties, remove, clashes []string) {
	set = iceberg.Properties{}
	for _, k := range sortedKeys(base, src) {
		bv, inBase := base[k]
		sv, inSrc := src[k]
		if (inBase == inSrc && bv == sv) || protectedProperty(k) {
			continue // the source did not change it
		}
		tv, inTgt := tgt[k]
		switch {
		case inTgt == inSrc && tv == sv: // the target has it already
		case inTgt != inBase || tv != bv:
			clashes = append(clashes, fmt.Sprintf("table property %s changed on both sides: the source %s, the target %s (base %s)",
				k, propChange(sv, inSrc), propChange(tv, inTgt), propValue(bv, inBase)))
		case inSrc:
			set[k] = sv
		default:
			remove = append(remove, k)
		}
	}
	return set, remove, clashes
}

func propChange(v string, ok bool) string {
	if !ok {
		return "removed it"
	}
	return fmt.Sprintf("set it to %q", v)
}

func propValue(v string, ok bool) string {
	if !ok {
		return "unset"
	}
	return fmt.Sprintf("%q", v)
}

// refChange is one ref to set or remove on the target.
type refChange struct {
	name   string
	ref    table.SnapshotRef
	remove bool
}

// mergeRefs is the three-way merge of the table's refs other than main.
// ids maps a snapshot id of the source to the target's snapshot for it
// (the snapshot itself, or its copy).
func mergeRefs(base, src, tgt map[string]table.SnapshotRef, ids map[int64]int64) (changes []refChange, clashes []string) {
	for _, name := range sortedKeys(base, src) {
		if name == table.MainBranch {
			continue // the merge itself moves main
		}
		br, inBase := base[name]
		sr, inSrc := src[name]
		if inBase == inSrc && br.Equals(sr) {
			continue // the source did not change it
		}
		want, mapped := sr, true
		if inSrc {
			want.SnapshotID, mapped = ids[sr.SnapshotID]
		}
		tr, inTgt := tgt[name]
		if inTgt == inSrc && (!inSrc || (mapped && tr.Equals(want))) {
			continue // the target has it already
		}
		if inTgt != inBase || (inBase && !tr.Equals(br)) {
			clashes = append(clashes, fmt.Sprintf("table %s %s changed on both sides: the source %s, the target %s (base %s)",
				refKind(sr, br, tr), name, refState(sr, inSrc), refState(tr, inTgt), refState(br, inBase)))
			continue
		}
		if !mapped {
			clashes = append(clashes, fmt.Sprintf("table %s %s of the source points at snapshot %d, which the merge does not bring to the target",
				sr.SnapshotRefType, name, sr.SnapshotID))
			continue
		}
		changes = append(changes, refChange{name: name, ref: want, remove: !inSrc})
	}
	return changes, clashes
}

// refKind names the ref's type (branch or tag) as the side that has it says.
func refKind(refs ...table.SnapshotRef) table.RefType {
	for _, r := range refs {
		if r.SnapshotRefType != "" {
			return r.SnapshotRefType
		}
	}
	return "ref"
}

func refState(r table.SnapshotRef, ok bool) string {
	if !ok {
		return "removed"
	}
	s := fmt.Sprintf("at snapshot %d", r.SnapshotID)
	if r.MaxRefAgeMs != nil {
		s += fmt.Sprintf(", max-ref-age-ms %d", *r.MaxRefAgeMs)
	}
	if r.MaxSnapshotAgeMs != nil {
		s += fmt.Sprintf(", max-snapshot-age-ms %d", *r.MaxSnapshotAgeMs)
	}
	if r.MinSnapshotsToKeep != nil {
		s += fmt.Sprintf(", min-snapshots-to-keep %d", *r.MinSnapshotsToKeep)
	}
	return s
}

// setRef is the update that sets ref name to r, retention included.
func setRef(name string, r table.SnapshotRef) table.Update {
	var maxRefAge, maxSnapshotAge int64
	var minSnapshots int
	if r.MaxRefAgeMs != nil {
		maxRefAge = *r.MaxRefAgeMs
	}
	if r.MaxSnapshotAgeMs != nil {
		maxSnapshotAge = *r.MaxSnapshotAgeMs
	}
	if r.MinSnapshotsToKeep != nil {
		minSnapshots = *r.MinSnapshotsToKeep
	}
	return table.NewSetSnapshotRefUpdate(name, r.SnapshotID, r.SnapshotRefType, maxRefAge, maxSnapshotAge, minSnapshots)
}

// targetIDs maps each snapshot id the merged target stands for to its
// snapshot there: the target's own snapshots, the snapshots its copies
// (earlier merges') copy, and the snapshots picked now, to their copies.
// A snapshot of its own wins over a copy naming the same id.
func targetIDs(tgt table.Metadata, picked []table.Snapshot) map[int64]int64 {
	ids := map[int64]int64{}
	for _, s := range tgt.Snapshots() {
		if src, ok := sourceID(s); ok {
			if _, has := ids[src]; !has {
				ids[src] = s.SnapshotID
			}
		}
	}
	for _, s := range tgt.Snapshots() {
		ids[s.SnapshotID] = s.SnapshotID
	}
	for _, s := range picked {
		if src, ok := sourceID(s); ok {
			ids[src] = s.SnapshotID // the copy made now is the one the ref means
		}
	}
	return ids
}

func sortedKeys[V any](ms ...map[string]V) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}
