package tablemerge

import (
	"context"

	"github.com/apache/iceberg-go/table"
)

// RowOrigins exposes rowOrigins to the package's tests: each placed id's
// file and the first row id the file had when it was handed the id.
func RowOrigins(ctx context.Context, files Files, meta table.Metadata, ids []int64) (map[int64]string, map[int64]int64, error) {
	origins, err := rowOrigins(ctx, files, meta, ids)
	if err != nil {
		return nil, nil, err
	}
	file, first := map[int64]string{}, map[int64]int64{}
	for id, o := range origins {
		file[id], first[id] = o.file, o.first
	}
	return file, first, nil
}
