package mergeengine

import (
	"context"
	"errors"

	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/merge/tablemerge"
)

// positionConflict returns why a table cannot merge when both sides'
// new position delete files (format v2; deletion vectors are the
// replay's, tablemerge/dvunion.go) delete the same row of one data file,
// or "" when they do not (tablemerge.PositionOverlap says why that is a
// conflict). It reads delete files only, and only those that can name one
// data file on both sides: the same referenced data file, or the same
// partition where a writer did not record one (partition-scoped deletes).
func positionConflict(ctx context.Context, files tablemerge.Files, c *classify.Table) (string, error) {
	src := positionDeleteFiles(c.Source.DeleteFiles.Added)
	tgt := positionDeleteFiles(c.Target.DeleteFiles.Added)
	if len(src) == 0 || len(tgt) == 0 {
		return "", nil
	}
	mayMeet := func(a, b classify.File) bool {
		if a.ReferencedDataFile != "" && b.ReferencedDataFile != "" {
			return a.ReferencedDataFile == b.ReferencedDataFile
		}
		return a.Partition == b.Partition
	}
	var pd tablemerge.PositionDeletes
	pickedTgt := map[string]bool{}
	partitions := map[classify.Partition]bool{}
	for _, s := range src {
		met := false
		for _, t := range tgt {
			if mayMeet(s, t) {
				met = true
				if !pickedTgt[t.Path] {
					pickedTgt[t.Path] = true
					pd.Target = append(pd.Target, t.Path)
				}
			}
		}
		if met {
			pd.Source = append(pd.Source, s.Path)
			partitions[s.Partition] = true
		}
	}
	if len(pd.Source) == 0 {
		return "", nil
	}
	// The base's deletes either side rewrote into its new files.
	for _, side := range []classify.Side{c.Source, c.Target} {
		for _, f := range positionDeleteFiles(side.DeleteFiles.Removed) {
			if partitions[f.Partition] {
				pd.Inherited = append(pd.Inherited, f.Path)
			}
		}
	}
	rows, err := tablemerge.PositionOverlap(ctx, files, pd)
	switch {
	case errors.Is(err, tablemerge.ErrUnsupported):
		return err.Error(), nil
	case err != nil:
		return "", err
	}
	if len(rows) == 0 {
		return "", nil
	}
	return tablemerge.PositionConflictError(rows).Error(), nil
}

// positionDeleteFiles are the position delete files among fs that are not
// deletion vectors.
func positionDeleteFiles(fs []classify.File) []classify.File {
	var out []classify.File
	for _, f := range fs {
		if f.Content == "position-deletes" && f.ContentOffset == nil {
			out = append(out, f)
		}
	}
	return out
}
