package classify

import (
	"strings"

	"github.com/apache/iceberg-go/table"
)

// PropRowLevel is the table property that says how a merge treats data
// files both sides rewrote (a copy-on-write UPDATE, DELETE or MERGE INTO
// on both): RowLevelFiles (the default) refuses them as a file conflict,
// naming the files and their rows; RowLevelRows merges them by row id on
// a format v3 table (package tablemerge, RowMerge): rows changed on one
// side take that side's version, a row updated on one side and changed on
// the other is a conflict naming its _row_id. The target's property
// decides, as for the partition-overlap rule.
const PropRowLevel = "floe.merge.row-level"

// Values of PropRowLevel.
const (
	RowLevelFiles = "files"
	RowLevelRows  = "rows"
)

// mergesRows reports whether the table merges rewritten files by row id:
// its rule says rows, and it is format v3 (row lineage is what tells a
// row's versions apart; v2 rows have no identity across a rewrite).
func mergesRows(meta table.Metadata) bool {
	return meta != nil && meta.Version() >= 3 &&
		strings.EqualFold(meta.Properties().Get(PropRowLevel, RowLevelFiles), RowLevelRows)
}

// rowsPossible reports whether merging by row id could resolve data files
// both sides removed: the table is format v3 and there are such files.
func rowsPossible(src, tgt *sideChanges, meta table.Metadata) bool {
	if meta == nil || meta.Version() < 3 {
		return false
	}
	for p, f := range src.removed {
		if _, ok := tgt.removed[p]; ok && f.Content == "data" {
			return true
		}
	}
	return false
}
