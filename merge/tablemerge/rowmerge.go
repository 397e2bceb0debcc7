package tablemerge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
)

// Merging by row id: data files both sides rewrote.
//
// A copy-on-write UPDATE, DELETE or MERGE INTO removes a data file and
// writes its surviving rows into a new one. When both sides did that to
// the same file, or one side rewrote a file the other deleted rows of, the
// file merge cannot replay the change and by files it is a conflict. On a
// v3 table each row carries its lineage: _row_id, kept by every rewrite,
// and _last_updated_sequence_number, kept for a row copied unchanged and
// renewed for a row updated. So each side's version of each of the file's
// rows is known: unchanged, updated, or deleted (absent). With the table
// rule floe.merge.row-level=rows the merge takes, for every row:
//
//   - changed only on the target: the target's copy;
//   - changed on neither side: the source's copy where the merged head
//     lists it, else the target's (the same version; the source's has
//     the id the next merge's base, a source commit, knows it by);
//   - changed (updated or deleted) only on the source: the source's;
//   - deleted on both: neither;
//   - updated on one side and updated or deleted on the other: refused,
//     ErrRowConflict naming the rows' _row_id.
//
// No data file is written. The source's snapshots are replayed by their
// file changes first (Replay.RowMerged lets them remove the files the
// target removed too); the merged head then may show a row several times
// (the target's copy and the source's) or not at all. One more snapshot
// adds deletion vectors that leave exactly the winning copy of every row
// visible (each unioned with the file's vector, if it has one), and drops
// the vectors left applying to data files the merge removed.
//
// The rows are read from the data files: the two lineage columns and a
// hash of every other column's value (a copy with the same id and other
// values is another row), of the base's files in question and of the files
// each side added in snapshots that were not appends (an append writes only new row ids; an
// UPDATE in merge-on-read writes the updated rows' ids into new files).
// RowMerge.MaxBytes bounds the bytes of files read.

// Field ids the Iceberg spec reserves for v3 row lineage.
const (
	rowIDFieldID          = 2147483540
	lastUpdatedSeqFieldID = 2147483539
)

// ReplayedRows is the SummaryReplayed value of the snapshot a row merge
// adds.
const ReplayedRows = "rows"

// ErrRowIDNotUnique: a row merge found several rows with the id of a row
// it merges on one side and cannot tell which is that row.
var ErrRowIDNotUnique = errors.New("row id not unique")

// ErrRowMergeBound: a row merge would read more bytes of data files than
// its bound allows.
var ErrRowMergeBound = errors.New("row merge exceeds its bound")

// RowMerge asks CherryPick to merge by row id the data files both sides
// rewrote (see above), after its picks.
type RowMerge struct {
	// Files are the base's data files whose rows are merged: removed on
	// both sides, or removed on one and given deletes on the other.
	Files map[string]bool
	// Base, Source and Target are the table at the merge base and at each
	// side's head (the target's before the merge).
	Base, Source, Target table.Metadata
	// MaxBytes bounds the bytes of data files read; 0 is no bound.
	MaxBytes int64
}

// rowBudget counts the bytes a row merge reads against its bound.
type rowBudget struct{ used, max int64 }

func (b *rowBudget) take(df iceberg.DataFile) error {
	b.used += df.FileSizeBytes()
	if b.max > 0 && b.used > b.max {
		return fmt.Errorf("%w: reading %s would make %d bytes of data files read, over the bound of %d (raise table property floe.merge.row-level.max-bytes)",
			ErrRowMergeBound, df.FilePath(), b.used, b.max)
	}
	return nil
}

// lineageRow is one row of a data file as written: its position and the
// lineage columns' values, nil where null or absent (inherited from the
// file's manifest entry, which differs from one snapshot to another).
type lineageRow struct {
	pos           uint64
	rowID, lastSq *int64
	// content is a hash of the row's values (every other column), which
	// tells a copy of the row unchanged from a row that only has its id.
	content uint64
}

// lineageReader reads data files' lineage columns, each file once.
type lineageReader struct {
	files  Files
	budget rowBudget
	rows   map[string][]lineageRow
	dvs    map[string][]byte // Puffin files read, by path
}

// of returns df's rows.
func (lr *lineageReader) of(ctx context.Context, df iceberg.DataFile) ([]lineageRow, error) {
	if rows, ok := lr.rows[df.FilePath()]; ok {
		return rows, nil
	}
	if df.FileFormat() != iceberg.ParquetFile {
		return nil, fmt.Errorf("%w: data file %s is %s; a row merge reads Parquet", ErrUnsupported, df.FilePath(), df.FileFormat())
	}
	if err := lr.budget.take(df); err != nil {
		return nil, err
	}
	data, err := lr.files.ReadFile(ctx, df.FilePath())
	if err != nil {
		return nil, fmt.Errorf("read data file %s: %w", df.FilePath(), err)
	}
	tbl, err := pqarrow.ReadTable(ctx, bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("data file %s: %w", df.FilePath(), err)
	}
	defer tbl.Release()
	out := make([]lineageRow, tbl.NumRows())
	for i := range out {
		out[i].pos = uint64(i)
	}
	hashes := make([]hash.Hash64, len(out))
	for i := range hashes {
		hashes[i] = fnv.New64a()
	}
	// Columns in field id order, so two files of one schema hash alike
	// whatever their column order; nulls are left out, so a column added
	// since (null in old rows) changes nothing.
	type column struct {
		id  int
		col *arrow.Column
	}
	var cols []column
	for i, f := range tbl.Schema().Fields() {
		id, err := fieldID(f)
		if err != nil {
			return nil, fmt.Errorf("data file %s: column %s: %w", df.FilePath(), f.Name, err)
		}
		cols = append(cols, column{id, tbl.Column(i)})
	}
	slices.SortFunc(cols, func(a, b column) int { return a.id - b.id })
	for _, c := range cols {
		row := 0
		for _, chunk := range c.col.Data().Chunks() {
			for i := range chunk.Len() {
				r := &out[row]
				row++
				if chunk.IsNull(i) {
					continue
				}
				switch c.id {
				case rowIDFieldID, lastUpdatedSeqFieldID:
					v, ok := chunk.(*array.Int64)
					if !ok {
						return nil, fmt.Errorf("%w: data file %s: lineage column %d is %s, not a long", ErrUnsupported, df.FilePath(), c.id, chunk.DataType())
					}
					x := v.Value(i)
					if c.id == rowIDFieldID {
						r.rowID = &x
					} else {
						r.lastSq = &x
					}
				default:
					fmt.Fprintf(hashes[r.pos], "%d\x00%s\x00", c.id, chunk.ValueStr(i))
				}
			}
		}
	}
	for i := range out {
		out[i].content = hashes[i].Sum64()
	}
	lr.rows[df.FilePath()] = out
	return out, nil
}

// fieldID is the Iceberg field id Parquet records for a column.
func fieldID(f arrow.Field) (int, error) {
	v, ok := f.Metadata.GetValue("PARQUET:field_id")
	if !ok {
		return 0, fmt.Errorf("%w: no field id", ErrUnsupported)
	}
	return strconv.Atoi(v)
}

// view is the table's live files at one snapshot (or the merged head).
type view struct {
	data map[string]iceberg.ManifestEntry
	// vectors are the live deletion vectors by the data file they apply to.
	vectors map[string][]iceberg.DataFile
	// otherDeletes are live delete files that are no vectors: a row merge
	// does not read them.
	otherDeletes []iceberg.DataFile
}

func newView() *view {
	return &view{data: map[string]iceberg.ManifestEntry{}, vectors: map[string][]iceberg.DataFile{}}
}

// viewOf reads the live files of the manifests mfs.
func viewOf(ctx context.Context, files Files, mfs []iceberg.ManifestFile) (*view, error) {
	v := newView()
	for _, m := range mfs {
		entries, err := readEntries(ctx, files, m, true)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			df := e.DataFile()
			switch {
			case df.ContentType() == iceberg.EntryContentData:
				v.data[df.FilePath()] = e
			case isDeletionVector(df):
				ref := *df.ReferencedDataFile()
				v.vectors[ref] = append(v.vectors[ref], df)
			default:
				v.otherDeletes = append(v.otherDeletes, df)
			}
		}
	}
	return v, nil
}

// snapshotView reads the live files of a table's main branch.
func snapshotView(ctx context.Context, files Files, meta table.Metadata) (*view, error) {
	s := meta.SnapshotByName(table.MainBranch)
	if s == nil {
		return newView(), nil
	}
	mfs, err := readManifestList(ctx, files, *s)
	if err != nil {
		return nil, err
	}
	return viewOf(ctx, files, mfs)
}

// rowCopy is one visible copy of a row in a view: where, and its
// last-updated sequence number there.
type rowCopy struct {
	file string
	pos  uint64
	// id is the row's id in the view.
	id      int64
	lastSeq int64
	// inherited: lastSeq is the file's data sequence number in the view,
	// not written in the file; inheritedID: so is the row id (the file's
	// first row id plus the position).
	inherited, inheritedID bool
	content                uint64
}

// copies finds, in view v, the visible copies of the rows want names, by
// their id in v (want maps it to the ids at the base of the rows that may
// have it there: ids are not unique across branches), reading the
// data files paths of v (those it has). The result is by id at the base.
func (lr *lineageReader) copies(ctx context.Context, v *view, paths []string, want map[int64][]int64) (map[int64][]rowCopy, error) {
	out := map[int64][]rowCopy{}
	for _, path := range paths {
		e, ok := v.data[path]
		if !ok {
			continue
		}
		deleted := dv.NewRoaringPositionBitmap()
		for _, vec := range v.vectors[path] {
			bm, err := readVector(ctx, lr.files, vec, lr.dvs)
			if err != nil {
				return nil, err
			}
			deleted.Or(bm)
		}
		rows, err := lr.of(ctx, e.DataFile())
		if err != nil {
			return nil, err
		}
		first, seq := e.DataFile().FirstRowID(), e.SequenceNum()
		for _, r := range rows {
			if deleted.Contains(r.pos) {
				continue
			}
			id := r.rowID
			if id == nil {
				if first == nil {
					return nil, fmt.Errorf("%w: data file %s has rows without a _row_id and no first row id", ErrUnsupported, path)
				}
				x := *first + int64(r.pos)
				id = &x
			}
			c := rowCopy{file: path, pos: r.pos, id: *id, lastSeq: seq, inherited: true, inheritedID: r.rowID == nil, content: r.content}
			if r.lastSq != nil {
				c.lastSeq, c.inherited = *r.lastSq, false
			}
			for _, baseID := range want[*id] {
				out[baseID] = append(out[baseID], c)
			}
		}
	}
	return out, nil
}

// relevant are the data files of side that may hold the base's rows in
// question: the files in question themselves, and the files the side
// added since the base in snapshots that were not appends.
func (rm *RowMerge) relevant(side table.Metadata, sv, base *view) []string {
	var out []string
	for path, e := range sv.data {
		_, atBase := base.data[path]
		switch {
		case rm.Files[path]:
		case atBase:
			continue
		default:
			if s := side.SnapshotByID(e.SnapshotID()); s != nil && s.Summary != nil && s.Summary.Operation == table.OpAppend {
				continue
			}
		}
		out = append(out, path)
	}
	slices.Sort(out)
	return out
}

// masks decides every row of the files in question and returns, by data
// file of the merged head, the positions it must hide, or ErrRowConflict.
//
// A row's id is the same on both sides only where its file was there at
// the branch point: a merge lists a branch's files on the other with new
// first row ids, and a rewrite writes each side's own id. So each side's
// copies are looked up by the ids the rows of the files in question have
// on that side (an id written at the base also by the id its origin file
// gives it there, roworigin.go), then named by their ids at the base.
func (rm *RowMerge) masks(ctx context.Context, files Files, merged *view) (map[string]*dv.RoaringPositionBitmap, error) {
	lr := &lineageReader{files: files, budget: rowBudget{max: rm.MaxBytes}, rows: map[string][]lineageRow{}, dvs: map[string][]byte{}}
	baseView, err := snapshotView(ctx, files, rm.Base)
	if err != nil {
		return nil, fmt.Errorf("merge base: %w", err)
	}
	srcView, err := snapshotView(ctx, files, rm.Source)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	tgtView, err := snapshotView(ctx, files, rm.Target)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	for _, v := range []*view{srcView, tgtView, merged} {
		if len(v.otherDeletes) > 0 {
			return nil, fmt.Errorf("%w: a row merge reads deletion vectors only; the table has %d other delete file(s), e.g. %s",
				ErrUnsupported, len(v.otherDeletes), v.otherDeletes[0].FilePath())
		}
	}
	inQuestion := slices.Sorted(maps.Keys(rm.Files))
	for _, path := range inQuestion {
		if _, ok := baseView.data[path]; !ok {
			return nil, fmt.Errorf("%w: data file %s is not live at the merge base", ErrNotReplayable, path)
		}
	}
	// The base's rows of the files in question, by their id there.
	everyID := map[int64][]int64{}
	for _, path := range inQuestion {
		e := baseView.data[path]
		rows, err := lr.of(ctx, e.DataFile())
		if err != nil {
			return nil, fmt.Errorf("merge base: %w", err)
		}
		for _, r := range rows {
			switch first := e.DataFile().FirstRowID(); {
			case r.rowID != nil:
				everyID[*r.rowID] = []int64{*r.rowID}
			case first != nil:
				everyID[*first+int64(r.pos)] = []int64{*first + int64(r.pos)}
			}
		}
	}
	baseCopies, err := lr.copies(ctx, baseView, inQuestion, everyID)
	if err != nil {
		return nil, fmt.Errorf("merge base: %w", err)
	}
	// The ids the base's files have written, followed back to the files
	// they were handed to: a side may know such a row by another id.
	var written []int64
	for id, cs := range baseCopies {
		if !cs[0].inheritedID {
			written = append(written, id)
		}
	}
	slices.Sort(written)
	origins, err := rowOrigins(ctx, files, rm.Base, written)
	if err != nil {
		return nil, fmt.Errorf("merge base: %w", err)
	}
	originFiles := map[string]bool{}
	for _, o := range origins {
		originFiles[o.file] = true
	}
	originPaths := slices.Sorted(maps.Keys(originFiles))
	// A side's snapshots the base has too, by manifest list, are history
	// both share: a file there has the same first row ids on both, so an
	// origin file is looked for only in the side's snapshots since. (Not
	// by snapshot id: a merge replays a branch's snapshot on the other
	// under the same id, with a new list and new first row ids.)
	shared := map[string]bool{}
	for _, s := range rm.Base.Snapshots() {
		shared[s.ManifestList] = true
	}
	// moved: by side, the rows in question it also knows by an id of its
	// own (roworigin.go); a copy there under the base's id may be another
	// row.
	moved := map[string]map[int64]bool{}
	side := func(name string, meta table.Metadata, v *view) (map[int64][]rowCopy, map[string]sideFile, []string, error) {
		moved[name] = map[int64]bool{}
		sf, err := sideFiles(ctx, files, meta, v, inQuestion, originPaths, shared)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		want := map[int64][]int64{}
		for _, id := range written {
			want[id] = append(want[id], id)
			o, ok := origins[id]
			if !ok {
				continue
			}
			if f, ok := sf[o.file]; ok && f.firstRowID != nil && *f.firstRowID != o.first {
				sideID := *f.firstRowID + (id - o.first)
				want[sideID] = append(want[sideID], id)
				moved[name][id] = true
			}
		}
		for id, cs := range baseCopies {
			b := cs[0]
			if !b.inheritedID {
				continue
			}
			f, ok := sf[b.file]
			if !ok || f.firstRowID == nil {
				return nil, nil, nil, fmt.Errorf("%w: %s: the first row id of data file %s is unknown there", ErrUnsupported, name, b.file)
			}
			sideID := *f.firstRowID + int64(b.pos)
			want[sideID] = append(want[sideID], id)
		}
		// An origin file the side still lists may show the row under the
		// side's id for it, whatever snapshot listed the file.
		rel := rm.relevant(meta, v, baseView)
		for f := range originFiles {
			if _, ok := v.data[f]; ok && !slices.Contains(rel, f) {
				rel = append(rel, f)
			}
		}
		slices.Sort(rel)
		cs, err := lr.copies(ctx, v, rel, want)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		return cs, sf, rel, nil
	}
	src, srcFiles, _, err := side("source", rm.Source, srcView)
	if err != nil {
		return nil, err
	}
	tgt, tgtFiles, _, err := side("target", rm.Target, tgtView)
	if err != nil {
		return nil, err
	}
	// The merged head shows the copies either side shows whose file it
	// lists, where its vectors do not hide them.
	hidden := map[string]*dv.RoaringPositionBitmap{}
	visible := func(c rowCopy) (bool, error) {
		if _, ok := merged.data[c.file]; !ok {
			return false, nil
		}
		if hidden[c.file] == nil {
			hidden[c.file] = dv.NewRoaringPositionBitmap()
			for _, vec := range merged.vectors[c.file] {
				bm, err := readVector(ctx, files, vec, lr.dvs)
				if err != nil {
					return false, err
				}
				hidden[c.file].Or(bm)
			}
		}
		return !hidden[c.file].Contains(c.pos), nil
	}

	src, tgt = unclaimed(src, baseCopies, srcFiles), unclaimed(tgt, baseCopies, tgtFiles)

	// byBaseID: a side's copy of row id found under the base's id where
	// the side also knows the row by an id of its own: it may be the
	// side's own row that was handed the same id.
	byBaseID := func(name string, id int64, cs []rowCopy) bool {
		return moved[name][id] && slices.ContainsFunc(cs, func(c rowCopy) bool { return c.id == id })
	}

	out := map[string]*dv.RoaringPositionBitmap{}
	var both, lost []int64
	unsure := map[string][]int64{} // by side
	for _, id := range slices.Sorted(maps.Keys(baseCopies)) {
		b := baseCopies[id][0]
		s, err := theCopy(b, src[id], srcFiles, "source", id)
		if err != nil {
			return nil, err
		}
		t, err := theCopy(b, tgt[id], tgtFiles, "target", id)
		if err != nil {
			return nil, err
		}
		srcChanged := len(s) == 0 || !unchanged(b, s[0], srcFiles)
		tgtChanged := len(t) == 0 || !unchanged(b, t[0], tgtFiles)
		// keep is the copy the merged table shows: a copy of the winning
		// version, found on the merged head by its place in a data file.
		var keep []rowCopy
		switch {
		case srcChanged && tgtChanged:
			if len(s)+len(t) > 0 {
				// Updated on one side, changed on the other; unless the
				// update is only a row sharing the id.
				switch {
				case byBaseID("target", id, t):
					unsure["target"] = append(unsure["target"], id)
				case byBaseID("source", id, s):
					unsure["source"] = append(unsure["source"], id)
				default:
					both = append(both, id)
				}
				continue
			}
		case srcChanged:
			keep = s
		case tgtChanged:
			keep = t
		default:
			keep = append(slices.Clone(s), t...)
		}
		// Changed on neither side, the source's copy is kept where the
		// merged head shows it, the target's hidden: the two copies may
		// have different ids (a merge gives the rows of the source's
		// appends new ids on the target), and the next merge of this
		// source compares the target with a source commit, which knows
		// the row by the source's id; a target copy kept under another
		// id would look deleted on the target, and the source's later
		// change of the row would be lost.
		kept := false
		seen := map[rowCopy]bool{}
		for _, c := range slices.Concat(s, t) {
			c.id, c.lastSeq, c.inherited, c.inheritedID, c.content = 0, 0, false, false, 0
			if seen[c] {
				continue
			}
			seen[c] = true
			switch ok, err := visible(c); {
			case err != nil:
				return nil, err
			case !ok:
				continue
			}
			if !kept && slices.ContainsFunc(keep, func(k rowCopy) bool { return k.file == c.file && k.pos == c.pos }) {
				kept = true
				continue
			}
			if out[c.file] == nil {
				out[c.file] = dv.NewRoaringPositionBitmap()
			}
			out[c.file].Set(c.pos)
		}
		if len(keep) > 0 && !kept {
			lost = append(lost, id)
		}
	}
	if len(both) > 0 {
		return nil, fmt.Errorf("%w: %d row(s) of data files rewritten on both sides were updated on one side and updated or deleted on the other: %s",
			ErrRowConflict, len(both), rowIDNames(both))
	}
	for _, name := range []string{"target", "source"} {
		if ids := unsure[name]; len(ids) > 0 {
			return nil, fmt.Errorf("%w: %s is not unique on the %s: %d row(s) changed on one side have a copy there under that id which may instead be its own row given the same id, while it knows the row by another (rows an earlier merge listed there share ids with its own)",
				ErrRowIDNotUnique, rowIDNames(ids), name, len(ids))
		}
	}
	if len(lost) > 0 {
		return nil, fmt.Errorf("%w: the version to keep of %d row(s) is not on the merged head: %s", ErrNotReplayable, len(lost), rowIDNames(lost))
	}
	return out, nil
}

// unchanged reports whether a side's copy c of a row is the base's
// version b: the same place in the same (immutable) file, or the same
// values and last-updated sequence number. A base row whose number is its file's
// (inherited) has, on a side, the number that file has there: a merge
// lists a branch's files on the other branch with new sequence numbers.
func unchanged(b, c rowCopy, side map[string]sideFile) bool {
	switch {
	case c.file == b.file && c.pos == b.pos:
		return true
	case c.content != b.content:
		// Row ids are not unique across branches (a merge lists the
		// source's files, ids written in them, beside the target's own
		// rows): a row that only shares the id is a different row, and a
		// copy that changed is changed.
		return false
	case c.lastSeq == b.lastSeq:
		return true
	}
	f, ok := side[b.file]
	return b.inherited && ok && c.lastSeq == f.seq
}

// theCopy picks the side's copy of base row b among the rows there that
// have its id: row ids are not unique across branches (a merge lists the
// source's files, with the ids written in them, beside the target's own
// rows, whose ids were handed out from the same next row id). One row
// with the id is the copy; of several, the one unchanged from the base,
// the others being other rows; several and none unchanged cannot be told
// apart. Rows that cannot be b's (otherRow) are left out first.
func theCopy(b rowCopy, cs []rowCopy, side map[string]sideFile, name string, id int64) ([]rowCopy, error) {
	cs = slices.DeleteFunc(slices.Clone(cs), func(c rowCopy) bool { return otherRow(b, c, side) })
	if len(cs) <= 1 {
		return cs, nil
	}
	var same []rowCopy
	for _, c := range cs {
		if unchanged(b, c, side) {
			same = append(same, c)
		}
	}
	if len(same) != 1 {
		return nil, fmt.Errorf("%w: _row_id=%d is not unique on the %s (%d rows hold it, %d unchanged from the merge base): rows an earlier merge listed there share ids with its own",
			ErrRowIDNotUnique, id, name, len(cs), len(same))
	}
	return same, nil
}

// unclaimed drops, from each base row's copies on a side, the copies
// that are another base row's unchanged: a side row found under an id two
// base rows may have there (one by its id, one by the id its file was
// listed with; see roworigin.go) that is one of them unchanged is that
// one, not a change of the other.
func unclaimed(copies, base map[int64][]rowCopy, side map[string]sideFile) map[int64][]rowCopy {
	holders := map[rowCopy][]int64{}
	for id, cs := range copies {
		for _, c := range cs {
			holders[c] = append(holders[c], id)
		}
	}
	out := make(map[int64][]rowCopy, len(copies))
	for id, cs := range copies {
		b := base[id][0]
		out[id] = slices.DeleteFunc(slices.Clone(cs), func(c rowCopy) bool {
			if unchanged(b, c, side) {
				return false
			}
			return slices.ContainsFunc(holders[c], func(other int64) bool {
				return other != id && unchanged(base[other][0], c, side)
			})
		})
	}
	return out
}

// otherRow reports whether c, a row of a side with the id of base row b,
// is sure to be another row. A row's version whose last-updated sequence
// number is its file's (inherited: the base's file b.file added or
// updated it) came to the side with that file, at the file's sequence
// number there; a change of it on the side is written later, with a
// greater number. So a row with other values and a number no greater is
// not b changed but a row that only shares its id (the side's own, given
// the same id from its own next row id). A number written in a file is
// left alone: it may be the other branch's.
func otherRow(b, c rowCopy, side map[string]sideFile) bool {
	if !b.inherited || unchanged(b, c, side) {
		return false
	}
	f, ok := side[b.file]
	return ok && c.lastSeq <= f.seq
}

// sideFile is what a data file's entry says on one side: its data
// sequence number and first row id.
type sideFile struct {
	seq        int64
	firstRowID *int64
}

// sideFiles returns what each of paths is on the side, or was when the
// side removed it: from its live entry, else from the DELETED entry of the
// side's snapshot that removed it. One walk back through the side's
// snapshots serves both: paths are looked for through the whole history,
// recent only back to the first snapshot whose manifest list shared holds.
func sideFiles(ctx context.Context, files Files, side table.Metadata, v *view, paths, recent []string, shared map[string]bool) (map[string]sideFile, error) {
	out := map[string]sideFile{}
	need := map[string]bool{}     // path → still looked for
	isRecent := map[string]bool{} // of need: only since shared history
	for i, p := range slices.Concat(paths, recent) {
		if e, ok := v.data[p]; ok {
			out[p] = sideFile{e.SequenceNum(), e.DataFile().FirstRowID()}
		} else if !need[p] {
			need[p] = true
			isRecent[p] = i >= len(paths)
		}
	}
	s := side.SnapshotByName(table.MainBranch)
	for n := 0; s != nil && len(need) > 0 && n <= len(side.Snapshots()); n++ {
		if shared[s.ManifestList] {
			for p := range need {
				if isRecent[p] {
					delete(need, p)
				}
			}
			if len(need) == 0 {
				break
			}
		}
		mfs, err := readManifestList(ctx, files, *s)
		if err != nil {
			return nil, err
		}
		for _, m := range mfs {
			if m.SnapshotID() != s.SnapshotID || m.DeletedDataFiles() == 0 {
				continue
			}
			entries, err := readEntries(ctx, files, m, false)
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				if p := e.DataFile().FilePath(); e.Status() == iceberg.EntryStatusDELETED && need[p] {
					out[p] = sideFile{e.SequenceNum(), e.DataFile().FirstRowID()}
					delete(need, p)
				}
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = side.SnapshotByID(*s.ParentSnapshotID)
	}
	return out, nil
}

func rowIDNames(ids []int64) string {
	names := make([]string, 0, min(len(ids), maxRowsNamed)+1)
	for i, id := range ids {
		if i == maxRowsNamed {
			names = append(names, fmt.Sprintf("and %d more", len(ids)-maxRowsNamed))
			break
		}
		names = append(names, "_row_id="+strconv.FormatInt(id, 10))
	}
	return strings.Join(names, ", ")
}

// applyRowMerge writes the row merge's deletion vectors on top of the
// merged head (its manifests listed): it returns the new list, the
// manifests it wrote, the summary's counts and the files written.
func applyRowMerge(ctx context.Context, files Files, head table.Metadata, listed []iceberg.ManifestFile, rm *RowMerge, id int64) (all, mine []iceberg.ManifestFile, c counts, written []string, err error) {
	merged, err := viewOf(ctx, files, listed)
	if err != nil {
		return nil, nil, c, nil, err
	}
	masks, err := rm.masks(ctx, files, merged)
	if err != nil {
		return nil, nil, c, nil, err
	}
	// Replaced: the vectors of masked files (each gives way to its union
	// with the mask), and vectors of data files the merge removed.
	dataOf := map[string]iceberg.DataFile{}
	var old []iceberg.DataFile
	dropped := map[string]bool{}
	for path, e := range merged.data {
		if masks[path] != nil {
			dataOf[path] = e.DataFile()
		}
	}
	for ref, vs := range merged.vectors {
		_, live := merged.data[ref]
		if masks[ref] == nil && live {
			continue
		}
		for _, v := range vs {
			old = append(old, v)
			dropped[fileKey(v)] = true
		}
	}
	if len(masks) == 0 && len(dropped) == 0 {
		return listed, nil, c, nil, nil
	}
	cache := map[string][]byte{}
	var blobs []vectorBlob
	for _, path := range slices.Sorted(maps.Keys(masks)) {
		df, ok := dataOf[path]
		if !ok {
			return nil, nil, c, nil, fmt.Errorf("%w: data file %s holds rows the merge hides, and is not on the merged head", ErrNotReplayable, path)
		}
		bm := masks[path]
		for _, v := range old {
			if *v.ReferencedDataFile() == path {
				prev, err := readVector(ctx, files, v, cache)
				if err != nil {
					return nil, nil, c, nil, err
				}
				bm.Or(prev)
			}
		}
		bm.RunLengthEncode()
		blobs = append(blobs, vectorBlob{data: df, positions: bm})
	}
	entries, loc, err := writeVectors(ctx, files, head, id, blobs)
	if loc != "" {
		written = append(written, loc)
	}
	if err != nil {
		return nil, nil, c, written, err
	}
	// The head's manifests that list a replaced vector are rewritten with
	// it DELETED; the new vectors get a manifest of their own.
	for _, m := range listed {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			all = append(all, m)
			continue
		}
		es, err := readEntries(ctx, files, m, true)
		if err != nil {
			return nil, nil, c, written, err
		}
		ops := make([]entryOp, len(es))
		hit := false
		for i, e := range es {
			ops[i] = entryOp{iceberg.EntryStatusEXISTING, e}
			if dropped[fileKey(e.DataFile())] {
				ops[i].status, hit = iceberg.EntryStatusDELETED, true
				c.remove(e.DataFile())
			}
		}
		if !hit {
			all = append(all, m)
			continue
		}
		mf, loc, err := writeManifest(ctx, files, head, m.PartitionSpecID(), m.ManifestContent(), id, ops)
		if loc != "" {
			written = append(written, loc)
		}
		if err != nil {
			return nil, nil, c, written, fmt.Errorf("rewrite manifest %s: %w", m.FilePath(), err)
		}
		all, mine = append(all, mf), append(mine, mf)
	}
	bySpec := map[int32][]entryOp{}
	for _, e := range entries {
		c.add(e.DataFile())
		bySpec[e.DataFile().SpecID()] = append(bySpec[e.DataFile().SpecID()], entryOp{iceberg.EntryStatusADDED, e})
	}
	for _, spec := range slices.Sorted(maps.Keys(bySpec)) {
		mf, loc, err := writeManifest(ctx, files, head, spec, iceberg.ManifestContentDeletes, id, bySpec[spec])
		if loc != "" {
			written = append(written, loc)
		}
		if err != nil {
			return nil, nil, c, written, fmt.Errorf("deletion vectors: %w", err)
		}
		all, mine = append(all, mf), append(mine, mf)
	}
	return all, mine, c, written, nil
}
