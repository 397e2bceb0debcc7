package mergecheck

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/versionstore"
)

// SummaryVersion is the version of the merge summary document; policies
// should check it (the default bundle does).
const SummaryVersion = 1

// Summary is the merge summary: what a candidate changes against the
// target head, computed from the store and the tables' metadata and
// manifests, never from data files. It is the input of the policy check
// and part of what external checks receive; README.md documents it.
// Lists are never null.
type Summary struct {
	Version   int    `json:"version"`
	Candidate string `json:"candidate"`
	RequestID string `json:"requestId"`
	Principal string `json:"principal"`
	Source    struct {
		Ref  string `json:"ref"`
		Hash string `json:"hash"`
	} `json:"source"`
	Target struct {
		Ref  string `json:"ref"`
		Head string `json:"head"`
	} `json:"target"`
	// Warehouse is the branch-qualified warehouse that reads the
	// candidate ("lake@<candidate>"); "" without Options.Warehouse.
	Warehouse string `json:"warehouse"`
	// Tables are the Iceberg tables the candidate changes, in key order.
	Tables []TableSummary `json:"tables"`
	// OtherChanges are the other keys it changes (namespaces, views).
	OtherChanges []KeyChange `json:"otherChanges"`
	Totals       Totals      `json:"totals"`
}

// KeyChange is one non-table key the candidate changes.
type KeyChange struct {
	Key  []string `json:"key"`
	Name string   `json:"name"`
	// Type is the content type (NAMESPACE, ICEBERG_VIEW, ...) on the
	// candidate, or on the target for a delete.
	Type   string `json:"type"`
	Change string `json:"change"` // created, updated, dropped
}

// Totals add up the tables.
type Totals struct {
	Tables             int   `json:"tables"`
	Snapshots          int   `json:"snapshots"`
	Partitions         int   `json:"partitions"`
	AddedDataFiles     int   `json:"addedDataFiles"`
	RemovedDataFiles   int   `json:"removedDataFiles"`
	AddedDeleteFiles   int   `json:"addedDeleteFiles"`
	RemovedDeleteFiles int   `json:"removedDeleteFiles"`
	AddedRecords       int64 `json:"addedRecords"`
	RemovedRecords     int64 `json:"removedRecords"`
	DeletedRecords     int64 `json:"deletedRecords"`
}

// Table changes.
const (
	ChangeCreated = "created"
	ChangeUpdated = "updated"
	ChangeDropped = "dropped"
)

// TableSummary is what the candidate does to one table.
type TableSummary struct {
	Key    []string `json:"key"`
	Name   string   `json:"name"`
	Change string   `json:"change"`
	// MetadataLocation is the table's metadata file at the candidate,
	// TargetMetadataLocation at the target head ("" where absent).
	MetadataLocation       string `json:"metadataLocation"`
	TargetMetadataLocation string `json:"targetMetadataLocation"`
	HeadSnapshotID         *int64 `json:"headSnapshotId"`
	TargetSnapshotID       *int64 `json:"targetSnapshotId"`
	// Snapshots are the snapshots the candidate adds, oldest first, as
	// classify reports them (operation, summary, partitions, operation
	// record).
	Snapshots  []classify.Snapshot `json:"snapshots"`
	Partitions []PartitionSummary  `json:"partitions"`
	// DataFiles and DeleteFiles are the net file changes' counts.
	DataFiles   FileTotals `json:"dataFiles"`
	DeleteFiles FileTotals `json:"deleteFiles"`
	// The structural differences from the target's table, by kind, in
	// classify's words; Other holds a replaced table (uuid) and a
	// format-version change.
	SchemaChanges          []string `json:"schemaChanges"`
	SpecChanges            []string `json:"specChanges"`
	SortOrderChanges       []string `json:"sortOrderChanges"`
	OtherStructuralChanges []string `json:"otherStructuralChanges"`
	// Properties are the table's properties at the candidate (at the
	// target for a drop).
	Properties map[string]string `json:"properties"`
}

// FileTotals count one kind of file a table change adds and removes.
type FileTotals struct {
	AddedCount     int   `json:"addedCount"`
	RemovedCount   int   `json:"removedCount"`
	AddedRecords   int64 `json:"addedRecords"`
	RemovedRecords int64 `json:"removedRecords"`
}

// PartitionSummary is one partition the candidate touches.
type PartitionSummary struct {
	SpecID int32  `json:"specId"`
	Path   string `json:"path"`
	// Data files and their records added and removed (net).
	AddedDataFiles   int   `json:"addedDataFiles"`
	RemovedDataFiles int   `json:"removedDataFiles"`
	AddedRecords     int64 `json:"addedRecords"`
	RemovedRecords   int64 `json:"removedRecords"`
	// Delete files added and removed; DeletedRecords are the records of
	// the added ones (rows they delete; for equality deletes at most).
	AddedDeleteFiles   int   `json:"addedDeleteFiles"`
	RemovedDeleteFiles int   `json:"removedDeleteFiles"`
	DeletedRecords     int64 `json:"deletedRecords"`
	// RecordsBefore are the records of the partition's live data files
	// at the target head; RecordsAfter = RecordsBefore + AddedRecords -
	// RemovedRecords (both before delete files apply).
	RecordsBefore int64 `json:"recordsBefore"`
	RecordsAfter  int64 `json:"recordsAfter"`
}

func keyName(k versionstore.ContentKey) string { return strings.Join(k, ".") }

// diffAll lists every key that differs between from and to.
func (v *Validator) diffAll(ctx context.Context, from, to versionstore.Hash) ([]versionstore.DiffEntry, error) {
	var out []versionstore.DiffEntry
	token := ""
	for {
		page, next, err := v.opts.Store.Diff(ctx, from, to, versionstore.DiffOptions{PageToken: token})
		if err != nil {
			return nil, fmt.Errorf("diff %s..%s: %w", from, to, err)
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		token = next
	}
}

func isTable(c *versionstore.Content) bool { return c != nil && c.Type == versionstore.IcebergTable }

// analysis is a candidate's summary with the scans behind it.
type analysis struct {
	summary *Summary
	tables  []*tableScan
}

// analyze computes the candidate's summary.
func (v *Validator) analyze(ctx context.Context, c Candidate) (*analysis, error) {
	s := &Summary{Version: SummaryVersion, Candidate: c.Commit.String(), RequestID: c.RequestID, Principal: c.Principal,
		Tables: []TableSummary{}, OtherChanges: []KeyChange{}}
	s.Source.Ref, s.Target.Ref, s.Target.Head = c.SourceRef, c.Target, c.TargetHead.String()
	if c.SourceHash != (versionstore.Hash{}) {
		s.Source.Hash = c.SourceHash.String()
	}
	if v.opts.Warehouse != "" {
		s.Warehouse = v.opts.Warehouse + "@" + c.Commit.String()
	}
	diff, err := v.diffAll(ctx, c.TargetHead, c.Commit)
	if err != nil {
		return nil, err
	}
	a := &analysis{summary: s}
	for _, d := range diff {
		if !isTable(d.From) && !isTable(d.To) {
			kc := KeyChange{Key: slices.Clone([]string(d.Key)), Name: keyName(d.Key), Change: changeOf(d.From, d.To)}
			if d.To != nil {
				kc.Type = d.To.Type.String()
			} else {
				kc.Type = d.From.Type.String()
			}
			s.OtherChanges = append(s.OtherChanges, kc)
			continue
		}
		before, after := d.From, d.To
		if !isTable(before) {
			before = nil // a view replaced by a table: the table is new
		}
		if !isTable(after) {
			after = nil
		}
		ts, err := v.scanTable(ctx, d.Key, before, after)
		if err != nil {
			return nil, err
		}
		a.tables = append(a.tables, ts)
		s.Tables = append(s.Tables, tableSummary(ts))
	}
	for _, t := range s.Tables {
		s.Totals.Tables++
		s.Totals.Snapshots += len(t.Snapshots)
		s.Totals.Partitions += len(t.Partitions)
		s.Totals.AddedDataFiles += t.DataFiles.AddedCount
		s.Totals.RemovedDataFiles += t.DataFiles.RemovedCount
		s.Totals.AddedDeleteFiles += t.DeleteFiles.AddedCount
		s.Totals.RemovedDeleteFiles += t.DeleteFiles.RemovedCount
		s.Totals.AddedRecords += t.DataFiles.AddedRecords
		s.Totals.RemovedRecords += t.DataFiles.RemovedRecords
		s.Totals.DeletedRecords += t.DeleteFiles.AddedRecords
	}
	return a, nil
}

func changeOf(from, to *versionstore.Content) string {
	switch {
	case from == nil:
		return ChangeCreated
	case to == nil:
		return ChangeDropped
	}
	return ChangeUpdated
}

// tableSummary renders one table's scan.
func tableSummary(s *tableScan) TableSummary {
	t := TableSummary{
		Key: slices.Clone([]string(s.key)), Name: keyName(s.key), Change: changeOf(s.before, s.after),
		Snapshots: []classify.Snapshot{}, Partitions: []PartitionSummary{},
		SchemaChanges: []string{}, SpecChanges: []string{}, SortOrderChanges: []string{}, OtherStructuralChanges: []string{},
		Properties: map[string]string{},
	}
	if s.before != nil {
		t.TargetMetadataLocation = s.before.MetadataLocation
		t.TargetSnapshotID = classify.HeadSnapshotID(s.tgtMeta)
		maps.Copy(t.Properties, s.tgtMeta.Properties())
	}
	if s.after == nil {
		return t
	}
	t.MetadataLocation = s.after.MetadataLocation
	t.HeadSnapshotID = classify.HeadSnapshotID(s.candMeta)
	t.Properties = maps.Clone(map[string]string(s.candMeta.Properties()))
	if t.Properties == nil {
		t.Properties = map[string]string{}
	}
	src := s.cls.Source
	t.Snapshots = src.Snapshots
	fill := func(ft *FileTotals, fc classify.FileChanges) {
		*ft = FileTotals{AddedCount: fc.AddedCount, RemovedCount: fc.RemovedCount, AddedRecords: fc.AddedRecords, RemovedRecords: fc.RemovedRecords}
	}
	fill(&t.DataFiles, src.DataFiles)
	fill(&t.DeleteFiles, src.DeleteFiles)
	parts := map[classify.Partition]*PartitionSummary{}
	for _, p := range src.Partitions {
		ps := &PartitionSummary{SpecID: p.SpecID, Path: p.Path, RecordsBefore: s.targetRecords[p]}
		parts[p] = ps
	}
	at := func(p classify.Partition) *PartitionSummary {
		if parts[p] == nil { // classify lists every partition its files touch
			parts[p] = &PartitionSummary{SpecID: p.SpecID, Path: p.Path, RecordsBefore: s.targetRecords[p]}
		}
		return parts[p]
	}
	for _, f := range src.DataFiles.Added {
		ps := at(f.Partition)
		ps.AddedDataFiles++
		ps.AddedRecords += f.Records
	}
	for _, f := range src.DataFiles.Removed {
		ps := at(f.Partition)
		ps.RemovedDataFiles++
		ps.RemovedRecords += f.Records
	}
	for _, f := range src.DeleteFiles.Added {
		ps := at(f.Partition)
		ps.AddedDeleteFiles++
		ps.DeletedRecords += f.Records
	}
	for _, f := range src.DeleteFiles.Removed {
		at(f.Partition).RemovedDeleteFiles++
	}
	for _, p := range slices.SortedFunc(maps.Keys(parts), comparePartitions) {
		ps := parts[p]
		ps.RecordsAfter = ps.RecordsBefore + ps.AddedRecords - ps.RemovedRecords
		t.Partitions = append(t.Partitions, *ps)
	}
	for _, c := range classify.StructureChanges(s.tgtMeta, s.candMeta) {
		switch c.Kind {
		case classify.StructureSchema:
			t.SchemaChanges = append(t.SchemaChanges, c.Text)
		case classify.StructureSpec:
			t.SpecChanges = append(t.SpecChanges, c.Text)
		case classify.StructureSortOrder:
			t.SortOrderChanges = append(t.SortOrderChanges, c.Text)
		default:
			t.OtherStructuralChanges = append(t.OtherStructuralChanges, c.Text)
		}
	}
	return t
}

func comparePartitions(a, b classify.Partition) int {
	if a.SpecID != b.SpecID {
		return int(a.SpecID) - int(b.SpecID)
	}
	return strings.Compare(a.Path, b.Path)
}
