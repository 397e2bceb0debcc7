package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/internal/manifestread"
	"github.com/floe-catalog/floe/merge/tablemerge"
)

// PropRebaseRowLevel is the table property that turns the server-side
// rebase of stale row-level commits (overwrite, delete, replace) off for a
// table when "false"; PropRebaseAppends=false turns off both kinds.
const PropRebaseRowLevel = "floe.commit.rebase-row-level"

// Zero-retry row-level commits. A copy-on-write UPDATE, DELETE or MERGE
// (Spark's default) removes data files and adds their rewrites; a
// merge-on-read one adds position deletes, deletion vectors or equality
// deletes, and may replace the delete files it read; a compaction
// (replace) swaps files for others with the same rows. Made on a main
// that another writer has moved since, such a commit is re-parented onto
// the head by the server (tablemerge.Changes, then tablemerge.CherryPick
// replaying exactly the removed files) when it does not really conflict:
//
//   - every file it removes is still live on the head: nothing since its
//     base removed it (a file is never rewritten in place, so live by
//     path is unchanged);
//   - no delete file the head added since applies to a data file it
//     removed or deletes rows of (a position delete or deletion vector
//     naming that file, or of its partition when it names none; an
//     equality delete in a partition it touched): the rewrite would
//     resurrect the head's deleted rows, or a row would be changed on
//     both sides;
//   - no data file its position deletes or deletion vectors apply to was
//     removed since (they would apply to nothing), and its equality
//     deletes are not in a partition the head added data to (with the new
//     sequence number they would delete the head's new rows too);
//   - under serializable isolation (write.delete.isolation-level for a
//     delete, write.update/merge.isolation-level for an overwrite, which
//     may come from either; Iceberg's default), no commit since its base
//     added or removed any file in a partition it added or removed files
//     in. Under snapshot isolation the file rules above are all. A
//     replace changes no row, and only the file rules apply.
//
// Partitions are compared within one partition spec; files of an
// unpartitioned spec, or of two different specs, always overlap. The
// partitions a commit wrote in stand for what it read: the REST commit
// does not carry the scan filter Java's own validation uses, so a MERGE
// whose condition read other partitions than the ones it changed is
// checked only for those it changed.
//
// The rebased snapshot keeps the client's id, gets the next sequence
// number (so its delete files apply after every data file of the head)
// and, on v3, row ids from the head's next-row-id. The head's manifests
// holding a removed file are rewritten with that entry DELETED; the
// commit's added files are listed after them. A real conflict is answered
// as before: 409 CommitFailedException with the failed requirement's Java
// wording, counted as outcome "conflict".

// errRebaseConflict is a stale row-level commit that really conflicts
// with what main gained since its base: the 409 is its answer.
type errRebaseConflict struct{ reason string }

func (e *errRebaseConflict) Error() string { return "conflict: " + e.reason }

func rebaseConflict(format string, args ...any) error {
	return &errRebaseConflict{reason: fmt.Sprintf(format, args...)}
}

// rowLevelOperation reports whether snap is of an operation the row-level
// rebase handles.
func rowLevelOperation(snap *table.Snapshot) bool {
	if snap.Summary == nil {
		return false
	}
	switch snap.Summary.Operation {
	case table.OpOverwrite, table.OpDelete, table.OpReplace:
		return true
	}
	return false
}

// rowLevelSerializable reports whether op runs under serializable
// isolation by the table's properties, and names the property that says
// so (as classify does for merges).
func rowLevelSerializable(props iceberg.Properties, op table.Operation) (string, bool) {
	var keys []string
	switch op {
	case table.OpDelete:
		keys = []string{"write.delete.isolation-level"}
	case table.OpOverwrite:
		keys = []string{"write.update.isolation-level", "write.merge.isolation-level"}
	}
	for _, k := range keys {
		if !strings.EqualFold(props.Get(k, "serializable"), "snapshot") {
			return k + "=serializable", true
		}
	}
	return "", false
}

// rebaseRowLevel re-parents the row-level snapshot snap, made on parent,
// onto main of base. An errRebaseConflict is a real conflict; any other
// error an errNotRebaseable (the caller answers 409 either way).
func (s *Service) rebaseRowLevel(ctx context.Context, wh *icebergtable.Warehouse, base table.Metadata, baseLoc string, snap, parent *table.Snapshot, props iceberg.Properties) (*table.MetadataBuilder, []string, error) {
	if base.Properties()[PropRebaseRowLevel] == "false" {
		return nil, nil, notRebaseable("the table sets %s=false", PropRebaseRowLevel)
	}
	files := newCommittedReads(wh, base)
	mine, err := tablemerge.Changes(ctx, files, parent, snap)
	if err != nil {
		return nil, nil, notRebaseable("%v", err)
	}
	removed := map[string]bool{}
	for _, f := range mine.Removed {
		removed[f.FilePath()] = true
	}
	if len(removed) != len(mine.Deleted) {
		// The replay removes what the manifests say was deleted; a writer
		// that dropped a file without saying so cannot be replayed.
		return nil, nil, notRebaseable("snapshot %d removes %d files and records %d as deleted", snap.SnapshotID, len(removed), len(mine.Deleted))
	}
	for p := range mine.Deleted {
		if !removed[p] {
			return nil, nil, notRebaseable("snapshot %d records %s as deleted, not live in its parent", snap.SnapshotID, p)
		}
	}
	theirs, err := tablemerge.Changes(ctx, files, parent, base.SnapshotByName(table.MainBranch))
	if err != nil {
		return nil, nil, notRebaseable("%v", err)
	}
	if err := rowLevelConflict(base, snap, mine, theirs); err != nil {
		return nil, nil, err
	}

	scope := map[string]bool{}
	for _, f := range mine.Added {
		scope[f.FilePath()] = true
	}
	for p := range removed {
		scope[p] = true
	}
	res, err := tablemerge.CherryPick(ctx, files, tablemerge.Request{
		Head:         base,
		HeadLocation: baseLoc,
		Picks: []tablemerge.Pick{{Snapshot: *snap, Parent: parent, Replay: &tablemerge.Replay{
			// Exactly the files the commit added and removed: the head's
			// other files of their partitions stay, which the checks above
			// found right.
			InScope: func(f iceberg.DataFile) bool { return scope[f.FilePath()] },
		}}},
		SourceRef: table.MainBranch,
		Now:       s.now,
	})
	if err != nil {
		if res != nil {
			s.removeFiles(ctx, res.Written...)
		}
		return nil, nil, notRebaseable("%v", err)
	}
	// The replay must have done exactly the commit's change on the head.
	got := res.Snapshots[0].Summary.Properties
	if n := got.GetInt64("deleted-data-files", 0) + got.GetInt64("removed-delete-files", 0); n != int64(len(mine.Removed)) {
		s.removeFiles(ctx, res.Written...)
		return nil, nil, notRebaseable("snapshot %d: the rebase removed %d files, the commit %d", snap.SnapshotID, n, len(mine.Removed))
	}
	if n := got.GetInt64("added-data-files", 0) + got.GetInt64("added-delete-files", 0); n != int64(len(mine.Added)) {
		s.removeFiles(ctx, res.Written...)
		return nil, nil, notRebaseable("snapshot %d: the rebase added %d files, the commit %d", snap.SnapshotID, n, len(mine.Added))
	}
	// Not the replay of a recorded operation: like a rebased append's,
	// the summary names the snapshot itself as its source on main. (The
	// builder holds the same summary.)
	delete(got, tablemerge.SummaryReplayed)
	if len(props) > 0 {
		if err := res.Builder.SetProperties(props); err != nil {
			s.removeFiles(ctx, res.Written...)
			return nil, nil, notRebaseable("set properties: %v", err)
		}
	}
	return res.Builder, res.Written, nil
}

// rowLevelConflict applies the rules of the row-level rebase (see the
// comment at PropRebaseRowLevel) to what the commit changed (mine) and
// what main changed since the commit's base (theirs).
func rowLevelConflict(base table.Metadata, snap *table.Snapshot, mine, theirs *tablemerge.FileChanges) error {
	parts := partitioner{base}
	theirRemoved := map[string]iceberg.DataFile{}
	for _, f := range theirs.Removed {
		theirRemoved[f.FilePath()] = f
	}
	for _, f := range mine.Removed {
		if _, ok := theirRemoved[f.FilePath()]; ok {
			return rebaseConflict("%s, which snapshot %d removes, is no longer live on main", f.FilePath(), snap.SnapshotID)
		}
	}

	// The data files the commit works on: those it removes and those its
	// position deletes and deletion vectors apply to.
	touched := map[string]iceberg.DataFile{}
	var touchedParts []partitionKey // their partitions
	for _, f := range mine.Removed {
		if f.ContentType() == iceberg.EntryContentData {
			touched[f.FilePath()] = f
			touchedParts = append(touchedParts, parts.of(f))
		}
	}
	for _, f := range mine.Added {
		if f.ContentType() != iceberg.EntryContentPosDeletes {
			continue
		}
		target, ok := referencedDataFile(f)
		if !ok {
			// Applies to any file of its partition: none may have gone.
			for _, g := range theirs.Removed {
				if g.ContentType() == iceberg.EntryContentData && parts.overlap(parts.of(f), parts.of(g)) {
					return rebaseConflict("position deletes %s of snapshot %d name no data file, and main removed %s of their partition since",
						f.FilePath(), snap.SnapshotID, g.FilePath())
				}
			}
			touchedParts = append(touchedParts, parts.of(f))
			continue
		}
		if g, ok := theirRemoved[target]; ok && g.ContentType() == iceberg.EntryContentData {
			return rebaseConflict("data file %s, which deletes %s of snapshot %d apply to, is no longer live on main",
				target, f.FilePath(), snap.SnapshotID)
		}
		touched[target] = nil
		touchedParts = append(touchedParts, parts.of(f)) // the data file's partition
	}
	var mineParts []partitionKey // every partition the commit wrote in
	for _, fs := range [][]iceberg.DataFile{mine.Added, mine.Removed} {
		for _, f := range fs {
			mineParts = append(mineParts, parts.of(f))
		}
	}
	for _, d := range theirs.Added {
		switch d.ContentType() {
		case iceberg.EntryContentPosDeletes:
			if target, ok := referencedDataFile(d); ok {
				if _, hit := touched[target]; hit {
					return rebaseConflict("main added deletes %s for data file %s since, which snapshot %d also changes",
						d.FilePath(), target, snap.SnapshotID)
				}
			} else if parts.overlapsAny(parts.of(d), touchedParts) {
				return rebaseConflict("main added position deletes %s in a partition snapshot %d changes rows of", d.FilePath(), snap.SnapshotID)
			}
		case iceberg.EntryContentEqDeletes:
			if parts.overlapsAny(parts.of(d), mineParts) {
				return rebaseConflict("main added equality deletes %s in a partition snapshot %d changes rows of", d.FilePath(), snap.SnapshotID)
			}
		}
	}
	for _, f := range mine.Added {
		if f.ContentType() != iceberg.EntryContentEqDeletes {
			continue
		}
		for _, g := range theirs.Added {
			if g.ContentType() == iceberg.EntryContentData && parts.overlap(parts.of(f), parts.of(g)) {
				return rebaseConflict("equality deletes %s of snapshot %d would apply to %s, which main added since",
					f.FilePath(), snap.SnapshotID, g.FilePath())
			}
		}
	}

	if prop, ok := rowLevelSerializable(base.Properties(), snap.Summary.Operation); ok {
		for _, fs := range [][]iceberg.DataFile{theirs.Added, theirs.Removed} {
			for _, g := range fs {
				if parts.overlapsAny(parts.of(g), mineParts) {
					return rebaseConflict("%s: main changed %s since, in a partition snapshot %d changes", prop, g.FilePath(), snap.SnapshotID)
				}
			}
		}
	}
	return nil
}

// filePathField is the field id of file_path in a position delete file
// (the spec's reserved id): its bounds name the data file when there is
// one.
const filePathField = 2147483546

// referencedDataFile is the data file a position delete file or deletion
// vector applies to, when it applies to one only.
func referencedDataFile(f iceberg.DataFile) (string, bool) {
	if r := f.ReferencedDataFile(); r != nil {
		return *r, true
	}
	lo, hi := f.LowerBoundValues()[filePathField], f.UpperBoundValues()[filePathField]
	if lo != nil && string(lo) == string(hi) {
		return string(lo), true
	}
	return "", false
}

// partitionKey is a file's partition: spec and values.
type partitionKey struct {
	spec          int32
	values        string
	unpartitioned bool
}

type partitioner struct{ meta table.Metadata }

func (p partitioner) of(f iceberg.DataFile) partitionKey {
	k := partitionKey{spec: f.SpecID()}
	if s := p.meta.PartitionSpecByID(int(f.SpecID())); s == nil || s.IsUnpartitioned() {
		k.unpartitioned = true
		return k
	}
	part := f.Partition()
	ids := make([]int, 0, len(part))
	for id := range part {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(strconv.Itoa(id))
		b.WriteByte('=')
		fmt.Fprintf(&b, "%#v", part[id])
		b.WriteByte(';')
	}
	k.values = b.String()
	return k
}

// overlap reports whether two partitions may hold the same rows: equal
// values of one spec, or either unpartitioned, or of different specs
// (not compared: assumed to overlap).
func (partitioner) overlap(a, b partitionKey) bool {
	return a.unpartitioned || b.unpartitioned || a.spec != b.spec || a.values == b.values
}

func (p partitioner) overlapsAny(a partitionKey, bs []partitionKey) bool {
	for _, b := range bs {
		if p.overlap(a, b) {
			return true
		}
	}
	return false
}

// addedOperation is the summary operation of the snapshot updates add,
// or def when they add none (or one of an operation the metrics do not
// know).
func addedOperation(updates table.Updates, def string) string {
	for _, u := range updates {
		if u.Action() != table.UpdateAddSnapshot {
			continue
		}
		raw, err := json.Marshal(u)
		if err != nil {
			return def
		}
		var v struct {
			Snapshot struct {
				Summary struct {
					Operation string `json:"operation"`
				} `json:"summary"`
			} `json:"snapshot"`
		}
		if json.Unmarshal(raw, &v) == nil && slices.Contains(icebergtable.Operations(), v.Snapshot.Summary.Operation) {
			return v.Snapshot.Summary.Operation
		}
		return def
	}
	return def
}

// committedReads is checkedFiles that reads the manifest lists of the
// table's committed snapshots, and the manifests they list, through the
// warehouse's cache of decoded metadata (which keys them by path): the
// replay reads every manifest of the head, and the next stale commit on
// the same table reads them again. A client's own files, not committed
// and named by the client, are decoded without being kept. Used by one
// goroutine.
type committedReads struct {
	checkedFiles
	lists     map[string]bool // manifest lists of committed snapshots
	manifests map[string]bool // manifests those lists name, as read
}

func newCommittedReads(wh *icebergtable.Warehouse, m table.Metadata) *committedReads {
	c := &committedReads{checkedFiles: checkedFiles{wh}, lists: map[string]bool{}, manifests: map[string]bool{}}
	for _, s := range m.Snapshots() {
		c.lists[s.ManifestList] = true
	}
	return c
}

func (c *committedReads) ReadSnapshotManifests(ctx context.Context, snap *table.Snapshot) ([]iceberg.ManifestFile, error) {
	if _, err := c.wh.Contains(snap.ManifestList); err != nil {
		return nil, fmt.Errorf("%w: %s", errOutside, snap.ManifestList)
	}
	if !c.lists[snap.ManifestList] {
		data, err := c.wh.ReadFile(ctx, snap.ManifestList)
		if err != nil {
			return nil, fmt.Errorf("read manifest list of snapshot %d: %w", snap.SnapshotID, err)
		}
		return manifestread.ReadList(data)
	}
	mfs, err := c.wh.ReadSnapshotManifests(ctx, snap)
	if err != nil {
		return nil, err
	}
	for _, m := range mfs {
		c.manifests[m.FilePath()] = true
	}
	return mfs, nil
}

func (c *committedReads) ReadManifestEntries(ctx context.Context, mf iceberg.ManifestFile) ([]iceberg.ManifestEntry, error) {
	if _, err := c.wh.Contains(mf.FilePath()); err != nil {
		return nil, fmt.Errorf("%w: %s", errOutside, mf.FilePath())
	}
	if c.manifests[mf.FilePath()] {
		return c.wh.ReadManifestEntries(ctx, mf)
	}
	data, err := c.wh.ReadFile(ctx, mf.FilePath())
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
	}
	return manifestread.ReadManifest(mf, data, false)
}
