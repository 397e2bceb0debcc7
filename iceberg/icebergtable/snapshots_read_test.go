package icebergtable_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

// TestReadSnapshotManifestsOfDuckDB reads, through the warehouse, a
// manifest list shaped as DuckDB's Iceberg extension (1.4) writes it:
// every field a ["null", T] union, which iceberg-go's reader refuses by
// itself. The merge engine, the garbage collector and the facade's
// zero-retry appends read lists this way, so a table DuckDB wrote must
// not stop them.
func TestReadSnapshotManifestsOfDuckDB(t *testing.T) {
	wh, _, dir := localWarehouse(t)
	opt := func(name, typ string, id int) string {
		return `{"name":"` + name + `","type":["null",{"type":"` + typ + `"}],"field-id":` + strconv.Itoa(id) + `}`
	}
	schema := `{"type":"record","name":"manifest_file","fields":[` +
		opt("manifest_path", "string", 500) + "," + opt("manifest_length", "long", 501) + "," +
		opt("partition_spec_id", "int", 502) + "," + opt("content", "int", 517) + "," +
		opt("sequence_number", "long", 515) + "," + opt("min_sequence_number", "long", 516) + "," +
		opt("added_snapshot_id", "long", 503) + "," + opt("added_files_count", "int", 504) + "," +
		opt("existing_files_count", "int", 505) + "," + opt("deleted_files_count", "int", 506) + "," +
		opt("added_rows_count", "long", 512) + "," + opt("existing_rows_count", "long", 513) + "," +
		opt("deleted_rows_count", "long", 514) + "]}"
	manifest := wh.Location() + "/ns/t/metadata/a-m0.avro"
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, avro.MustParse(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Encode(map[string]any{
		"manifest_path": manifest, "manifest_length": int64(2849), "partition_spec_id": int32(0),
		"content": int32(0), "sequence_number": int64(2), "min_sequence_number": int64(2),
		"added_snapshot_id": int64(42), "added_files_count": int32(1), "existing_files_count": int32(0),
		"deleted_files_count": int32(0), "added_rows_count": int64(3), "existing_rows_count": int64(0),
		"deleted_rows_count": int64(0),
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ns", "t", "metadata", "snap-42-1-x.avro")
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	snap := &table.Snapshot{SnapshotID: 42, ManifestList: wh.Location() + "/ns/t/metadata/snap-42-1-x.avro"}
	for _, read := range []func() error{
		func() error { _, err := wh.ScanSnapshotManifests(t.Context(), snap); return err },
		func() error { _, err := wh.ReadSnapshotManifests(t.Context(), snap); return err },
	} {
		if err := read(); err != nil {
			t.Fatalf("read DuckDB's manifest list: %v", err)
		}
	}
	mfs, err := wh.ReadSnapshotManifests(t.Context(), snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].FilePath() != manifest || mfs[0].SequenceNum() != 2 || mfs[0].SnapshotID() != 42 || mfs[0].AddedRows() != 3 {
		t.Fatalf("manifests %+v", mfs)
	}

	// Lists and manifests are read whole into memory, within the
	// warehouse's bound on one read, as metadata files are.
	small, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: wh.Location() + "/",
		MaxMetadataFileBytes: int64(buf.Len() - 1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.ReadSnapshotManifests(t.Context(), snap); !errors.Is(err, icebergtable.ErrTooLarge) {
		t.Fatalf("a manifest list over the read bound: %v, want ErrTooLarge", err)
	}
}
