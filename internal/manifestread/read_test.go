package manifestread_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"

	"github.com/floe-catalog/floe/internal/manifestread"
)

// duckDBListSchema is the manifest-list schema DuckDB's Iceberg extension
// 1.4.4 writes (copied from a list it wrote against floe): every field,
// required ones included, a ["null", T] union, and the partition summary
// record named element0.
const duckDBListSchema = `{"type":"record","name":"manifest_file","fields":[` +
	`{"name":"manifest_path","type":["null",{"type":"string"}],"field-id":500},` +
	`{"name":"manifest_length","type":["null",{"type":"long"}],"field-id":501},` +
	`{"name":"partition_spec_id","type":["null",{"type":"int"}],"field-id":502},` +
	`{"name":"content","type":["null",{"type":"int"}],"field-id":517},` +
	`{"name":"sequence_number","type":["null",{"type":"long"}],"field-id":515},` +
	`{"name":"min_sequence_number","type":["null",{"type":"long"}],"field-id":516},` +
	`{"name":"added_snapshot_id","type":["null",{"type":"long"}],"field-id":503},` +
	`{"name":"added_files_count","type":["null",{"type":"int"}],"field-id":504},` +
	`{"name":"existing_files_count","type":["null",{"type":"int"}],"field-id":505},` +
	`{"name":"deleted_files_count","type":["null",{"type":"int"}],"field-id":506},` +
	`{"name":"added_rows_count","type":["null",{"type":"long"}],"field-id":512},` +
	`{"name":"existing_rows_count","type":["null",{"type":"long"}],"field-id":513},` +
	`{"name":"deleted_rows_count","type":["null",{"type":"long"}],"field-id":514},` +
	`{"name":"partitions","type":["null",{"type":"array","element-id":508,"items":["null",{"type":"record","name":"element0","fields":[` +
	`{"name":"contains_null","type":["null",{"type":"boolean"}],"field-id":509},` +
	`{"name":"contains_nan","type":["null",{"type":"boolean"}],"field-id":518},` +
	`{"name":"lower_bound","type":["null",{"type":"bytes"}],"field-id":510},` +
	`{"name":"upper_bound","type":["null",{"type":"bytes"}],"field-id":511}]}]}],"field-id":507}]}`

// duckDBEntry is one manifest-list entry as DuckDB fills it; partitions
// nil is an unpartitioned table's.
func duckDBEntry(path string, seq int64, partitions []any) map[string]any {
	e := map[string]any{
		"manifest_path": path, "manifest_length": int64(2849), "partition_spec_id": int32(0),
		"content": int32(0), "sequence_number": seq, "min_sequence_number": seq,
		"added_snapshot_id": int64(7807349022253728277), "added_files_count": int32(1),
		"existing_files_count": int32(0), "deleted_files_count": int32(0),
		"added_rows_count": int64(3), "existing_rows_count": int64(0), "deleted_rows_count": int64(0),
		"partitions": nil,
	}
	if partitions != nil {
		e["partitions"] = partitions
	}
	return e
}

func writeList(t *testing.T, schema string, meta map[string][]byte, rows ...map[string]any) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, avro.MustParse(schema), ocf.WithMetadata(meta), ocf.WithCodec(ocf.DeflateCodec(-1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadDuckDBManifestList(t *testing.T) {
	summary := map[string]any{"contains_null": false, "contains_nan": nil, "lower_bound": []byte{1, 0, 0, 0}, "upper_bound": []byte{9, 0, 0, 0}}
	data := writeList(t, duckDBListSchema, nil,
		duckDBEntry("file:///wh/s1/t/metadata/a-m0.avro", 2, nil),
		duckDBEntry("file:///wh/s1/t/metadata/b-m0.avro", 3, []any{summary}),
	)
	if _, err := iceberg.ReadManifestList(bytes.NewReader(data)); err == nil {
		t.Log("iceberg-go now reads DuckDB's manifest lists itself; manifestread.Read's fallback is no longer needed")
	}
	list, err := manifestread.ReadList(data)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(list) != 2 {
		t.Fatalf("Read: %d manifests, want 2", len(list))
	}
	for i, m := range list {
		want := []string{"file:///wh/s1/t/metadata/a-m0.avro", "file:///wh/s1/t/metadata/b-m0.avro"}[i]
		if m.FilePath() != want || m.Length() != 2849 || m.PartitionSpecID() != 0 || m.ManifestContent() != iceberg.ManifestContentData ||
			m.SequenceNum() != int64(2+i) || m.MinSequenceNum() != int64(2+i) || m.SnapshotID() != 7807349022253728277 ||
			m.AddedDataFiles() != 1 || m.ExistingDataFiles() != 0 || m.DeletedDataFiles() != 0 || m.AddedRows() != 3 {
			t.Errorf("manifest %d: path %s length %d spec %d content %v seq %d/%d snapshot %d files %d/%d/%d rows %d",
				i, m.FilePath(), m.Length(), m.PartitionSpecID(), m.ManifestContent(), m.SequenceNum(), m.MinSequenceNum(),
				m.SnapshotID(), m.AddedDataFiles(), m.ExistingDataFiles(), m.DeletedDataFiles(), m.AddedRows())
		}
	}
	if p := list[0].Partitions(); len(p) != 0 {
		t.Errorf("unpartitioned manifest: partitions %v, want none", p)
	}
	p := list[1].Partitions()
	if len(p) != 1 || p[0].ContainsNull || p[0].ContainsNaN != nil ||
		!bytes.Equal(*p[0].LowerBound, []byte{1, 0, 0, 0}) || !bytes.Equal(*p[0].UpperBound, []byte{9, 0, 0, 0}) {
		t.Errorf("partitioned manifest: partitions %+v", p)
	}
}

func TestReadRefusesNullInRequiredField(t *testing.T) {
	bad := duckDBEntry("", 2, nil)
	bad["manifest_path"] = nil
	data := writeList(t, duckDBListSchema, nil, duckDBEntry("file:///wh/a-m0.avro", 2, nil), bad)
	if _, err := manifestread.ReadList(data); err == nil || !strings.Contains(err.Error(), "manifest_path") {
		t.Fatalf("Read of a list with a null manifest_path: error %v, want one naming manifest_path", err)
	}
}

func TestReadIcebergGoListUnchanged(t *testing.T) {
	var buf bytes.Buffer
	parent := int64(1)
	w, err := iceberg.NewManifestListWriterV2(&buf, 2, 5, &parent)
	if err != nil {
		t.Fatal(err)
	}
	mf := iceberg.NewManifestFile(2, "file:///wh/c-m0.avro", 100, 0, 2).SequenceNum(5, 4).AddedFiles(1).AddedRows(7).Build()
	if err := w.AddManifests([]iceberg.ManifestFile{mf}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	list, err := manifestread.ReadList(buf.Bytes())
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(list) != 1 || list[0].FilePath() != "file:///wh/c-m0.avro" || list[0].SequenceNum() != 5 || list[0].AddedRows() != 7 {
		t.Fatalf("Read: %+v", list)
	}
	// Normalizing a list iceberg-go reads anyway keeps what it reads.
	out, _, err := manifestread.Normalize(buf.Bytes())
	if err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	again, err := iceberg.ReadManifestList(bytes.NewReader(out))
	if err != nil || len(again) != 1 || again[0].FilePath() != list[0].FilePath() || again[0].SequenceNum() != 5 ||
		again[0].MinSequenceNum() != 4 || again[0].AddedRows() != 7 || again[0].SnapshotID() != 2 {
		t.Fatalf("read after Normalize: %+v, %v", again, err)
	}
}

func TestNormalizeKeepsMetadataAndNullableUnionsThatHoldNull(t *testing.T) {
	meta := map[string][]byte{"snapshot-id": []byte("7"), "format-version": []byte("2")}
	data := writeList(t, duckDBListSchema, meta, duckDBEntry("file:///wh/a-m0.avro", 2, nil))
	out, changed, err := manifestread.Normalize(data)
	if err != nil || !changed {
		t.Fatalf("Normalize: changed %v, error %v", changed, err)
	}
	rd, err := ocf.NewReader(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range meta {
		if got := string(rd.Metadata()[k]); got != string(v) {
			t.Errorf("metadata %s = %q, want %q", k, got, v)
		}
	}
	schema := string(rd.Metadata()["avro.schema"])
	// partitions held only null: it stays a union; manifest_path never did.
	for _, want := range []string{`"name":"manifest_path","type":{"type":"string"}`, `"name":"partitions","type":["null",`} {
		if !strings.Contains(schema, want) {
			t.Errorf("normalized schema lacks %s: %s", want, schema)
		}
	}
}

func TestNormalizeRefusesNamedReferences(t *testing.T) {
	schema := `{"type":"record","name":"r","fields":[` +
		`{"name":"a","type":["null",{"type":"record","name":"x","fields":[{"name":"v","type":"int"}]}]},` +
		`{"name":"b","type":["null","x"]}]}`
	data := writeList(t, schema, nil, map[string]any{"a": map[string]any{"v": int32(1)}, "b": nil})
	if _, _, err := manifestread.Normalize(data); err == nil || !strings.Contains(err.Error(), `named type reference "x"`) {
		t.Fatalf("Normalize: error %v, want a refused named type reference", err)
	}
}
