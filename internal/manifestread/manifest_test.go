package manifestread_test

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/twmb/avro/ocf"

	"github.com/floe-catalog/floe/internal/manifestread"
)

// duckDBDeleteManifest writes a position-delete manifest with iceberg-go and
// sets its header's content to "data", as DuckDB 1.4 writes its delete
// manifests; it returns the file and the manifest-list entry naming it
// (content deletes, as DuckDB's list says).
func duckDBDeleteManifest(t *testing.T, path string) ([]byte, iceberg.ManifestFile) {
	t.Helper()
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(2, &buf, *iceberg.UnpartitionedSpec, schema, 9, iceberg.WithManifestWriterContent(iceberg.ManifestContentDeletes))
	if err != nil {
		t.Fatal(err)
	}
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, "file:///wh/t/data/d-deletes.parquet", iceberg.ParquetFile, nil, nil, nil, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	snap := int64(9)
	if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &snap, nil, nil, b.Build())); err != nil {
		t.Fatal(err)
	}
	mf, err := w.ToManifestFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Re-encode with the header's content changed, and nothing else.
	rd, err := ocf.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	meta := maps.Clone(rd.Metadata())
	maps.DeleteFunc(meta, func(k string, _ []byte) bool { return strings.HasPrefix(k, "avro.") })
	if string(meta["content"]) != "deletes" {
		t.Fatalf("iceberg-go's delete manifest has content %q", meta["content"])
	}
	meta["content"] = []byte("data")
	var out bytes.Buffer
	ow, err := ocf.NewWriter(&out, rd.Schema(), ocf.WithMetadata(meta))
	if err != nil {
		t.Fatal(err)
	}
	for {
		var v any
		if err := rd.Decode(&v); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if err := ow.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := ow.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), mf
}

func TestReadManifestWithContradictingHeader(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d-m0.avro")
	data, mf := duckDBDeleteManifest(t, "file://"+filepath.ToSlash(path))
	if _, err := iceberg.ReadManifest(mf, bytes.NewReader(data), false); err == nil || !strings.Contains(err.Error(), "'content' metadata") {
		t.Logf("iceberg-go's own reader: %v (the fallback exists for its content check)", err)
	}
	check := func(how string, entries []iceberg.ManifestEntry) {
		t.Helper()
		if len(entries) != 1 || entries[0].DataFile().ContentType() != iceberg.EntryContentPosDeletes ||
			entries[0].DataFile().FilePath() != "file:///wh/t/data/d-deletes.parquet" || entries[0].SnapshotID() != 9 {
			t.Fatalf("%s: entries %+v", how, entries)
		}
	}
	entries, err := manifestread.ReadManifest(mf, data, false)
	if err != nil {
		t.Fatalf("ReadManifest: %v", err)
	}
	check("ReadManifest", entries)

	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	fsys, err := iceio.LoadFS(t.Context(), nil, "file://"+filepath.ToSlash(dir))
	if err != nil {
		t.Fatal(err)
	}
	var streamed []iceberg.ManifestEntry
	for e, err := range manifestread.Entries(fsys, mf, 1<<20) {
		if err != nil {
			t.Fatalf("Entries: %v", err)
		}
		streamed = append(streamed, e)
	}
	check("Entries", streamed)

	// Read whole only within the reader's bound: one byte less fails.
	failed := false
	for _, err := range manifestread.Entries(fsys, mf, int64(len(data)-1)) {
		failed = failed || err != nil
	}
	if !failed {
		t.Fatal("Entries read a refused manifest whole beyond its limit")
	}

	// A manifest that is not there stays an error that says so.
	missing := iceberg.NewManifestFile(2, "file://"+filepath.ToSlash(filepath.Join(dir, "gone.avro")), 10, 0, 9).Build()
	for _, err := range manifestread.Entries(fsys, missing, 1<<20) {
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Entries of a missing manifest: %v, want not-exist", err)
		}
	}
}
