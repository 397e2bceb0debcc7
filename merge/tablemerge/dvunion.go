package tablemerge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/puffin"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"
)

// Deletion vectors of one data file written on both sides.
//
// A v3 table holds at most one deletion vector per data file. When a
// replayed snapshot (Replay.ByFiles) adds a vector for a data file that
// already has one live on the target's head, the two sides deleted rows
// of the same file; the merged table must delete the rows of both. The
// replay reads the vectors (their blobs only, never the data file) and:
//
//   - refuses with ErrRowConflict when a row is in both sides' new deletes
//     (deleted on both sides, or deleted on one and updated, which is a
//     delete plus an insert, on the other): which change wins is not the
//     merge's to decide. A side's new deletes are its vector less the
//     vectors the snapshot replaced (which hold the deletes both sides
//     inherited from the merge base). The refusal names the rows by v3 row
//     lineage, _row_id (the data file's first row id plus the position).
//   - otherwise writes one vector holding the union, lists it instead of
//     the snapshot's own vector, and removes the head's. The unions of one
//     replay share one new Puffin file.

// ErrRowConflict: both sides changed the same rows of a data file.
var ErrRowConflict = errors.New("rows changed on both sides")

// dvUnion is what a replay needs to union one data file's vectors.
type dvUnion struct {
	dataFile string
	// added is the snapshot's own vector for the data file.
	added iceberg.ManifestEntry
	// replaced are the vectors of the data file the snapshot removed.
	replaced []iceberg.DataFile
	// head are the data file's vectors live on the head that the snapshot
	// did not remove: the other side's.
	head []iceberg.DataFile
	// firstRowID is the data file's first row id on the head (v3), nil
	// when unknown.
	firstRowID *int64
}

// maxRowsNamed bounds the row ids a refusal names.
const maxRowsNamed = 10

// isDeletionVector reports whether df is a v3 deletion vector: position
// deletes as a blob of a Puffin file, naming the data file they apply to.
func isDeletionVector(df iceberg.DataFile) bool {
	return df.ContentType() == iceberg.EntryContentPosDeletes && df.FileFormat() == iceberg.PuffinFile &&
		df.ReferencedDataFile() != nil && df.ContentOffset() != nil && df.ContentSizeInBytes() != nil
}

// readVector reads one deletion vector's positions.
func readVector(ctx context.Context, files Files, df iceberg.DataFile, cache map[string][]byte) (*dv.RoaringPositionBitmap, error) {
	data, ok := cache[df.FilePath()]
	if !ok {
		var err error
		if data, err = files.ReadFile(ctx, df.FilePath()); err != nil {
			return nil, fmt.Errorf("read deletion vector file %s: %w", df.FilePath(), err)
		}
		cache[df.FilePath()] = data
	}
	off, size := *df.ContentOffset(), *df.ContentSizeInBytes()
	if off < 0 || size < 0 || off+size > int64(len(data)) {
		return nil, fmt.Errorf("deletion vector of %s at %d+%d lies outside %s (%d bytes)", *df.ReferencedDataFile(), off, size, df.FilePath(), len(data))
	}
	bm, err := dv.DeserializeDV(data[off:off+size], df.Count())
	if err != nil {
		return nil, fmt.Errorf("deletion vector of %s in %s: %w", *df.ReferencedDataFile(), df.FilePath(), err)
	}
	return bm, nil
}

// merge returns the union of the data file's vectors, or ErrRowConflict.
func (u *dvUnion) merge(ctx context.Context, files Files, cache map[string][]byte) (*dv.RoaringPositionBitmap, error) {
	or := func(dfs []iceberg.DataFile) (*dv.RoaringPositionBitmap, error) {
		out := dv.NewRoaringPositionBitmap()
		for _, df := range dfs {
			bm, err := readVector(ctx, files, df, cache)
			if err != nil {
				return nil, err
			}
			out.Or(bm)
		}
		return out, nil
	}
	mine, err := readVector(ctx, files, u.added.DataFile(), cache)
	if err != nil {
		return nil, err
	}
	theirs, err := or(u.head)
	if err != nil {
		return nil, err
	}
	inherited, err := or(u.replaced)
	if err != nil {
		return nil, err
	}
	var both []uint64
	for pos := range mine.Positions() {
		if theirs.Contains(pos) && !inherited.Contains(pos) {
			both = append(both, pos)
		}
	}
	if len(both) > 0 {
		return nil, fmt.Errorf("%w: %d row(s) of data file %s were deleted or updated on both sides: %s",
			ErrRowConflict, len(both), u.dataFile, u.rowNames(both))
	}
	merged := dv.NewRoaringPositionBitmap()
	merged.Or(mine)
	merged.Or(theirs)
	merged.RunLengthEncode()
	return merged, nil
}

// writeUnions decides the unions of one replay and writes their vectors
// in one Puffin file (writeVectors). It returns the entries to list
// instead of each union's added vector, by that vector's fileKey, and the
// file written ("" when none).
func writeUnions(ctx context.Context, files Files, head vectorHead, snapshotID int64, us []*dvUnion,
) (map[string]iceberg.ManifestEntry, string, error) {
	cache := map[string][]byte{}
	blobs := make([]vectorBlob, 0, len(us))
	for _, u := range us {
		merged, err := u.merge(ctx, files, cache)
		if err != nil {
			return nil, "", err
		}
		blobs = append(blobs, vectorBlob{data: u.added.DataFile(), dataPath: u.dataFile, positions: merged})
	}
	entries, loc, err := writeVectors(ctx, files, head, snapshotID, blobs)
	if err != nil {
		return nil, loc, err
	}
	out := make(map[string]iceberg.ManifestEntry, len(us))
	for i, u := range us {
		out[fileKey(u.added.DataFile())] = entries[i]
	}
	return out, loc, nil
}

// vectorHead is what writing vectors needs of the table.
type vectorHead interface {
	Location() string
	PartitionSpecByID(int) *iceberg.PartitionSpec
}

// vectorBlob is one deletion vector to write: the positions deleted of a
// data file, with the spec and partition of data (a data file, or a
// vector of it).
type vectorBlob struct {
	data      iceberg.DataFile
	dataPath  string // the data file; data's own path when empty
	positions *dv.RoaringPositionBitmap
}

// writeVectors writes blobs as one Puffin file in the table's data
// directory (one file for a replay, as a writer writes one for a
// statement, rather than one per data file) and returns their ADDED
// entries in order, and the file written ("" when none).
func writeVectors(ctx context.Context, files Files, head vectorHead, snapshotID int64, blobs []vectorBlob) ([]iceberg.ManifestEntry, string, error) {
	if len(blobs) == 0 {
		return nil, "", nil
	}
	var buf bytes.Buffer
	w, err := puffin.NewWriter(&buf)
	if err != nil {
		return nil, "", err
	}
	metas := make([]puffin.BlobMetadata, len(blobs))
	for i := range blobs {
		b := &blobs[i]
		if b.dataPath == "" {
			b.dataPath = b.data.FilePath()
		}
		data, err := dv.SerializeDV(b.positions)
		if err != nil {
			return nil, "", fmt.Errorf("deletion vector of %s: %w", b.dataPath, err)
		}
		card := b.positions.Cardinality()
		if metas[i], err = w.AddBlob(puffin.BlobMetadataInput{
			Type: puffin.BlobTypeDeletionVector, SnapshotID: -1, SequenceNumber: -1, Fields: []int32{},
			Properties: map[string]string{"cardinality": strconv.FormatInt(card, 10), "referenced-data-file": b.dataPath},
		}, data); err != nil {
			return nil, "", fmt.Errorf("deletion vector of %s: %w", b.dataPath, err)
		}
	}
	if err := w.Finish(); err != nil {
		return nil, "", fmt.Errorf("deletion vectors: %w", err)
	}
	loc := fmt.Sprintf("%s/data/%s-dv.puffin", strings.TrimRight(head.Location(), "/"), uuid.NewString())
	out := make([]iceberg.ManifestEntry, len(blobs))
	for i, b := range blobs {
		spec := head.PartitionSpecByID(int(b.data.SpecID()))
		if spec == nil {
			return nil, "", fmt.Errorf("%w: deletion vector of %s uses partition spec %d, unknown to the target", ErrUnsupported, b.dataPath, b.data.SpecID())
		}
		db, err := iceberg.NewDataFileBuilder(*spec, iceberg.EntryContentPosDeletes, loc, iceberg.PuffinFile,
			b.data.Partition(), nil, nil, b.positions.Cardinality(), int64(buf.Len()))
		if err != nil {
			return nil, "", fmt.Errorf("deletion vector of %s: %w", b.dataPath, err)
		}
		df := db.ReferencedDataFile(b.dataPath).ContentOffset(metas[i].Offset).ContentSizeInBytes(metas[i].Length).Build()
		id := snapshotID
		out[i] = iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &id, nil, nil, df)
	}
	if err := files.WriteFile(ctx, loc, buf.Bytes()); err != nil {
		return nil, loc, fmt.Errorf("write deletion vectors: %w", err)
	}
	return out, loc, nil
}

// rowNames names rows by _row_id when the data file's first row id is
// known, else by position.
func (u *dvUnion) rowNames(pos []uint64) string {
	names := make([]string, 0, min(len(pos), maxRowsNamed))
	for i, p := range pos {
		if i == maxRowsNamed {
			names = append(names, fmt.Sprintf("and %d more", len(pos)-maxRowsNamed))
			break
		}
		if u.firstRowID != nil {
			names = append(names, fmt.Sprintf("_row_id=%d", *u.firstRowID+int64(p)))
		} else {
			names = append(names, fmt.Sprintf("pos=%d", p))
		}
	}
	return strings.Join(names, ", ")
}

// sortedUnions lists the unions by data file, for a stable order of work.
func sortedUnions(m map[string]*dvUnion) []*dvUnion {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]*dvUnion, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// unionFor is the union of the data file a deletion vector applies to,
// nil when df is no vector or the snapshot wrote none for that file.
func unionFor(unions map[string]*dvUnion, df iceberg.DataFile) *dvUnion {
	if !isDeletionVector(df) {
		return nil
	}
	return unions[*df.ReferencedDataFile()]
}
