package tablemerge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// fileMap is Files over a map, for tests of what a merge reads.
type fileMap map[string][]byte

func (m fileMap) ReadFile(_ context.Context, loc string) ([]byte, error) {
	b, ok := m[loc]
	if !ok {
		return nil, fmt.Errorf("%s: %w", loc, fs.ErrNotExist)
	}
	return b, nil
}

func (m fileMap) WriteFile(_ context.Context, loc string, data []byte) error {
	m[loc] = data
	return nil
}

// positionDeleteFile writes a Parquet position delete file as Iceberg
// writers do: file_path and pos, with their reserved field ids (or, with
// ids false, by name alone).
func positionDeleteFile(t *testing.T, ids bool, rows ...any) []byte {
	t.Helper()
	meta := func(id int) arrow.Metadata {
		if !ids {
			return arrow.Metadata{}
		}
		return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "file_path", Type: arrow.BinaryTypes.String, Metadata: meta(posDeleteFilePathFieldID)},
		{Name: "pos", Type: arrow.PrimitiveTypes.Int64, Metadata: meta(posDeletePosFieldID)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < len(rows); i += 2 {
		b.Field(0).(*array.StringBuilder).Append(rows[i].(string))
		b.Field(1).(*array.Int64Builder).Append(int64(rows[i+1].(int)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPositionOverlap(t *testing.T) {
	files := fileMap{
		// The base deleted position 1 of a.parquet.
		"base-a.parquet": positionDeleteFile(t, true, "a.parquet", 1),
		// The source rewrote the base's delete into its own file (as
		// Spark's file-scoped deletes do) and deleted positions 3 and 5.
		"src-a.parquet": positionDeleteFile(t, true, "a.parquet", 1, "a.parquet", 3, "a.parquet", 5),
		// The target deleted 5 of a.parquet (a row the source deleted
		// too), 1 again, and 2 of b.parquet, in a partition-scoped file.
		"tgt-ab.parquet": positionDeleteFile(t, false, "a.parquet", 1, "a.parquet", 5, "b.parquet", 2),
		// Elsewhere: position 3 of b.parquet on the source.
		"src-b.parquet": positionDeleteFile(t, true, "b.parquet", 3),
		"src.avro":      []byte("not parquet"),
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		pd   PositionDeletes
		want []RowPositions
	}{
		{"different rows", PositionDeletes{Source: []string{"src-b.parquet"}, Target: []string{"tgt-ab.parquet"}}, nil},
		{"a row on both sides, and one both inherited",
			PositionDeletes{Source: []string{"src-a.parquet", "src-b.parquet"}, Target: []string{"tgt-ab.parquet"}, Inherited: []string{"base-a.parquet"}},
			[]RowPositions{{DataFile: "a.parquet", Positions: []uint64{5}}}},
		{"without the base's file, its row is on both sides too",
			PositionDeletes{Source: []string{"src-a.parquet"}, Target: []string{"tgt-ab.parquet"}},
			[]RowPositions{{DataFile: "a.parquet", Positions: []uint64{1, 5}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PositionOverlap(ctx, files, tc.pd)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tc.want, func(a, b RowPositions) bool {
				return a.DataFile == b.DataFile && slices.Equal(a.Positions, b.Positions)
			}) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	if _, err := PositionOverlap(ctx, files, PositionDeletes{Source: []string{"src.avro"}, Target: []string{"tgt-ab.parquet"}}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("an Avro delete file: err = %v, want ErrUnsupported", err)
	}
	if _, err := PositionOverlap(ctx, files, PositionDeletes{Source: []string{"gone.parquet"}, Target: []string{"tgt-ab.parquet"}}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing delete file: err = %v, want fs.ErrNotExist", err)
	}
	files["bad.parquet"] = []byte("PAR1 but not really")
	if _, err := PositionOverlap(ctx, files, PositionDeletes{Source: []string{"bad.parquet"}, Target: []string{"tgt-ab.parquet"}}); err == nil {
		t.Error("a broken Parquet file read without an error")
	}
}

func TestPositionConflictErrorNamesRows(t *testing.T) {
	var many []uint64
	for i := range 12 {
		many = append(many, uint64(i))
	}
	err := PositionConflictError([]RowPositions{{DataFile: "a.parquet", Positions: []uint64{5}}, {DataFile: "b.parquet", Positions: many}})
	if !errors.Is(err, ErrRowConflict) {
		t.Fatalf("err = %v, want ErrRowConflict", err)
	}
	for _, want := range []string{"13 row(s)", "data file a.parquet at position 5", "data file b.parquet at position 0, 1, 2", ", and 3 more"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}
