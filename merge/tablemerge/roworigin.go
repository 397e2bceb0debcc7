package tablemerge

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Row ids a rewrite wrote into a file, followed back to the file that
// was handed them.
//
// A row's id is handed out once, on one branch, as its data file's first
// row id plus its position; a rewrite then writes it into the new file.
// A merge lists a branch's data file on the other branch with a first row
// id of that branch's own, so the row is known by two ids, one per
// branch, and after a rewrite on each side both are written in files. A
// row merge looks the base's rows up on each side by id: for an id the
// base's branch wrote, the side's copy may hold the side's id for the
// same row. Left unfollowed, a row the target rewrote under its own id
// looks deleted there (its copy under the base's id was hidden by an
// earlier row merge that kept the target's), and the source's later
// delete or update of it would merge as if the target had not touched it.
//
// The file that was handed id X is found from the base's metadata alone,
// without a record: the v3 snapshot whose first-row-id range holds X, the
// manifest of its list whose range holds X, and the entry of that
// manifest whose range holds X. On a side that has (or had) that file
// under another first row id F, the row's id there is F plus the same
// position; the side's history is searched for the file only back to the
// snapshots it shares with the base, since a file listed before has the
// same first row id on both. A snapshot expired from the base's metadata
// leaves its ids unfollowed: they are looked up as they are, as before.

// rowOrigin is where a row id was handed out: a data file and the first
// row id it had then, so the row's position in it is id - first.
type rowOrigin struct {
	file  string
	first int64
}

// rowOrigins finds, in the history of meta (a branch's table), the data
// file that was handed each of ids; ids it cannot place are left out.
func rowOrigins(ctx context.Context, files Files, meta table.Metadata, ids []int64) (map[int64]rowOrigin, error) {
	out := map[int64]rowOrigin{}
	if len(ids) == 0 || meta.Version() < 3 {
		return out, nil
	}
	// Each id to the snapshot whose range holds it.
	bySnapshot := map[int64][]int64{}
	snapshots := map[int64]table.Snapshot{}
	for _, s := range meta.Snapshots() {
		if s.FirstRowID == nil || s.AddedRows == nil || *s.AddedRows <= 0 {
			continue
		}
		lo, hi := *s.FirstRowID, *s.FirstRowID+*s.AddedRows
		for _, id := range ids {
			if id >= lo && id < hi {
				bySnapshot[s.SnapshotID] = append(bySnapshot[s.SnapshotID], id)
				snapshots[s.SnapshotID] = s
			}
		}
	}
	for _, sid := range slices.Sorted(maps.Keys(bySnapshot)) {
		s := snapshots[sid]
		mfs, err := readManifestList(ctx, files, s)
		if err != nil {
			return nil, fmt.Errorf("row ids of snapshot %d: %w", sid, err)
		}
		want := bySnapshot[sid]
		for _, m := range mfs {
			first := m.FirstRowID()
			if m.ManifestContent() != iceberg.ManifestContentData || first == nil {
				continue
			}
			lo, hi := *first, *first+m.AddedRows()+m.ExistingRows()
			if !slices.ContainsFunc(want, func(id int64) bool { return id >= lo && id < hi }) {
				continue
			}
			entries, err := readEntries(ctx, files, m, true)
			if err != nil {
				return nil, fmt.Errorf("row ids of snapshot %d: %w", sid, err)
			}
			for _, e := range entries {
				df := e.DataFile()
				f := df.FirstRowID()
				if df.ContentType() != iceberg.EntryContentData || f == nil {
					continue
				}
				for _, id := range want {
					if id >= *f && id < *f+df.Count() {
						out[id] = rowOrigin{file: df.FilePath(), first: *f}
					}
				}
			}
		}
	}
	return out, nil
}
