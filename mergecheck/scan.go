package mergecheck

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/classify"
	"github.com/floe-catalog/floe/icebergtable"
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

	// chain are the snapshots of the candidate's main ref that are not in
	// the target head's history, oldest first, copies of target
	// snapshots included (classify leaves those out; lineage must not).
	chain []table.Snapshot
	// unrooted says why the candidate's history does not contain the
	// target's head snapshot ("" when it does).
	unrooted string
	// added are the files the chain's snapshots added (ADDED entries of
	// the manifests they wrote), by path, with their statistics.
	added map[string]addedFile
	// targetLive are the target head's live data and delete files by
	// path; targetRecords the live data files' records per partition.
	targetLive    map[string]classify.Partition
	targetRecords map[classify.Partition]int64
	// targetHistory are the snapshot ids of the target's main-ref
	// history, with the ids those snapshots copy.
	targetHistory map[int64]bool
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
		targetLive: map[string]classify.Partition{}, targetRecords: map[classify.Partition]int64{}, targetHistory: map[int64]bool{}}
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
	s.chain, s.unrooted = chainSince(s.tgtMeta, s.candMeta)
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
// files (for the double-publish check and the records before) and its
// main-ref history.
func (v *Validator) readTargetLive(ctx context.Context, s *tableScan) error {
	meta := s.tgtMeta
	limit := len(meta.Snapshots()) // a copy of every snapshot: taken once
	for id, n := classify.HeadSnapshotID(meta), 0; id != nil && n <= limit; n++ {
		snap := meta.SnapshotByID(*id)
		if snap == nil {
			break // expired: what is left is still the history
		}
		for _, c := range changeIDs(*snap) {
			s.targetHistory[c] = true
		}
		id = snap.ParentSnapshotID
	}
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

// chainSince walks cand's main ref back to where it meets the target's
// main-ref history (a snapshot of it: the same id and manifest list) and
// returns the snapshots on the way, oldest first. If it meets that
// history below the target's head, or never (a root, an expired
// snapshot, a cycle), the candidate's history does not contain the
// target's head, and why is returned with what was walked.
func chainSince(tgt, cand table.Metadata) ([]table.Snapshot, string) {
	history := map[int64]string{} // the target's main-ref history: id -> manifest list
	var head *int64
	if tgt != nil {
		head = classify.HeadSnapshotID(tgt)
		limit := len(tgt.Snapshots()) // a copy of every snapshot: taken once
		for id, n := head, 0; id != nil && n <= limit; n++ {
			s := tgt.SnapshotByID(*id)
			if s == nil {
				break
			}
			history[s.SnapshotID] = s.ManifestList
			id = s.ParentSnapshotID
		}
	}
	var chain []table.Snapshot
	why := ""
	id := classify.HeadSnapshotID(cand)
	candSnapshots := len(cand.Snapshots())
	for walked := 0; ; walked++ {
		if id == nil {
			if head != nil {
				why = fmt.Sprintf("the candidate's history does not contain the target's head snapshot %d", *head)
			}
			break
		}
		s := cand.SnapshotByID(*id)
		if s == nil {
			why = fmt.Sprintf("snapshot %d of the candidate's history is not in its metadata (expired?)", *id)
			break
		}
		if list, ok := history[s.SnapshotID]; ok && list == s.ManifestList {
			if s.SnapshotID != *head {
				why = fmt.Sprintf("the candidate's history does not contain the target's head snapshot %d (it forks at snapshot %d)", *head, s.SnapshotID)
			}
			break
		}
		if walked > candSnapshots {
			why = "the candidate's snapshots' parents form a cycle"
			break
		}
		chain = append(chain, *s)
		id = s.ParentSnapshotID
	}
	slices.Reverse(chain)
	return chain, why
}

// changeIDs names the change s made: its id and, for a cherry-picked
// copy, the id of the snapshot it copies (classify's rule).
func changeIDs(s table.Snapshot) []int64 {
	ids := []int64{s.SnapshotID}
	if s.Summary != nil {
		if src, err := strconv.ParseInt(s.Summary.Properties[classify.SummarySourceSnapshotID], 10, 64); err == nil && src != s.SnapshotID {
			ids = append(ids, src)
		}
	}
	return ids
}
