package lakescenario

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/cockroachdb/datadriven"
	"github.com/google/uuid"
)

// Field ids the Iceberg spec reserves for v3 row lineage.
const (
	rowIDFieldID          = 2147483540
	lastUpdatedSeqFieldID = 2147483539
)

// Rewrite runs `rewrite on=BRANCH table=T id=N (delete | update=M)` on
// tbl, a format v3 table: a copy-on-write DELETE of the row with id N, or
// an UPDATE setting its id to M, written as Spark writes it with row
// lineage (iceberg-go does not): the row's data file is replaced, in one
// snapshot, by a file of its other rows, each with its
// _row_id and _last_updated_sequence_number written out; an updated row
// keeps its _row_id and gets a null _last_updated_sequence_number (it
// inherits the new snapshot's).
func (l *Lake) Rewrite(t *testing.T, td *datadriven.TestData, tbl *table.Table) {
	ctx := t.Context()
	id, err := strconv.ParseInt(Arg(t, td, "id"), 10, 64)
	if err != nil {
		td.Fatalf(t, "id: %v", err)
	}
	update, hasUpdate := int64(0), false
	if s := OptArg(td, "update", ""); s != "" {
		if update, err = strconv.ParseInt(s, 10, 64); err != nil {
			td.Fatalf(t, "update: %v", err)
		}
		hasUpdate = true
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		td.Fatalf(t, "rewrite: the table has no snapshot")
	}
	mfs, err := snap.Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	// The data files and their deletion vectors: a rewrite leaves out the
	// rows a vector deletes, and removes the vector with the file.
	var data []iceberg.ManifestEntry
	vectors := map[string]iceberg.DataFile{}
	for _, mf := range mfs {
		entries, err := mf.FetchEntries(fs, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			df := e.DataFile()
			switch {
			case df.ContentType() == iceberg.EntryContentData:
				data = append(data, e)
			case df.ReferencedDataFile() != nil && df.ContentOffset() != nil:
				vectors[*df.ReferencedDataFile()] = df
			default:
				td.Fatalf(t, "rewrite: delete file %s is no deletion vector", df.FilePath())
			}
		}
	}
	for _, e := range data {
		if l.rewriteFile(t, td, tbl, fs, e, vectors[e.DataFile().FilePath()], id, update, hasUpdate) {
			return
		}
	}
	td.Fatalf(t, "rewrite: no live data file holds id %d", id)
}

// rewriteFile rewrites e's file if it holds the row with id, and reports
// whether it did.
func (l *Lake) rewriteFile(t *testing.T, td *datadriven.TestData, tbl *table.Table, fs iceio.IO, e iceberg.ManifestEntry, vector iceberg.DataFile, id, update int64, hasUpdate bool) bool {
	ctx := t.Context()
	df := e.DataFile()
	data := readAll(t, fs, df.FilePath())
	deleted := dv.NewRoaringPositionBitmap()
	if vector != nil {
		puffin := readAll(t, fs, vector.FilePath())
		off, size := *vector.ContentOffset(), *vector.ContentSizeInBytes()
		bm, err := dv.DeserializeDV(puffin[off:off+size], vector.Count())
		if err != nil {
			t.Fatal(err)
		}
		deleted = bm
	}
	rows, err := pqarrow.ReadTable(ctx, bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Release()
	col := func(name string) *arrow.Column {
		idx := rows.Schema().FieldIndices(name)
		if len(idx) == 0 {
			return nil
		}
		return rows.Column(idx[0])
	}
	ids := col("id")
	found := false
	pos := 0
	forEach(ids, func(_ int, a arrow.Array, i int) {
		if a.(*array.Int64).Value(i) == id && !deleted.Contains(uint64(pos)) {
			found = true
		}
		pos++
	})
	if !found {
		return false
	}
	if df.FirstRowID() == nil {
		td.Fatalf(t, "rewrite: data file %s has no first row id (not a v3 table?)", df.FilePath())
	}
	first, seq := *df.FirstRowID(), e.SequenceNum()
	rowIDs, lastSeqs := col("_row_id"), col("_last_updated_sequence_number")

	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	lineageField := func(name string, fieldID int) arrow.Field {
		return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(fieldID)})}
	}
	out := arrow.NewSchema(append(sc.Fields(), lineageField("_row_id", rowIDFieldID), lineageField("_last_updated_sequence_number", lastUpdatedSeqFieldID)), nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, out)
	defer b.Release()
	pos = 0
	forEach(ids, func(chunk int, a arrow.Array, i int) {
		defer func() { pos++ }()
		if deleted.Contains(uint64(pos)) {
			return
		}
		v := a.(*array.Int64).Value(i)
		rowID, last := first+int64(pos), seq
		if rowIDs != nil {
			if c := rowIDs.Data().Chunk(chunk).(*array.Int64); c.IsValid(i) {
				rowID = c.Value(i)
			}
		}
		if lastSeqs != nil {
			if c := lastSeqs.Data().Chunk(chunk).(*array.Int64); c.IsValid(i) {
				last = c.Value(i)
			}
		}
		if v == id && !hasUpdate {
			return
		}
		for fi := range sc.NumFields() {
			src := col(sc.Field(fi).Name).Data().Chunk(chunk)
			if fi == 0 && v == id {
				b.Field(0).(*array.Int64Builder).Append(update)
				continue
			}
			if err := appendFrom(b.Field(fi), src, i); err != nil {
				t.Fatal(err)
			}
		}
		b.Field(sc.NumFields()).(*array.Int64Builder).Append(rowID)
		if v == id {
			b.Field(sc.NumFields() + 1).AppendNull() // updated: inherits the new snapshot's
		} else {
			b.Field(sc.NumFields() + 1).(*array.Int64Builder).Append(last)
		}
	})
	rec := b.NewRecordBatch()
	defer rec.Release()
	tx := tbl.NewTransaction()
	rw := tx.NewRewrite(nil).DeleteFile(df)
	if vector != nil {
		rw.DeleteFile(vector)
	}
	if rec.NumRows() == 0 {
		// The file's last row deleted: the file goes, none comes.
		if err := rw.Commit(ctx); err != nil {
			td.Fatalf(t, "rewrite: %v", err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			td.Fatalf(t, "rewrite: %v", err)
		}
		return true
	}
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(array.NewTableFromRecords(out, []arrow.RecordBatch{rec}), &buf, 1024,
		parquet.NewWriterProperties(), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	path := tbl.Location() + "/data/" + uuid.NewString() + "-lineage.parquet"
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		t.Fatal("rewrite: the table's file IO cannot write")
	}
	w, err := wfs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	spec := tbl.Metadata().PartitionSpecByID(int(df.SpecID()))
	nb, err := iceberg.NewDataFileBuilder(*spec, iceberg.EntryContentData, path, iceberg.ParquetFile,
		df.Partition(), nil, nil, rec.NumRows(), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	// iceberg-go commits caller-written v3 files only as a rewrite (it
	// cannot vouch for their row ids otherwise): the snapshot says
	// replace where Spark's says overwrite. The merge reads the rows'
	// lineage either way.
	if err := rw.AddDataFile(nb.Build()).Commit(ctx); err != nil {
		td.Fatalf(t, "rewrite: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		td.Fatalf(t, "rewrite: %v", err)
	}
	return true
}

func readAll(t *testing.T, fs iceio.IO, path string) []byte {
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// forEach calls fn for every row of a chunked column.
func forEach(c *arrow.Column, fn func(chunk int, a arrow.Array, i int)) {
	for ci, a := range c.Data().Chunks() {
		for i := range a.Len() {
			fn(ci, a, i)
		}
	}
}

// appendFrom appends row i of a to b, of the same type: the types of the
// scenario tables' columns.
func appendFrom(b array.Builder, a arrow.Array, i int) error {
	if a.IsNull(i) {
		b.AppendNull()
		return nil
	}
	switch a := a.(type) {
	case *array.Int64:
		b.(*array.Int64Builder).Append(a.Value(i))
	case *array.Int32:
		b.(*array.Int32Builder).Append(a.Value(i))
	case *array.Timestamp:
		b.(*array.TimestampBuilder).Append(a.Value(i))
	case *array.String:
		b.(*array.StringBuilder).Append(a.Value(i))
	default:
		return fmt.Errorf("rewrite: column type %s not handled", a.DataType())
	}
	return nil
}
