package classify

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/versionstore"
)

// Discard is what taking the source's version of a table whole (a merge
// with Nessie's FORCE) throws away of the target: every change the target
// made to the table since the merge base that the source does not hold.
// Rows are record counts from the manifests; no data file is read.
type Discard struct {
	// Key names the table; set by callers that work by key.
	Key []string `json:"key,omitempty"`
	// Snapshots are the target's snapshots since the base that the source
	// does not hold, oldest first: the merge takes them out of the
	// table's history.
	Snapshots []Snapshot `json:"snapshots"`
	// DataFiles are the target's net data file changes since the base:
	// the files it added are gone after the merge (AddedRecords rows),
	// and the files it removed that the source did not remove are live
	// again (RemovedRecords rows come back).
	DataFiles FileChanges `json:"dataFiles"`
	// DeleteFiles likewise: the rows the target's delete files deleted
	// come back, and the delete files it removed apply again.
	DeleteFiles FileChanges `json:"deleteFiles"`
	// StructuralChanges are the target's changes to the table's
	// structure since the base (schema, spec, ...), undone.
	StructuralChanges []string `json:"structuralChanges"`
	// TargetDropped: the target dropped the table and the merge brings
	// the source's back. SourceDropped: the source dropped it and the
	// merge drops the target's, every row of it (TargetTotalRecords).
	TargetDropped bool `json:"targetDropped,omitempty"`
	SourceDropped bool `json:"sourceDropped,omitempty"`
	// TargetTotalRecords is the target's table's row count (its head
	// snapshot's total-records), -1 when the summary does not say.
	TargetTotalRecords int64 `json:"targetTotalRecords"`
	// Diverged, when set, says why the target's history does not descend
	// from the base's snapshot: its file changes are not listed.
	Diverged string `json:"diverged,omitempty"`
	// Unreadable, when set, says why what is discarded could not be
	// read: the report lists nothing, which is not "nothing is lost".
	Unreadable string `json:"unreadable,omitempty"`
	// Summary says it all in words, for messages and terminals.
	Summary string `json:"summary"`
}

// Empty reports whether the merge discards nothing of the target.
func (d *Discard) Empty() bool {
	return d == nil || (!d.TargetDropped && !d.SourceDropped && d.Diverged == "" && d.Unreadable == "" && len(d.Snapshots) == 0 &&
		d.DataFiles.AddedCount == 0 && d.DataFiles.RemovedCount == 0 &&
		d.DeleteFiles.AddedCount == 0 && d.DeleteFiles.RemovedCount == 0 && len(d.StructuralChanges) == 0)
}

// Discard reports what a merge that takes source's value of one table
// whole throws away of target's, the three values as Classify takes them.
// It returns nil when the target did not change the table since base
// (nothing of it is lost). Errors are for unreadable metadata or
// manifests.
func (c *Classifier) Discard(ctx context.Context, base, source, target *versionstore.Content) (*Discard, error) {
	for _, v := range []*versionstore.Content{base, source, target} {
		if v != nil && v.Type != versionstore.IcebergTable {
			return nil, fmt.Errorf("content %s is a %s, not an Iceberg table", v.ID, v.Type)
		}
	}
	if sameTable(base, target) || sameTable(source, target) {
		return nil, nil
	}
	d := &Discard{Snapshots: []Snapshot{}, DataFiles: emptyChanges(), DeleteFiles: emptyChanges(), StructuralChanges: []string{},
		TargetTotalRecords: -1}
	if target == nil {
		d.TargetDropped = true
		d.Summary = d.describe()
		return d, nil
	}
	var baseMeta, srcMeta table.Metadata
	if base != nil {
		f, err := c.read(ctx, base)
		if err != nil {
			return nil, fmt.Errorf("merge base: %w", err)
		}
		baseMeta = f.Metadata
	}
	if source != nil {
		f, err := c.read(ctx, source)
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		srcMeta = f.Metadata
	}
	tf, err := c.read(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	tgtMeta := tf.Metadata
	d.TargetTotalRecords = totalRecords(tgtMeta)
	d.SourceDropped = source == nil

	// The target's changes the source does not hold (a snapshot the
	// source took by an earlier merge, or its copy, stays on the table).
	side := emptySide()
	tgt, err := c.readSide(ctx, &side, baseMeta, tgtMeta, true, true, holds(baseMeta, srcMeta, true))
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	d.Diverged = tgt.diverged
	var srcRemoved map[string]bool
	if srcMeta != nil && (side.DataFiles.RemovedCount > 0 || side.DeleteFiles.RemovedCount > 0) {
		srcSide := emptySide()
		if _, err := c.readSide(ctx, &srcSide, baseMeta, srcMeta, true, true, holds(baseMeta, tgtMeta, true)); err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		srcRemoved = removedPaths(srcSide)
	}
	d.fill(side, srcRemoved)
	return d, nil
}

// TargetDiscard is what taking the source's version of a classified table
// whole would throw away of the target, from the classification's sides
// (which Classify reads in full for a table both sides changed); nil when
// the target did not change the table. Classifier.Discard is the same
// for any three values, drops included.
func TargetDiscard(t *Table) *Discard {
	if t == nil || !t.Target.Changed {
		return nil
	}
	d := &Discard{Key: t.Key, TargetTotalRecords: -1, TargetDropped: t.Target.MetadataLocation == "",
		SourceDropped: t.Source.Changed && t.Source.MetadataLocation == ""}
	d.fill(t.Target, removedPaths(t.Source))
	return d
}

// fill sets d's changes from the target's side: what it did since the
// base, but the removals the source made too (a file both sides removed
// stays removed).
func (d *Discard) fill(target Side, srcRemoved map[string]bool) {
	d.Snapshots = orEmptySnapshots(target.Snapshots)
	d.StructuralChanges = target.StructuralChanges
	if d.StructuralChanges == nil {
		d.StructuralChanges = []string{}
	}
	d.DataFiles = withoutRemoved(target.DataFiles, srcRemoved)
	d.DeleteFiles = withoutRemoved(target.DeleteFiles, srcRemoved)
	d.Summary = d.describe()
}

func removedPaths(s Side) map[string]bool {
	out := map[string]bool{}
	for _, fs := range [][]File{s.DataFiles.Removed, s.DeleteFiles.Removed} {
		for _, f := range fs {
			out[f.Path] = true
		}
	}
	return out
}

// withoutRemoved is fc without the removed files also in gone.
func withoutRemoved(fc FileChanges, gone map[string]bool) FileChanges {
	if fc.Added == nil {
		fc.Added = []File{}
	}
	kept := []File{}
	var records int64
	for _, f := range fc.Removed {
		if !gone[f.Path] {
			kept = append(kept, f)
			records += f.Records
		}
	}
	fc.Removed, fc.RemovedCount, fc.RemovedRecords = kept, len(kept), records
	return fc
}

func orEmptySnapshots(s []Snapshot) []Snapshot {
	if s == nil {
		return []Snapshot{}
	}
	return s
}

// totalRecords is the head snapshot's total-records, -1 when unknown.
func totalRecords(m table.Metadata) int64 {
	id := headSnapshot(m)
	if id == nil {
		return 0
	}
	s := m.SnapshotByID(*id)
	if s == nil || s.Summary == nil {
		return -1
	}
	var n int64
	if _, err := fmt.Sscan(s.Summary.Properties["total-records"], &n); err != nil {
		return -1
	}
	return n
}

// describe says what d discards, in one line.
func (d *Discard) describe() string {
	if d.TargetDropped {
		return "discards the target's drop of the table: the merge brings the source's table back"
	}
	if d.SourceDropped {
		rows := "all its rows"
		if d.TargetTotalRecords >= 0 {
			rows = fmt.Sprintf("%d row(s)", d.TargetTotalRecords)
		}
		return fmt.Sprintf("the source dropped the table: the merge drops the target's table with %s, including %d snapshot(s) the target added since the merge base", rows, len(d.Snapshots))
	}
	if d.Empty() {
		return "discards no snapshot, file or row of the target; only what the target changed of the table's metadata since the merge base (properties, refs), if anything"
	}
	var parts []string
	if n := len(d.Snapshots); n > 0 {
		ids := make([]string, 0, n)
		for i, s := range d.Snapshots {
			if i == 5 {
				ids = append(ids, fmt.Sprintf("+%d more", n-5))
				break
			}
			ids = append(ids, fmt.Sprintf("%s %d", orUnknown(s.Operation), s.SnapshotID))
		}
		parts = append(parts, fmt.Sprintf("%d snapshot(s) of the target (%s)", n, strings.Join(ids, ", ")))
	}
	if f := d.DataFiles; f.AddedCount > 0 {
		parts = append(parts, fmt.Sprintf("%d row(s) in %d data file(s) the target added", f.AddedRecords, f.AddedCount))
	}
	if f := d.DeleteFiles; f.AddedCount > 0 {
		parts = append(parts, fmt.Sprintf("the target's %d delete file(s) (%d deleted row(s) come back)", f.AddedCount, f.AddedRecords))
	}
	if f := d.DataFiles; f.RemovedCount > 0 {
		parts = append(parts, fmt.Sprintf("the target's removal of %d data file(s) (%d row(s) come back)", f.RemovedCount, f.RemovedRecords))
	}
	if f := d.DeleteFiles; f.RemovedCount > 0 {
		parts = append(parts, fmt.Sprintf("the target's removal of %d delete file(s) (they apply again)", f.RemovedCount))
	}
	if len(d.StructuralChanges) > 0 {
		parts = append(parts, "the target's structural changes ("+strings.Join(d.StructuralChanges, "; ")+")")
	}
	if d.Diverged != "" {
		parts = append(parts, "the target's history since the merge base ("+d.Diverged+"; its files are not listed)")
	}
	return "discards " + strings.Join(parts, ", ")
}

func orUnknown(op string) string {
	if op == "" {
		return "snapshot"
	}
	return op
}
