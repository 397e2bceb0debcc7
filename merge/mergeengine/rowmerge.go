package mergeengine

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/merge/tablemerge"
	"github.com/floe-catalog/floe/versionstore"
)

// PropRowLevelMaxBytes bounds the bytes of data files a merge by row id
// (classify.PropRowLevel=rows) may read for one table: the lineage
// columns of the files both sides rewrote and of the files that hold
// their rows now. A merge over the bound is refused, naming it.
const PropRowLevelMaxBytes = "floe.merge.row-level.max-bytes"

// DefaultRowLevelMaxBytes is PropRowLevelMaxBytes when the table does
// not set it: 1 GiB, read one file at a time.
const DefaultRowLevelMaxBytes = 1 << 30

// rowMerge prepares the merge by row id of the data files both sides
// rewrote (c.RowMergedFiles), when there are any: the picks that remove
// them are told not to look for them on the target, and the returned
// RowMerge tells the cherry-pick to merge their rows after the picks. It
// says why not ("") when the table's settings are wrong.
func (e *Engine) rowMerge(ctx context.Context, wh *icebergtable.Warehouse, base *versionstore.Content, c *classify.Table, srcMeta, tgtMeta table.Metadata, picks []tablemerge.Pick) (*tablemerge.RowMerge, string, error) {
	if len(c.RowMergedFiles) == 0 {
		return nil, "", nil
	}
	limit := int64(DefaultRowLevelMaxBytes)
	if v, ok := tgtMeta.Properties()[PropRowLevelMaxBytes]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Sprintf("table property %s is %q, not a positive number of bytes", PropRowLevelMaxBytes, v), nil
		}
		limit = n
	}
	if base == nil {
		return nil, "the table did not exist at the merge base, yet both sides rewrote its files", nil
	}
	baseFile, err := wh.ReadTable(ctx, base)
	if err != nil {
		return nil, "", fmt.Errorf("merge base: %w", err)
	}
	files := make(map[string]bool, len(c.RowMergedFiles))
	for _, f := range c.RowMergedFiles {
		files[f] = true
	}
	for i := range picks {
		if r := picks[i].Replay; r != nil && r.ByFiles {
			r.RowMerged = files
		}
	}
	return &tablemerge.RowMerge{
		Files: files, Base: baseFile.Metadata, Source: srcMeta, Target: tgtMeta, MaxBytes: limit,
	}, "", nil
}
