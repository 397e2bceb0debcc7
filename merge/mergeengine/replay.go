package mergeengine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/merge/tablemerge"
	"github.com/floe-catalog/floe/versionstore"
)

// Rebasing a file conflict by replaying recorded operations
// (OPERATIONS.md is the reference for pipeline authors).
//
// A file conflict means the source's snapshots, re-listed file by file,
// would be wrong on the target's head: typically main compacted a
// partition the branch overwrote, so the files the overwrite removed are
// gone. What the overwrite meant ("these partitions now hold these rows")
// still applies, when its record says so and nothing the target did in
// those partitions is lost by it:
//
//   - appends are cherry-picked as in any merge;
//   - an overwrite-partitions or delete-partitions snapshot whose record
//     names its partitions and pins its inputs is replayed: on the
//     target's head, the files of its partitions that were in its input
//     (or that the target made from its input by a rewrite) are removed,
//     and the files it added are added;
//   - anything else refuses the merge, naming the files.
//
// The replay is refused when, since the merge base, the target changed
// rows in the partitions (any snapshot there but a rewrite: an append, an
// overwrite, a delete), whatever the table's isolation level: replacing
// the partitions would drop those rows silently. Under serializable
// isolation (Iceberg's default) that is the conflict Iceberg itself
// reports; under snapshot isolation Iceberg would let the overwrite win,
// and floe refuses instead. It is also refused when the operation read
// the table itself and the target changed the table's rows anywhere
// since: its result was computed from rows the target no longer holds.

// replayPlan turns a table's picks into picks and replays, or says why it
// cannot ("" when it can). It also returns the partitions the replays
// replace. A file conflict needs every snapshot that is not an append
// replayed from its record; in a disjoint or overlapping merge, a
// recorded overwrite or delete is replayed from its record too (its
// manifests rewrote its parent's, so it cannot be re-listed), and any
// other snapshot that is not an append is replayed by its own file
// changes (Replay.ByFiles): with no file conflict, the files it removed
// are live and unchanged on the target.
func replayPlan(key versionstore.ContentKey, c *classify.Table, srcMeta, tgtMeta table.Metadata, picks []tablemerge.Pick) ([]tablemerge.Pick, map[string]bool, string) {
	conflict := c.Class == classify.FileConflict
	byID := map[int64]classify.Snapshot{}
	for _, s := range c.Source.Snapshots {
		byID[s.SnapshotID] = s
	}
	replaced := map[string]bool{}
	out := slices.Clone(picks)
	replays := 0
	for i, p := range out {
		s := byID[p.Snapshot.SnapshotID]
		rec := s.FloeOperation
		if rec != nil && rec.Invalid != "" {
			return nil, nil, fmt.Sprintf("snapshot %d has an invalid operation record: %s", s.SnapshotID, rec.Invalid)
		}
		if s.Operation == string(table.OpAppend) {
			continue // cherry-picked; tablemerge refuses it if it did more than add
		}
		if !rec.Replayable() {
			if !conflict {
				// The classifier found no file conflict: every file the
				// snapshot removed is still live and unchanged on the
				// target, and the table's isolation level holds. Its own
				// file changes are the merge (a copy-on-write rewrite, a
				// MERGE INTO, a statement that replaced its delete files).
				out[i].Replay = &tablemerge.Replay{ByFiles: true}
				continue
			}
			return nil, nil, fmt.Sprintf("snapshot %d (%s) records no operation to replay (%s overwrite-partitions or delete-partitions, with %s and %s; see merge/mergeengine/OPERATIONS.md)",
				s.SnapshotID, s.Operation, classify.OpKind, classify.OpPartitions, classify.OpSourceSnapshotIDs)
		}
		parts := map[string]bool{}
		for _, pp := range rec.Partitions {
			parts[pp] = true
			replaced[pp] = true
		}
		if why := readsItself(key, rec, c, srcMeta, p.Snapshot); why != "" {
			return nil, nil, fmt.Sprintf("snapshot %d (%s of %s) %s", s.SnapshotID, rec.Kind, strings.Join(rec.Partitions, ", "), why)
		}
		rewritten, why := targetRewrites(c, parts)
		if why != "" {
			return nil, nil, fmt.Sprintf("snapshot %d (%s of %s) cannot be replayed: %s", s.SnapshotID, rec.Kind, strings.Join(rec.Partitions, ", "), why)
		}
		out[i].Replay = &tablemerge.Replay{
			InScope: func(df iceberg.DataFile) bool {
				return parts[classify.PartitionOf(tgtMeta, df).Path]
			},
			Rewritten: rewritten,
		}
		replays++
	}
	if replays == 0 && conflict {
		return nil, nil, "no snapshot of the source records an operation to replay"
	}
	return out, replaced, ""
}

// targetRewrites checks what the target did since the base in parts: only
// rewrites (replace snapshots, which keep rows), and only of data files
// the source removed too (a rewrite also holds the rows of every file it
// merged, and the replay removes it whole). It returns the files those
// rewrites added, which the replay removes with the input they replaced.
func targetRewrites(c *classify.Table, parts map[string]bool) (map[string]bool, string) {
	touches := func(ps []classify.Partition) bool {
		for _, p := range ps {
			if parts[p.Path] {
				return true
			}
		}
		return false
	}
	var changed []string
	for _, s := range c.Target.Snapshots {
		if s.Operation != string(table.OpReplace) && touches(s.Partitions) {
			changed = append(changed, fmt.Sprintf("%d (%s)", s.SnapshotID, s.Operation))
		}
	}
	if len(changed) > 0 {
		files := targetFiles(c, parts, false)
		return nil, fmt.Sprintf("the target changed rows of those partitions since the merge base, in snapshot(s) %s, "+
			"which replacing the partitions would lose (a conflict under serializable isolation; floe refuses it under any): files %s",
			strings.Join(changed, ", "), orNone(files))
	}
	// Delete files need no such check: after the replay they apply to
	// nothing (the partitions' data files are gone, the added ones newer).
	srcRemoved := map[string]bool{}
	for _, f := range c.Source.DataFiles.Removed {
		srcRemoved[f.Path] = true
	}
	var kept []string
	for _, f := range c.Target.DataFiles.Removed {
		if parts[f.Partition.Path] && !srcRemoved[f.Path] {
			kept = append(kept, f.Path)
		}
	}
	if len(kept) > 0 {
		slices.Sort(kept)
		return nil, fmt.Sprintf("the target rewrote files the source kept, whose rows the replay would remove with the rewrite: %s", strings.Join(kept, ", "))
	}
	rewritten := map[string]bool{}
	for _, p := range targetFiles(c, parts, true) {
		rewritten[p] = true
	}
	return rewritten, ""
}

// targetFiles are the files the target added (and, unless addedOnly,
// removed) in parts since the base.
func targetFiles(c *classify.Table, parts map[string]bool, addedOnly bool) []string {
	lists := [][]classify.File{c.Target.DataFiles.Added, c.Target.DeleteFiles.Added}
	if !addedOnly {
		lists = append(lists, c.Target.DataFiles.Removed, c.Target.DeleteFiles.Removed)
	}
	var out []string
	for _, f := range slices.Concat(lists...) {
		if parts[f.Partition.Path] {
			out = append(out, f.Path)
		}
	}
	slices.Sort(out)
	return out
}

// readsItself says why an operation that read its own table cannot be
// replayed: the table snapshot it read is not in its own lineage, or the
// target changed the table's rows since the base (in any partition: which
// partitions it read is not recorded). "" when it did not read the table,
// or may be replayed.
func readsItself(key versionstore.ContentKey, rec *classify.Operation, c *classify.Table, srcMeta table.Metadata, s table.Snapshot) string {
	name := key.String()
	for _, in := range rec.Sources {
		if in.Table != name {
			continue
		}
		if !inLineage(srcMeta, s, in.SnapshotID) {
			return fmt.Sprintf("read %s at snapshot %d, which is not in the operation's own history", name, in.SnapshotID)
		}
		var changed []string
		for _, t := range c.Target.Snapshots {
			if t.Operation != string(table.OpReplace) && len(t.Partitions) > 0 {
				changed = append(changed, fmt.Sprintf("%d (%s)", t.SnapshotID, t.Operation))
			}
		}
		if len(changed) > 0 {
			return fmt.Sprintf("read %s itself (at snapshot %d), and the target changed its rows since the merge base in snapshot(s) %s: "+
				"its result would differ on the target's rows", name, in.SnapshotID, strings.Join(changed, ", "))
		}
	}
	return ""
}

// inLineage reports whether id is s's parent or an ancestor of it in meta.
func inLineage(meta table.Metadata, s table.Snapshot, id int64) bool {
	limit := len(meta.Snapshots()) // a copy of every snapshot: taken once
	for next, n := s.ParentSnapshotID, 0; next != nil && n <= limit; n++ {
		if *next == id {
			return true
		}
		p := meta.SnapshotByID(*next)
		if p == nil {
			return false
		}
		next = p.ParentSnapshotID
	}
	return false
}

func orNone(files []string) string {
	if len(files) == 0 {
		return "(none left on the target)"
	}
	return strings.Join(files, ", ")
}

// outside returns the partitions of ps not in replaced.
func outside(ps []classify.Partition, replaced map[string]bool) []classify.Partition {
	var out []classify.Partition
	for _, p := range ps {
		if !replaced[p.Path] {
			out = append(out, p)
		}
	}
	return out
}

// replayedCount is how many of snaps a replay wrote: from a record, by
// the source's own file changes, and by merging rows (RowMerge).
func replayedCount(snaps []table.Snapshot) (recorded, byFiles, byRows int) {
	for _, s := range snaps {
		if s.Summary == nil {
			continue
		}
		switch s.Summary.Properties[tablemerge.SummaryReplayed] {
		case tablemerge.ReplayedRecord:
			recorded++
		case tablemerge.ReplayedFiles:
			byFiles++
		case tablemerge.ReplayedRows:
			byRows++
		}
	}
	return recorded, byFiles, byRows
}
