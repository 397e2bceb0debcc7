package tablemerge

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// FileChanges is what one lineage of a table changed between two of its
// snapshots, file by file: the files (data files, delete files, deletion
// vectors) live in the later snapshot and not in the earlier, and the
// reverse. Files are compared by path: Iceberg never rewrites a file in
// place, so a path live in both is the same file, unchanged.
type FileChanges struct {
	// Added are the files live in To and not in From, sorted by path.
	Added []iceberg.DataFile
	// Removed are the files live in From and not in To, sorted by path.
	Removed []iceberg.DataFile
	// Deleted are the paths that the manifests To lists and From does not
	// record as DELETED by To itself: the files To's writer says it
	// removed. For a snapshot made on From, a writer that recorded every
	// removal (as Iceberg's writers do) has Deleted equal to Removed.
	Deleted map[string]bool
}

// Changes returns what the lineage changed from snapshot from (nil: the
// table had none) to snapshot to. It reads only the manifests one of the
// two lists and the other does not: a manifest listed by both holds the
// same live files for both, whatever moved around it. It reads no data
// file.
func Changes(ctx context.Context, files Files, from, to *table.Snapshot) (*FileChanges, error) {
	if to == nil {
		return nil, fmt.Errorf("%w: no snapshot to compare with", ErrUnsupported)
	}
	toList, err := readManifestList(ctx, files, *to)
	if err != nil {
		return nil, err
	}
	var fromList []iceberg.ManifestFile
	if from != nil {
		if fromList, err = readManifestList(ctx, files, *from); err != nil {
			return nil, err
		}
	}
	inTo := map[string]bool{}
	for _, m := range toList {
		inTo[m.FilePath()] = true
	}
	inFrom := map[string]bool{}
	before := map[string]iceberg.DataFile{}
	for _, m := range fromList {
		inFrom[m.FilePath()] = true
		if inTo[m.FilePath()] {
			continue
		}
		entries, err := readEntries(ctx, files, m, true)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", from.SnapshotID, err)
		}
		for _, e := range entries {
			before[e.DataFile().FilePath()] = e.DataFile()
		}
	}
	ch := &FileChanges{Deleted: map[string]bool{}}
	after := map[string]bool{}
	for _, m := range toList {
		if inFrom[m.FilePath()] {
			continue
		}
		entries, err := readEntries(ctx, files, m, false)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", to.SnapshotID, err)
		}
		for _, e := range entries {
			df := e.DataFile()
			if e.Status() == iceberg.EntryStatusDELETED {
				if e.SnapshotID() == to.SnapshotID {
					ch.Deleted[df.FilePath()] = true
				}
				continue
			}
			if after[df.FilePath()] {
				continue // listed twice: counted once
			}
			after[df.FilePath()] = true
			if _, ok := before[df.FilePath()]; !ok {
				ch.Added = append(ch.Added, df)
			}
		}
	}
	for p, df := range before {
		if !after[p] {
			ch.Removed = append(ch.Removed, df)
		}
	}
	byPath := func(a, b iceberg.DataFile) int { return strings.Compare(a.FilePath(), b.FilePath()) }
	slices.SortFunc(ch.Added, byPath)
	slices.SortFunc(ch.Removed, byPath)
	return ch, nil
}
