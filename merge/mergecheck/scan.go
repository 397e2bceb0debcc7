package mergecheck

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/versionstore"
)

// tableScan is what the checks need of one table the candidate changed,
// read from metadata and manifests only.
type tableScan struct {
	key           versionstore.ContentKey
	before, after *versionstore.Content
	// tgtMeta and candMeta are the table at the target head and at the
	// candidate (nil where it does not exist).
	tgtMeta, candMeta table.Metadata
	// cls is classify's account of what the candidate did to the table
	// since the target head (nil for a drop).
	cls *classify.Table

	// lineage is the candidate's main-ref history read against the
	// target head's by changes (classify.LineageSince): the snapshots it
	// adds, those that are the target's changes (copies the candidate
	// holds of them: a branch that took the target in by a merge), those
	// that repeat a change, and the target's changes it lacks.
	lineage classify.Lineage
	// chain are the snapshots the candidate publishes, oldest first:
	// lineage's Added and its repeats, not the copies of the target's
	// changes (those publish nothing new).
	chain []table.Snapshot
	// added are the files the chain's snapshots added (ADDED entries of
	// the manifests they wrote), by path, with their statistics.
	added map[string]addedFile
	// targetLive are the target head's live data and delete files by
	// path; targetRecords the live data files' records per partition.
	targetLive    map[string]classify.Partition
	targetRecords map[classify.Partition]int64
}

// addedFile is one file a chain snapshot added.
type addedFile struct {
	snapshotID int64
	partition  classify.Partition
	content    iceberg.ManifestEntryContent
	records    int64
	nulls      map[int]int64 // nil: the writer recorded no null counts
}

// scanTable reads what the checks need of one changed table.
func (v *Validator) scanTable(ctx context.Context, key versionstore.ContentKey, before, after *versionstore.Content) (*tableScan, error) {
	s := &tableScan{key: key, before: before, after: after, added: map[string]addedFile{},
		targetLive: map[string]classify.Partition{}, targetRecords: map[classify.Partition]int64{}}
	if before != nil {
		f, err := v.readMetadata(ctx, before)
		if err != nil {
			return nil, fmt.Errorf("table %s at the target head: %w", key, err)
		}
		s.tgtMeta = f.Metadata
	}
	if after == nil {
		return s, nil // a drop: nothing is published, nothing to count
	}
	if before != nil {
		if err := v.readTargetLive(ctx, s); err != nil {
			return nil, fmt.Errorf("table %s at the target head: %w", key, err)
		}
	}
	f, err := v.readMetadata(ctx, after)
	if err != nil {
		return nil, fmt.Errorf("table %s at the candidate: %w", key, err)
	}
	s.candMeta = f.Metadata
	cls, err := v.classifier.Classify(ctx, before, after, before)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", key, err)
	}
	cls.Key = key
	s.cls = cls
	s.lineage = classify.LineageSince(s.tgtMeta, s.candMeta)
	s.chain = published(s.lineage)
	for _, snap := range s.chain {
		if err := v.readAdded(ctx, s, snap); err != nil {
			return nil, fmt.Errorf("table %s: %w", key, err)
		}
	}
	return s, nil
}

func (v *Validator) readMetadata(ctx context.Context, c *versionstore.Content) (*icebergtable.MetadataFile, error) {
	wh := icebergtable.Innermost(c.MetadataLocation, v.opts.Warehouses)
	if wh == nil {
		return nil, fmt.Errorf("metadata location %s lies in no warehouse", c.MetadataLocation)
	}
	return wh.ReadTable(ctx, c)
}

func (v *Validator) warehouseOf(loc string) (*icebergtable.Warehouse, error) {
	if wh := icebergtable.Innermost(loc, v.opts.Warehouses); wh != nil {
		return wh, nil
	}
	return nil, fmt.Errorf("location %s lies in no warehouse", loc)
}

// readTargetLive reads the target head snapshot's manifests: its live
// files (for the double-publish check and the records before).
func (v *Validator) readTargetLive(ctx context.Context, s *tableScan) error {
	meta := s.tgtMeta
	head := classify.HeadSnapshotID(meta)
	if head == nil {
		return nil
	}
	snap := meta.SnapshotByID(*head)
	if snap == nil {
		return fmt.Errorf("head snapshot %d is not in the metadata", *head)
	}
	if lf, ok := v.live.Get(snap.ManifestList); ok {
		s.targetLive, s.targetRecords = lf.files, lf.records
		return nil
	}
	wh, err := v.warehouseOf(snap.ManifestList)
	if err != nil {
		return err
	}
	mfs, err := wh.ReadSnapshotManifests(ctx, snap)
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		entries, err := wh.ReadManifestEntries(ctx, mf)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Status() == iceberg.EntryStatusDELETED {
				continue
			}
			df := e.DataFile()
			p := classify.FilePartition(meta, df)
			s.targetLive[df.FilePath()] = p
			if df.ContentType() == iceberg.EntryContentData {
				s.targetRecords[p] += df.Count()
			}
		}
	}
	v.live.Add(snap.ManifestList, &liveFiles{files: s.targetLive, records: s.targetRecords})
	return nil
}

// readAdded records the files snap added, from the manifests it wrote.
func (v *Validator) readAdded(ctx context.Context, s *tableScan, snap table.Snapshot) error {
	wh, err := v.warehouseOf(snap.ManifestList)
	if err != nil {
		return err
	}
	mfs, err := wh.ReadSnapshotManifests(ctx, &snap)
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		if mf.SnapshotID() != snap.SnapshotID || (mf.AddedDataFiles() == 0 && mf.DeletedDataFiles() == 0) {
			continue
		}
		entries, err := wh.ReadManifestEntries(ctx, mf)
		if err != nil {
			return fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, e := range entries {
			if e.Status() != iceberg.EntryStatusADDED || e.SnapshotID() != snap.SnapshotID {
				continue
			}
			df := e.DataFile()
			s.added[df.FilePath()] = addedFile{
				snapshotID: snap.SnapshotID, partition: classify.FilePartition(s.candMeta, df),
				content: df.ContentType(), records: df.Count(), nulls: df.NullValueCounts(),
			}
		}
	}
	return nil
}

// published are the snapshots of l the candidate publishes, oldest
// first: those it adds, and the copies that repeat a change (a copy of a
// change the history has already publishes its rows again). The other
// copies of the target's changes publish nothing new.
func published(l classify.Lineage) []table.Snapshot {
	again := map[int64]bool{}
	for _, r := range l.Twice {
		again[r.Snapshot.SnapshotID] = true
	}
	out := slices.Clone(l.Added)
	for _, snap := range l.Held {
		if again[snap.SnapshotID] {
			out = append(out, snap)
		}
	}
	slices.SortStableFunc(out, func(a, b table.Snapshot) int { return cmp.Compare(a.SequenceNumber, b.SequenceNumber) })
	return out
}
