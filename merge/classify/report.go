package classify

import "strconv"

// Class says what a merge can do with a table both branches may have
// changed since their merge base.
type Class string

const (
	// FastForward: only one side changed the table (or neither, or both
	// hold the same metadata); the merge takes the changed side as is.
	FastForward Class = "fast-forward"
	// Disjoint: both sides changed the table, but no partition and no
	// data or delete file is touched by both.
	Disjoint Class = "disjoint"
	// PartitionOverlap: both sides touched the same partitions with
	// changes that are file-compatible (e.g. appends on both sides).
	// Whether the union is right is the table's rule (duplicates).
	PartitionOverlap Class = "partition-overlap"
	// FileConflict: one side removed or rewrote files the other side also
	// removed, rewrote or deleted rows from, or a row-level delete on the
	// source must see rows the target added (serializable isolation).
	// Replaying the source's snapshots file by file would be wrong.
	FileConflict Class = "file-conflict"
	// Structural: the source changed the table's structure (schema,
	// partition spec, sort order, format version, identifier fields), the
	// table was created, dropped or replaced on a side, or a side's
	// history does not descend from the base's snapshot.
	Structural Class = "structural"
)

// The merge commit's record of each table the merge engine resolved
// (both sides changed it), as commit properties keyed by the table's
// dotted name: PropClass+name is its Class, PropResolution+name what the
// engine did (a Resolution). They are written in the merge commit itself
// (for a transplant, in the replay of the commit that changed the table),
// so they are as durable as the merge and read back with it: the change
// feed reports them. A table the merge took at key level (only the source
// changed it, or the caller's merge mode decided) has no record.
const (
	PropClass      = "floe.merge.class."
	PropResolution = "floe.merge.resolution."
)

// Resolution is what the merge engine did with a table it merged.
type Resolution string

const (
	// CherryPicked: the source's snapshots were copied onto the target's
	// head as they are.
	CherryPicked Resolution = "cherry-picked"
	// Replayed: at least one snapshot was rebased by replaying its
	// recorded operation or its file changes (a file conflict resolved).
	Replayed Resolution = "replayed"
	// RowMerged: data files rewritten on both sides were merged by row id.
	RowMerged Resolution = "row-merged"
	// AlreadyMerged: every snapshot of the source was on the target; only
	// the source's other metadata changes, if any, were carried.
	AlreadyMerged Resolution = "already-merged"
)

// Table is the classification of one table: the document a dry-run merge
// returns per table that changed on both sides. Slices are never null in
// JSON, so readers need no null checks.
type Table struct {
	// Key names the table (namespace elements and name); set by callers
	// that classify by key.
	Key []string `json:"key,omitempty"`
	// Class is the outcome; Reason says why, in words.
	Class  Class  `json:"class"`
	Reason string `json:"reason"`
	// BaseMetadataLocation and BaseSnapshotID are the table at the merge
	// base ("" and nil when the table did not exist there, or had no
	// snapshot).
	BaseMetadataLocation string `json:"baseMetadataLocation,omitempty"`
	BaseSnapshotID       *int64 `json:"baseSnapshotId"`
	// Source and Target are what each side did since the base.
	Source Side `json:"source"`
	Target Side `json:"target"`
	// CommonPartitions are the partitions both sides touched.
	CommonPartitions []Partition `json:"commonPartitions"`
	// ConflictingFiles are the files behind a file conflict: removed (or
	// row-deleted) on one side and removed or rewritten on the other.
	ConflictingFiles []string `json:"conflictingFiles"`
	// RowMergedFiles are data files of the base both sides rewrote, which
	// the merge merges by row id (the table's PropRowLevel is rows); empty
	// otherwise.
	RowMergedFiles []string `json:"rowMergedFiles"`
}

// Side is what one branch did to the table since the merge base.
type Side struct {
	// Changed is false when the side holds the base's metadata.
	Changed          bool   `json:"changed"`
	MetadataLocation string `json:"metadataLocation,omitempty"`
	// HeadSnapshotID is the snapshot of the table's main ref (or its
	// current snapshot) on this side.
	HeadSnapshotID *int64 `json:"headSnapshotId"`
	// Snapshots are the snapshots the side added since the base's
	// snapshot, oldest first.
	Snapshots []Snapshot `json:"snapshots"`
	// StructuralChanges name each difference of the table's structure
	// from the base, e.g. "column 3 renamed from amount to total".
	StructuralChanges []string `json:"structuralChanges"`
	// Partitions are the partitions the side's changes touched (added or
	// removed files, data or delete).
	Partitions []Partition `json:"partitions"`
	// DataFiles and DeleteFiles are the net file changes over the side's
	// snapshots: a file added and removed again on the side is in
	// neither list.
	DataFiles   FileChanges `json:"dataFiles"`
	DeleteFiles FileChanges `json:"deleteFiles"`
}

// Snapshot is one snapshot a side added.
type Snapshot struct {
	SnapshotID       int64             `json:"snapshotId"`
	ParentSnapshotID *int64            `json:"parentSnapshotId"`
	SequenceNumber   int64             `json:"sequenceNumber"`
	TimestampMs      int64             `json:"timestampMs"`
	Operation        string            `json:"operation"`
	Summary          map[string]string `json:"summary"`
	// Partitions are the partitions the snapshot's own file changes
	// touched (not net: a file it added that a later snapshot removed
	// counts).
	Partitions []Partition `json:"partitions"`
	// FloeOperation is the snapshot's operation record (the
	// floe.operation.* summary properties), null when it has none.
	FloeOperation *Operation `json:"floeOperation"`
}

// FileChanges are the files of one kind (data or delete) a side added and
// removed, with their counts and record counts.
type FileChanges struct {
	Added          []File `json:"added"`
	Removed        []File `json:"removed"`
	AddedCount     int    `json:"addedCount"`
	RemovedCount   int    `json:"removedCount"`
	AddedRecords   int64  `json:"addedRecords"`
	RemovedRecords int64  `json:"removedRecords"`
}

// File is one data or delete file as its manifest entry describes it.
type File struct {
	Path string `json:"path"`
	// Content is "data", "position-deletes" or "equality-deletes".
	Content   string    `json:"content"`
	Partition Partition `json:"partition"`
	Records   int64     `json:"records"`
	SizeBytes int64     `json:"sizeBytes"`
	// SnapshotID is the snapshot of the side that added or removed it.
	SnapshotID int64 `json:"snapshotId"`
	// ReferencedDataFile is the data file a position delete file or
	// deletion vector applies to, when the writer recorded it.
	ReferencedDataFile string `json:"referencedDataFile,omitempty"`
	// ContentOffset is a deletion vector's offset in its Puffin file,
	// which may hold the vectors of several data files.
	ContentOffset *int64 `json:"contentOffset,omitempty"`
}

// key names the file within a table: its path, and for a deletion vector
// the offset of its blob too, so two vectors in one Puffin file are two
// files.
func (f File) key() string {
	if f.ContentOffset != nil {
		return f.Path + "@" + strconv.FormatInt(*f.ContentOffset, 10)
	}
	return f.Path
}

// Partition is one partition of a spec, rendered as Iceberg renders
// partition paths ("day=2026-08-20/region=eu"; "" for an unpartitioned
// spec). Partitions compare only within one spec id.
type Partition struct {
	SpecID int32  `json:"specId"`
	Path   string `json:"path"`
}

// String renders p for people: its path, with the spec id when not 0.
func (p Partition) String() string {
	s := p.Path
	if s == "" {
		s = "(unpartitioned)"
	}
	if p.SpecID != 0 {
		s += " [spec " + itoa(int64(p.SpecID)) + "]"
	}
	return s
}
