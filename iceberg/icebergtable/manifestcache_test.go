package icebergtable_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
)

// writeManifest writes a v2 data manifest of ADDED entries without
// sequence numbers (they inherit the listing manifest's) to dir and
// returns its location and length.
func writeManifest(t *testing.T, dir string, snapshotID int64, paths ...string) (string, int64) {
	t.Helper()
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(2, &buf, *iceberg.UnpartitionedSpec, schema, snapshotID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, p, iceberg.ParquetFile, nil, nil, nil, 10, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &snapshotID, nil, nil, b.Build())); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "m-1.avro")
	if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + filepath.ToSlash(name), int64(buf.Len())
}

// TestManifestEntriesCachedPerListing: a manifest's entries are read once
// and served from the cache after, but the same file listed with another
// sequence number (as a cherry-pick lists a source branch's manifest)
// decodes to entries that inherit that number, not the first listing's;
// and what a caller does to the slice it gets never reaches the cache.
func TestManifestEntriesCachedPerListing(t *testing.T) {
	wh, cache, dir := localWarehouse(t)
	ctx := t.Context()
	loc, length := writeManifest(t, dir, 7, "file:///w/a.parquet", "file:///w/b.parquet")
	listed := func(seq int64) iceberg.ManifestFile {
		return iceberg.NewManifestFile(2, loc, length, 0, 7).SequenceNum(seq, seq).AddedFiles(2).Build()
	}
	first, err := wh.ReadManifestEntries(ctx, listed(3))
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || first[0].SequenceNum() != 3 {
		t.Fatalf("read %d entries, first of sequence number %d; want 2 of 3", len(first), first[0].SequenceNum())
	}
	cached := cache.Len()
	if err := os.Remove(filepath.Join(dir, "m-1.avro")); err != nil {
		t.Fatal(err)
	}
	again, err := wh.ReadManifestEntries(ctx, listed(3))
	if err != nil {
		t.Fatalf("the second read of the same listing went to storage: %v", err)
	}
	if len(again) != 2 || again[1].DataFile().FilePath() != "file:///w/b.parquet" {
		t.Fatalf("cached entries differ: %d", len(again))
	}
	first[0] = nil // the caller's slice is its own
	if third, _ := wh.ReadManifestEntries(ctx, listed(3)); len(third) != 2 || third[0] == nil {
		t.Fatal("a caller's change to its slice reached the cache")
	}
	if _, err := wh.ReadManifestEntries(ctx, listed(9)); err == nil {
		t.Fatal("the file listed under another sequence number was answered from the first listing's entries")
	}
	if cache.Len() != cached {
		t.Fatalf("cache holds %d entries, want %d", cache.Len(), cached)
	}
}
