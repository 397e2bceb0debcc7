package mergeengine

import (
	"context"
	"fmt"
	"strings"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/versionstore"
)

// maxDuplicatesNamed bounds the duplicate keys a refusal names.
const maxDuplicatesNamed = 10

// duplicateKeys reads the identifier columns of the candidate table f's
// data files in parts (through iceberg-go's scanner, deletes applied) and
// returns the identifier keys found more than once, rendered as
// "id=7". A table without identifier fields has none.
func duplicateKeys(ctx context.Context, wh *icebergtable.Warehouse, key versionstore.ContentKey, f *icebergtable.MetadataFile, parts []classify.Partition) ([]string, error) {
	meta := f.Metadata
	sc := meta.CurrentSchema()
	ids := sc.IdentifierFieldIDs
	if len(ids) == 0 || len(parts) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		n, ok := sc.FindColumnName(id)
		if !ok {
			return nil, fmt.Errorf("identifier field %d is not in schema %d", id, sc.ID)
		}
		names = append(names, n)
	}
	fsys, done, err := wh.FileIO(ctx, f.Location)
	if err != nil {
		return nil, err
	}
	defer done()
	tbl := table.New(table.Identifier(key), meta, f.Location,
		func(context.Context) (iceio.IO, error) { return fsys, nil }, nil)
	scan := tbl.Scan(table.WithSelectedFields(names...))
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan files: %w", err)
	}
	touched := map[classify.Partition]bool{}
	for _, p := range parts {
		touched[p] = true
	}
	var mine []table.FileScanTask
	for _, t := range tasks {
		if touched[classify.PartitionOf(meta, t.File)] {
			mine = append(mine, t)
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	_, records, err := scan.ReadTasks(ctx, mine)
	if err != nil {
		return nil, fmt.Errorf("read data files: %w", err)
	}
	seen := map[string]int{}
	var order []string
	for rec, err := range records {
		if err != nil {
			return nil, fmt.Errorf("read data files: %w", err)
		}
		cols := make([]int, len(names))
		for i, n := range names {
			idx := rec.Schema().FieldIndices(n)
			if len(idx) == 0 {
				rec.Release()
				return nil, fmt.Errorf("identifier column %s missing from the scan", n)
			}
			cols[i] = idx[0]
		}
		for row := 0; row < int(rec.NumRows()); row++ {
			var b strings.Builder
			for i, c := range cols {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s=%s", names[i], rec.Column(c).ValueStr(row))
			}
			k := b.String()
			seen[k]++
			if seen[k] == 2 {
				order = append(order, k)
			}
		}
		rec.Release()
	}
	if len(order) > maxDuplicatesNamed {
		order = append(order[:maxDuplicatesNamed], fmt.Sprintf("and %d more", len(order)-maxDuplicatesNamed))
	}
	return order, nil
}
