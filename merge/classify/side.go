package classify

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/tablemerge"
)

// sideChanges is what classification needs of one side, indexed: the
// net file changes by path and the partitions they touched.
type sideChanges struct {
	// diverged, when set, says why the side's history does not descend
	// from the base's snapshot.
	diverged string
	// structure, when set, says why the sides' structures cannot merge
	// (StructureConflict; set on the source's changes).
	structure  string
	partitions map[Partition]bool
	dataAdded  map[string]File
	// removed holds data and delete files the side removed.
	removed      map[string]File
	deletesAdded map[string]File
	// dataRemovedParts are the partitions where the side removed data
	// files.
	dataRemovedParts map[Partition]bool
	// rowDeletes are the partitions where a delete or overwrite snapshot
	// of the side removed data files or added delete files, with those
	// snapshots' operations.
	rowDeletes map[Partition]map[string]bool
	// rowsAddedParts are the partitions where a snapshot of the side
	// added data files with new rows: any operation but a rewrite
	// (replace), counted per snapshot, so rows appended and then compacted
	// on the side still count.
	rowsAddedParts map[Partition]bool
}

func (s *sideChanges) removedList() []File {
	return slices.SortedFunc(maps.Values(s.removed), func(a, b File) int { return strings.Compare(a.key(), b.key()) })
}

// readSide fills out with what meta's side added since base and returns
// it indexed. A side that did not change is read for its head only.
// descends says the side must hold every change of base (else it has
// diverged); without it the side is what it added since its history met
// base's. Snapshots whose change is in common (the other side holds it:
// holds) are left out, as the base's are.
func (c *Classifier) readSide(ctx context.Context, out *Side, base, meta table.Metadata, changed, descends bool, common map[int64]bool) (*sideChanges, error) {
	ch := &sideChanges{
		partitions: map[Partition]bool{}, dataAdded: map[string]File{}, removed: map[string]File{},
		deletesAdded: map[string]File{}, dataRemovedParts: map[Partition]bool{},
		rowDeletes: map[Partition]map[string]bool{}, rowsAddedParts: map[Partition]bool{},
	}
	if meta == nil {
		return ch, nil
	}
	out.HeadSnapshotID = headSnapshot(meta)
	if !changed {
		return ch, nil
	}
	if base != nil {
		out.StructuralChanges = structuralChanges(base, meta)
	}
	chain, diverged := addedSnapshots(base, meta, descends)
	chain = slices.DeleteFunc(chain, func(s table.Snapshot) bool {
		return tablemerge.ChangeSet(common).Holds(s)
	})
	ch.diverged = diverged
	for _, s := range chain {
		out.Snapshots = append(out.Snapshots, snapshotReport(s))
	}
	if diverged != "" {
		return ch, nil
	}
	// Net changes, oldest snapshot first: a file added then removed on
	// the side is no change; removed then re-added neither.
	for i, s := range chain {
		parts, err := c.readSnapshot(ctx, meta, s, ch)
		if err != nil {
			return nil, err
		}
		out.Snapshots[i].Partitions = append(out.Snapshots[i].Partitions, slices.Collect(maps.Keys(parts))...)
		sortPartitions(out.Snapshots[i].Partitions)
	}
	fill := func(fc *FileChanges, added, removed []File) {
		fc.Added, fc.Removed = added, removed
		fc.AddedCount, fc.RemovedCount = len(added), len(removed)
		for _, f := range added {
			fc.AddedRecords += f.Records
		}
		for _, f := range removed {
			fc.RemovedRecords += f.Records
		}
	}
	var dataRemoved, deletesRemoved []File
	for _, f := range ch.removedList() {
		if f.Content == "data" {
			dataRemoved = append(dataRemoved, f)
		} else {
			deletesRemoved = append(deletesRemoved, f)
		}
	}
	fill(&out.DataFiles, sortedFiles(ch.dataAdded), orEmpty(dataRemoved))
	fill(&out.DeleteFiles, sortedFiles(ch.deletesAdded), orEmpty(deletesRemoved))
	for _, f := range out.DataFiles.Removed {
		ch.dataRemovedParts[f.Partition] = true
	}
	for _, fs := range [][]File{out.DataFiles.Added, out.DataFiles.Removed, out.DeleteFiles.Added, out.DeleteFiles.Removed} {
		for _, f := range fs {
			ch.partitions[f.Partition] = true
		}
	}
	out.Partitions = slices.Collect(maps.Keys(ch.partitions))
	sortPartitions(out.Partitions)
	return ch, nil
}

// SummarySourceSnapshotID is the snapshot summary property a cherry-picked
// copy carries: the id of the snapshot it copies (package tablemerge
// writes it). A copy adds the same files as the snapshot it names: the
// same change (tablemerge.ChangeIDs).
const SummarySourceSnapshotID = tablemerge.SummarySourceSnapshotID

// Lineage is a table's main-ref history read against another's by
// changes (tablemerge.Since): what it added, the other's changes it holds
// through copies, what it repeats, what it lacks.
type Lineage = tablemerge.Lineage

// LineageSince reads side's main-ref history against base's: the one
// notion of "already on the other side" that classification, the merge
// engine and the merge checks share (tablemerge.Since).
func LineageSince(base, side table.Metadata) Lineage { return tablemerge.Since(base, side) }

// addedSnapshots returns the snapshots of meta's main ref whose changes
// the base does not hold, oldest first (tablemerge.Since): it walks the
// ref back until it meets a snapshot of the base's main-ref history (the
// same id and manifest list: from there on the histories are one), and
// leaves out on the way every snapshot that is the same change as one of
// the base's: a cherry-picked copy of it, or a copy the base holds of it.
// That is what a branch merged into another, then merged back, looks
// like: the other side's history reaches the base's changes through
// copies, and only what it added besides is its change.
//
// If descends and some change of the base is not in meta's history (a
// rollback past it, an expired snapshot) the history has diverged and the
// reason is returned with the snapshots walked.
func addedSnapshots(base, meta table.Metadata, descends bool) ([]table.Snapshot, string) {
	l := tablemerge.Since(base, meta)
	switch {
	case l.Broken != "":
		return l.Added, l.Broken
	case descends && len(l.Missing) > 0:
		return l.Added, fmt.Sprintf("the base's snapshot %d is not an ancestor of the main ref's snapshot %s", l.Missing[0], idString(headSnapshot(meta)))
	}
	return l.Added, ""
}

// holds names the changes meta's side added since base (nil when it has
// no metadata).
func holds(base, meta table.Metadata, descends bool) map[int64]bool {
	if meta == nil {
		return nil
	}
	chain, _ := addedSnapshots(base, meta, descends)
	return tablemerge.ChangeSetOf(chain...)
}

// readSnapshot reads the manifests s added, records the files s added
// and removed in ch, and returns the partitions they touched.
func (c *Classifier) readSnapshot(ctx context.Context, meta table.Metadata, s table.Snapshot, ch *sideChanges) (map[Partition]bool, error) {
	wh, err := c.warehouseOf(s.ManifestList)
	if err != nil {
		return nil, err
	}
	mfs, err := wh.ReadSnapshotManifests(ctx, &s)
	if err != nil {
		return nil, err
	}
	touched := map[Partition]bool{}
	op := ""
	if s.Summary != nil {
		op = string(s.Summary.Operation)
	}
	rowDelete := op == string(table.OpDelete) || op == string(table.OpOverwrite)
	for _, mf := range mfs {
		// A manifest another snapshot wrote holds no change of s; one s
		// wrote may still carry older files as EXISTING entries.
		if mf.SnapshotID() != s.SnapshotID || (mf.AddedDataFiles() == 0 && mf.DeletedDataFiles() == 0) {
			continue
		}
		entries, err := wh.ReadManifestEntries(ctx, mf)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", s.SnapshotID, err)
		}
		for _, e := range entries {
			if e.SnapshotID() != s.SnapshotID || e.Status() == iceberg.EntryStatusEXISTING {
				continue
			}
			f := fileOf(meta, e, s.SnapshotID)
			deleteFile := f.Content != "data"
			touched[f.Partition] = true
			if e.Status() == iceberg.EntryStatusADDED {
				if !deleteFile && op != string(table.OpReplace) {
					ch.rowsAddedParts[f.Partition] = true
				}
				if _, ok := ch.removed[f.key()]; ok {
					delete(ch.removed, f.key())
				} else if deleteFile {
					ch.deletesAdded[f.key()] = f
				} else {
					ch.dataAdded[f.key()] = f
				}
				if deleteFile && rowDelete {
					markRowDelete(ch, f.Partition, op)
				}
				continue
			}
			// Deleted.
			_, addedHere := ch.dataAdded[f.key()]
			_, delAddedHere := ch.deletesAdded[f.key()]
			switch {
			case addedHere:
				delete(ch.dataAdded, f.key())
			case delAddedHere:
				delete(ch.deletesAdded, f.key())
			default:
				ch.removed[f.key()] = f
				if !deleteFile && rowDelete {
					markRowDelete(ch, f.Partition, op)
				}
			}
		}
	}
	return touched, nil
}

func markRowDelete(ch *sideChanges, p Partition, op string) {
	if ch.rowDeletes[p] == nil {
		ch.rowDeletes[p] = map[string]bool{}
	}
	ch.rowDeletes[p][op] = true
}

func (c *Classifier) warehouseOf(loc string) (*icebergtable.Warehouse, error) {
	if wh := icebergtable.Innermost(loc, c.warehouses); wh != nil {
		return wh, nil
	}
	return nil, fmt.Errorf("manifest location %s lies in no warehouse", loc)
}

// fileOf describes the file of entry e, its partition rendered per the
// spec it was written with.
func fileOf(meta table.Metadata, e iceberg.ManifestEntry, snapshotID int64) File {
	df := e.DataFile()
	f := File{
		Path: df.FilePath(), Content: contentName(df.ContentType()),
		Records: df.Count(), SizeBytes: df.FileSizeBytes(), SnapshotID: snapshotID,
		Partition: Partition{SpecID: df.SpecID(), Path: partitionPath(meta, df)},
	}
	if r := df.ReferencedDataFile(); r != nil {
		f.ReferencedDataFile = *r
	}
	f.ContentOffset = df.ContentOffset()
	return f
}

func contentName(c iceberg.ManifestEntryContent) string {
	switch c {
	case iceberg.EntryContentPosDeletes:
		return "position-deletes"
	case iceberg.EntryContentEqDeletes:
		return "equality-deletes"
	default:
		return "data"
	}
}

// partitionPath renders df's partition as Iceberg renders partition paths
// (name=value/...), with the spec df names. An unknown spec renders the
// raw values by field id, so two files still compare.
func partitionPath(meta table.Metadata, df iceberg.DataFile) string {
	values := df.Partition()
	spec := meta.PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		ids := slices.Sorted(maps.Keys(values))
		parts := make([]string, 0, len(ids))
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf("%d=%v", id, values[id]))
		}
		return strings.Join(parts, "/")
	}
	sc := meta.CurrentSchema()
	parts := make([]string, 0, spec.NumFields())
	for _, pf := range spec.Fields() {
		var src iceberg.Type = iceberg.UnknownType{}
		if len(pf.SourceIDs) > 0 && sc != nil {
			if t, ok := sc.FindTypeByID(pf.SourceIDs[0]); ok {
				src = t
			}
		}
		v := pf.Transform.ToHumanStrType(pf.Transform.ResultType(src), values[pf.FieldID])
		parts = append(parts, url.QueryEscape(pf.Name)+"="+url.QueryEscape(v))
	}
	return strings.Join(parts, "/")
}

func snapshotReport(s table.Snapshot) Snapshot {
	out := Snapshot{
		SnapshotID: s.SnapshotID, ParentSnapshotID: s.ParentSnapshotID,
		SequenceNumber: s.SequenceNumber, TimestampMs: s.TimestampMs, Summary: map[string]string{},
	}
	if s.Summary != nil {
		out.Operation = string(s.Summary.Operation)
		maps.Copy(out.Summary, s.Summary.Properties)
	}
	out.Partitions = []Partition{}
	out.FloeOperation = ParseOperation(out.Summary)
	return out
}

func sortedFiles(m map[string]File) []File {
	out := slices.SortedFunc(maps.Values(m), func(a, b File) int { return strings.Compare(a.key(), b.key()) })
	return orEmpty(out)
}

func orEmpty(fs []File) []File {
	if fs == nil {
		return []File{}
	}
	return fs
}

func idString(id *int64) string {
	if id == nil {
		return "(none)"
	}
	return itoa(*id)
}
