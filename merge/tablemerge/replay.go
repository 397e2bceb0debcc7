package tablemerge

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// SummaryReplayed marks a snapshot written by replaying its source's
// change on the target's head (Pick.Replay) rather than by re-listing its
// manifests: ReplayedRecord for a recorded partition-level operation,
// ReplayedFiles for the source's own file changes (Replay.ByFiles).
const SummaryReplayed = "floe.merge.replayed"

// Values of SummaryReplayed.
const (
	ReplayedRecord = "true"
	ReplayedFiles  = "files"
)

// ErrNotReplayable: replaying the operation on the target's head would not
// do what it did on its own lineage: a file of its partitions is live on
// the target that was neither in its input nor a rewrite of its input, the
// snapshot touched files outside the partitions it says it replaced, or
// (ByFiles) a file it removed is no longer live on the target.
var ErrNotReplayable = errors.New("operation cannot be replayed on the target")

// Replay makes a pick the replay of a partition-level operation (an
// overwrite or a delete of whole partitions) on the target's head: the
// files the operation added are added again, and the files of its
// partitions live on the head that it removed on its own lineage, or that
// the target made from those by rewriting them, are removed. The caller
// decides that replaying is right (the operation's record, the table's
// isolation, what the target did to those partitions); the replay checks
// the files.
//
// With ByFiles the replay is of the snapshot's file changes themselves,
// with no record: what a copy-on-write UPDATE, DELETE or MERGE INTO, or a
// merge-on-read statement that replaced its own delete files, did. The
// files it removed are removed from the head, and every one of them must
// still be live there; the files it added are added. This is the three-way
// merge of live files (the target's, plus what the source added, minus
// what it removed), right when the caller has checked that the target
// changed none of those files and that the table's isolation level holds
// (package classify: no file conflict).
type Replay struct {
	// InScope reports whether a data or delete file lies in the
	// partitions the operation replaced or deleted (not ByFiles).
	InScope func(f iceberg.DataFile) bool
	// Rewritten are files the target added by rewriting (compacting)
	// files of the operation's input without changing their rows. They
	// are removed with the input they replaced (not ByFiles).
	Rewritten map[string]bool
	// ByFiles replays the snapshot's own file changes (above).
	ByFiles bool
	// RowMerged are data files the target removed too, whose rows the
	// cherry-pick merges by row id (RowMerge): the snapshot's removal of
	// one, and of its deletion vectors, need not find them live (ByFiles).
	RowMerged map[string]bool
}

// replayed is what replayManifests made of one pick.
type replayed struct {
	listed  []iceberg.ManifestFile // the new snapshot's whole list
	mine    []iceberg.ManifestFile // the manifests the replay wrote or re-listed
	written []string
	source  table.Snapshot // the pick with its summary's counts replaced by the replay's
}

// maxNamed bounds the files an error names.
const maxNamed = 10

// replayManifests reads the pick's own manifests (its added and removed
// files) and the head's, and returns the new list: the head's manifests,
// those holding a file the replay removes rewritten with that entry
// DELETED and the others EXISTING, followed by manifests of the files the
// pick added.
//
// It reads every manifest of the head (what a query planner reads), and
// never a data file.
func replayManifests(ctx context.Context, files Files, head table.Metadata, headManifests []iceberg.ManifestFile, p Pick, id int64, onTarget map[string]bool) (*replayed, error) {
	src := p.Snapshot
	r := &replayed{}
	mine, err := readManifestList(ctx, files, src)
	if err != nil {
		return nil, err
	}
	inParent := map[string]bool{}
	if p.Parent != nil {
		before, err := readManifestList(ctx, files, *p.Parent)
		if err != nil {
			return nil, err
		}
		for _, m := range before {
			inParent[m.FilePath()] = true
		}
	}
	removed := map[string]bool{}
	// ByFiles: the snapshot's deletion vectors by data file, to union
	// with the other side's (dvunion.go), and those it replaced.
	unions := map[string]*dvUnion{}
	replacedDVs := map[string][]iceberg.DataFile{}
	removedDVOf := map[string]string{} // a removed vector's key → its data file
	var outside []string
	type addedSet struct {
		m     iceberg.ManifestFile
		added []iceberg.ManifestEntry
		whole bool
	}
	var adds []addedSet
	for _, m := range mine {
		if inParent[m.FilePath()] {
			continue
		}
		if m.SnapshotID() != src.SnapshotID {
			return nil, fmt.Errorf("%w: snapshot %d lists manifest %s added by snapshot %d, not in its parent",
				ErrNotReplayable, src.SnapshotID, m.FilePath(), m.SnapshotID())
		}
		if head.PartitionSpecByID(int(m.PartitionSpecID())) == nil {
			return nil, fmt.Errorf("%w: manifest %s of snapshot %d uses partition spec %d, unknown to the target",
				ErrUnsupported, m.FilePath(), src.SnapshotID, m.PartitionSpecID())
		}
		entries, err := readRawEntries(ctx, files, m)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", src.SnapshotID, err)
		}
		a := addedSet{m: m, whole: true}
		for _, e := range entries {
			df := e.DataFile()
			switch e.Status() {
			case iceberg.EntryStatusADDED:
				if !p.Replay.ByFiles && !p.Replay.InScope(df) {
					outside = append(outside, df.FilePath())
				}
				if why := inherits(m, e); why != "" {
					return nil, fmt.Errorf("%w: manifest %s of snapshot %d pins the %s of %s", ErrUnsupported, m.FilePath(), src.SnapshotID, why, df.FilePath())
				}
				a.added = append(a.added, e)
				if p.Replay.ByFiles && isDeletionVector(df) {
					unions[*df.ReferencedDataFile()] = &dvUnion{dataFile: *df.ReferencedDataFile(), added: e}
				}
			case iceberg.EntryStatusDELETED:
				if !p.Replay.ByFiles && !p.Replay.InScope(df) {
					outside = append(outside, df.FilePath())
				}
				removed[fileKey(df)] = true
				a.whole = false
				if p.Replay.ByFiles && isDeletionVector(df) {
					ref := *df.ReferencedDataFile()
					replacedDVs[ref] = append(replacedDVs[ref], df)
					removedDVOf[fileKey(df)] = ref
				}
			default:
				a.whole = false
			}
		}
		adds = append(adds, a)
	}
	if len(outside) > 0 {
		return nil, fmt.Errorf("%w: snapshot %d adds or removes files outside the partitions it records: %s",
			ErrNotReplayable, src.SnapshotID, named(outside))
	}

	// The head's live files of the operation's partitions: each goes if
	// the operation removed it or the target rewrote its input into it;
	// any other data file would survive the replay or be lost with it, so
	// the replay is refused.
	var c counts
	var unsafe []string
	live := map[string]bool{} // ByFiles: removed files found live on the head
	for _, m := range headManifests {
		entries, err := readEntries(ctx, files, m, true)
		if err != nil {
			return nil, err
		}
		var drop []bool
		for i, e := range entries {
			df := e.DataFile()
			switch {
			case p.Replay.ByFiles:
				if u := unions[df.FilePath()]; u != nil && df.ContentType() == iceberg.EntryContentData {
					u.firstRowID = df.FirstRowID()
				}
				switch u := unionFor(unions, df); {
				case removed[fileKey(df)]:
					live[fileKey(df)] = true
				case u != nil:
					// The other side's vector of a data file the snapshot
					// wrote one for: superseded by their union.
					u.head = append(u.head, df)
				default:
					continue
				}
			case !p.Replay.InScope(df):
				continue
			default:
				if !removed[fileKey(df)] && !p.Replay.Rewritten[df.FilePath()] {
					// A delete file the operation left live applies, after the
					// replay, to nothing: its partition's data files are gone
					// and the added ones are newer. Kept, as on the source.
					if df.ContentType() == iceberg.EntryContentData {
						unsafe = append(unsafe, df.FilePath())
					}
					continue
				}
			}
			if drop == nil {
				drop = make([]bool, len(entries))
			}
			drop[i] = true
			c.remove(df)
		}
		if drop == nil {
			r.listed = append(r.listed, m)
			continue
		}
		ops := make([]entryOp, len(entries))
		for i, e := range entries {
			ops[i] = entryOp{iceberg.EntryStatusEXISTING, e}
			if drop[i] {
				ops[i].status = iceberg.EntryStatusDELETED
			}
		}
		mf, loc, err := writeManifest(ctx, files, head, m.PartitionSpecID(), m.ManifestContent(), id, ops)
		if loc != "" {
			r.written = append(r.written, loc)
		}
		if err != nil {
			return r, fmt.Errorf("snapshot %d: rewrite manifest %s of the target: %w", src.SnapshotID, m.FilePath(), err)
		}
		r.listed = append(r.listed, mf)
		r.mine = append(r.mine, mf)
	}
	if len(unsafe) > 0 {
		return r, fmt.Errorf("%w: snapshot %d: the target's files %s of the replaced partitions were not in the operation's input",
			ErrNotReplayable, src.SnapshotID, named(unsafe))
	}
	if p.Replay.ByFiles {
		var gone []string
		for path := range removed {
			if live[path] || p.Replay.RowMerged[path] || p.Replay.RowMerged[removedDVOf[path]] {
				continue
			}
			if u := unions[removedDVOf[path]]; u != nil && len(u.head) > 0 {
				// A vector both sides replaced: the other side's
				// replacement is unioned with this one's.
				continue
			}
			gone = append(gone, path)
		}
		if len(gone) > 0 {
			return r, fmt.Errorf("%w: snapshot %d removed files that are no longer live on the target: %s",
				ErrNotReplayable, src.SnapshotID, named(gone))
		}
	}

	if p.Replay.ByFiles {
		var us []*dvUnion
		for _, u := range sortedUnions(unions) {
			if len(u.head) > 0 {
				u.replaced = replacedDVs[u.dataFile]
				us = append(us, u)
			}
		}
		merged, loc, err := writeUnions(ctx, files, head, id, us)
		if loc != "" {
			r.written = append(r.written, loc)
		}
		if err != nil {
			return r, fmt.Errorf("snapshot %d: %w", src.SnapshotID, err)
		}
		for i := range adds {
			for j, e := range adds[i].added {
				if m, ok := merged[fileKey(e.DataFile())]; ok {
					adds[i].added[j], adds[i].whole = m, false
				}
			}
		}
	}

	for _, a := range adds {
		for _, e := range a.added {
			c.add(e.DataFile())
		}
		switch {
		case a.whole:
			if onTarget[a.m.FilePath()] {
				return r, fmt.Errorf("%w: manifest %s of snapshot %d", ErrAlreadyPublished, a.m.FilePath(), src.SnapshotID)
			}
			loc, err := copyManifest(ctx, files, head.Location(), a.m)
			if err != nil {
				return r, fmt.Errorf("snapshot %d: %w", src.SnapshotID, err)
			}
			r.written = append(r.written, loc)
			m := relist(a.m, loc, id)
			r.listed, r.mine = append(r.listed, m), append(r.mine, m)
		case len(a.added) > 0:
			ops := make([]entryOp, len(a.added))
			for i, e := range a.added {
				ops[i] = entryOp{iceberg.EntryStatusADDED, e}
			}
			mf, loc, err := writeManifest(ctx, files, head, a.m.PartitionSpecID(), a.m.ManifestContent(), id, ops)
			if loc != "" {
				r.written = append(r.written, loc)
			}
			if err != nil {
				return r, fmt.Errorf("snapshot %d: added entries of %s: %w", src.SnapshotID, a.m.FilePath(), err)
			}
			r.listed, r.mine = append(r.listed, mf), append(r.mine, mf)
		}
	}

	r.source = src
	r.source.Summary = c.summary(src.Summary)
	return r, nil
}

// counts are the file changes a replay makes, for its summary.
type counts struct {
	addedData, removedData, addedDeletes, removedDeletes int64
	addedRecords, removedRecords                         int64
	addedSize, removedSize                               int64
	addedPos, removedPos, addedEq, removedEq             int64
	partitions                                           map[string]bool
}

func (c *counts) touch(df iceberg.DataFile) {
	if c.partitions == nil {
		c.partitions = map[string]bool{}
	}
	c.partitions[fmt.Sprint(df.SpecID(), df.Partition())] = true
}

func (c *counts) add(df iceberg.DataFile) {
	c.touch(df)
	c.addedSize += df.FileSizeBytes()
	switch df.ContentType() {
	case iceberg.EntryContentData:
		c.addedData++
		c.addedRecords += df.Count()
	case iceberg.EntryContentPosDeletes:
		c.addedDeletes++
		c.addedPos += df.Count()
	default:
		c.addedDeletes++
		c.addedEq += df.Count()
	}
}

func (c *counts) remove(df iceberg.DataFile) {
	c.touch(df)
	c.removedSize += df.FileSizeBytes()
	switch df.ContentType() {
	case iceberg.EntryContentData:
		c.removedData++
		c.removedRecords += df.Count()
	case iceberg.EntryContentPosDeletes:
		c.removedDeletes++
		c.removedPos += df.Count()
	default:
		c.removedDeletes++
		c.removedEq += df.Count()
	}
}

// summary is the source's summary with its file counts replaced by the
// replay's (the files it removed on the target are not the ones it
// removed on its lineage); pickedSummary then recomputes the totals.
func (c *counts) summary(src *table.Summary) *table.Summary {
	props := iceberg.Properties{}
	op := table.OpOverwrite
	if src != nil {
		op = src.Operation
		maps.Copy(props, src.Properties)
	}
	for _, t := range totals {
		delete(props, t.added)
		delete(props, t.removed)
	}
	delete(props, "changed-partition-count")
	set := func(k string, n int64) {
		if n != 0 {
			props[k] = strconv.FormatInt(n, 10)
		}
	}
	set("added-data-files", c.addedData)
	set("deleted-data-files", c.removedData)
	set("added-delete-files", c.addedDeletes)
	set("removed-delete-files", c.removedDeletes)
	set("added-records", c.addedRecords)
	set("deleted-records", c.removedRecords)
	set("added-files-size", c.addedSize)
	set("removed-files-size", c.removedSize)
	set("added-position-deletes", c.addedPos)
	set("removed-position-deletes", c.removedPos)
	set("added-equality-deletes", c.addedEq)
	set("removed-equality-deletes", c.removedEq)
	set("changed-partition-count", int64(len(c.partitions)))
	return &table.Summary{Operation: op, Properties: props}
}

// fileKey names a data or delete file within a table. A deletion vector
// is a blob of a Puffin file that may hold the vectors of other data
// files too, each its own manifest entry: it is named by the file and the
// blob's offset, so removing one vector never takes its neighbours.
func fileKey(df iceberg.DataFile) string {
	if off := df.ContentOffset(); off != nil {
		return df.FilePath() + "@" + strconv.FormatInt(*off, 10)
	}
	return df.FilePath()
}

func named(paths []string) string {
	slices.Sort(paths)
	paths = slices.Compact(paths)
	if len(paths) > maxNamed {
		return strings.Join(paths[:maxNamed], ", ") + fmt.Sprintf(" and %d more", len(paths)-maxNamed)
	}
	return strings.Join(paths, ", ")
}
