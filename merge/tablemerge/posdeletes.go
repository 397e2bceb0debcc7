package tablemerge

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table/dv"
)

// Position delete files of one data file written on both sides (v2).
//
// A format v2 table may hold many position delete files for one data
// file and a reader applies them all, so a merge lists both sides' files:
// the merged table deletes the union of their rows. That is right only
// when the sides deleted different rows. A row in both sides' new deletes
// was deleted on both, or deleted on one side and updated (a delete plus
// an insert) on the other, or updated on both; listing both sides' files
// would then keep the other side's new version of a row this side deleted,
// or two new versions of one row. Which change wins is not the merge's to
// decide: PositionOverlap finds those rows, reading only the delete files,
// and the merge is refused naming each by its data file and position (v2
// rows have no row id; v3 tables' deletion vectors are unioned and checked
// by the replay, dvunion.go, and named by _row_id).
//
// A side's new deletes are the positions in the files it added less the
// positions in the files either side removed: those are the deletes both
// sides inherited from the merge base, which a writer that rewrites a data
// file's deletes into one new file (Spark's file-scoped deletes) repeats.

// Iceberg's reserved field ids of a position delete file's columns.
const (
	posDeleteFilePathFieldID = 2147483546
	posDeletePosFieldID      = 2147483545
)

// PositionDeletes names the position delete files (not deletion vectors)
// a merge compares.
type PositionDeletes struct {
	// Source and Target are the files each side added since the merge
	// base.
	Source, Target []string
	// Inherited are the files either side removed: the base's.
	Inherited []string
}

// RowPositions are the rows of one data file both sides deleted.
type RowPositions struct {
	DataFile  string
	Positions []uint64 // ascending
}

// PositionOverlap returns, per data file, the rows both sides' new
// position deletes name, sorted by data file; none when the sides deleted
// different rows. Each file is read once, whole; Parquet only (the format
// every Iceberg writer uses for position deletes), any other format is
// ErrUnsupported.
func PositionOverlap(ctx context.Context, files Files, pd PositionDeletes) ([]RowPositions, error) {
	read := map[string]map[string]*dv.RoaringPositionBitmap{}
	union := func(paths []string) (map[string]*dv.RoaringPositionBitmap, error) {
		out := map[string]*dv.RoaringPositionBitmap{}
		for _, p := range paths {
			byFile, ok := read[p]
			if !ok {
				var err error
				if byFile, err = readPositionDeletes(ctx, files, p); err != nil {
					return nil, err
				}
				read[p] = byFile
			}
			for f, bm := range byFile {
				if out[f] == nil {
					out[f] = dv.NewRoaringPositionBitmap()
				}
				out[f].Or(bm)
			}
		}
		return out, nil
	}
	src, err := union(pd.Source)
	if err != nil {
		return nil, err
	}
	tgt, err := union(pd.Target)
	if err != nil {
		return nil, err
	}
	inherited, err := union(pd.Inherited)
	if err != nil {
		return nil, err
	}
	var out []RowPositions
	for _, f := range slices.Sorted(maps.Keys(src)) {
		theirs := tgt[f]
		if theirs == nil {
			continue
		}
		var both []uint64
		for pos := range src[f].Positions() {
			if theirs.Contains(pos) && (inherited[f] == nil || !inherited[f].Contains(pos)) {
				both = append(both, pos)
			}
		}
		if len(both) > 0 {
			out = append(out, RowPositions{DataFile: f, Positions: both})
		}
	}
	return out, nil
}

// PositionConflictError is the refusal's error for rows both sides
// deleted: their count, and the first rows by data file and position.
func PositionConflictError(rows []RowPositions) error {
	n, named := 0, 0
	var parts []string
	for _, r := range rows {
		n += len(r.Positions)
		var ps []string
		for _, p := range r.Positions {
			if named == maxRowsNamed {
				break
			}
			named++
			ps = append(ps, strconv.FormatUint(p, 10))
		}
		if len(ps) > 0 {
			parts = append(parts, fmt.Sprintf("data file %s at position %s", r.DataFile, strings.Join(ps, ", ")))
		}
	}
	more := ""
	if n > named {
		more = fmt.Sprintf(", and %d more", n-named)
	}
	return fmt.Errorf("%w: %d row(s) were deleted or updated on both sides (format v2 position deletes): %s%s",
		ErrRowConflict, n, strings.Join(parts, "; "), more)
}

// readPositionDeletes reads a Parquet position delete file: the positions
// it deletes, by data file.
func readPositionDeletes(ctx context.Context, files Files, path string) (map[string]*dv.RoaringPositionBitmap, error) {
	data, err := files.ReadFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("read position delete file %s: %w", path, err)
	}
	if !bytes.HasPrefix(data, []byte("PAR1")) {
		return nil, fmt.Errorf("%w: position delete file %s is not Parquet; a merge compares Parquet position deletes", ErrUnsupported, path)
	}
	tbl, err := pqarrow.ReadTable(ctx, bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("position delete file %s: %w", path, err)
	}
	defer tbl.Release()
	pathCol, posCol := -1, -1
	for i, f := range tbl.Schema().Fields() {
		id, err := fieldID(f)
		if err != nil || id < 0 {
			// Not every writer records field ids (pqarrow reads a missing
			// one as -1); the spec names the columns too.
			id = map[string]int{"file_path": posDeleteFilePathFieldID, "pos": posDeletePosFieldID}[f.Name]
		}
		switch id {
		case posDeleteFilePathFieldID:
			pathCol = i
		case posDeletePosFieldID:
			posCol = i
		}
	}
	if pathCol < 0 || posCol < 0 {
		return nil, fmt.Errorf("%w: position delete file %s has no file_path and pos columns", ErrUnsupported, path)
	}
	paths, positions := tbl.Column(pathCol).Data().Chunks(), tbl.Column(posCol).Data().Chunks()
	if len(paths) != len(positions) {
		// Both columns of one table chunk alike in what pqarrow reads
		// (one chunk per row group); anything else is not worth guessing.
		return nil, fmt.Errorf("%w: position delete file %s: its columns are split differently", ErrUnsupported, path)
	}
	out := map[string]*dv.RoaringPositionBitmap{}
	for c := range paths {
		ps, ok1 := paths[c].(*array.String)
		pos, ok2 := positions[c].(*array.Int64)
		if !ok1 || !ok2 || ps.Len() != pos.Len() {
			return nil, fmt.Errorf("%w: position delete file %s: file_path is %s and pos %s, not a string and a long",
				ErrUnsupported, path, paths[c].DataType(), positions[c].DataType())
		}
		for i := range ps.Len() {
			if ps.IsNull(i) || pos.IsNull(i) || pos.Value(i) < 0 {
				return nil, fmt.Errorf("position delete file %s: row %d has no data file or a negative position", path, i)
			}
			f := ps.Value(i)
			if out[f] == nil {
				out[f] = dv.NewRoaringPositionBitmap()
			}
			out[f].Set(uint64(pos.Value(i)))
		}
	}
	return out, nil
}
