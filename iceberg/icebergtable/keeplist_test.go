package icebergtable_test

import (
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

// TestKeepManifestList: a list its writer kept is read from the cache,
// never from storage (the file here does not exist); without a cache it
// is read, and its absence is an error.
func TestKeepManifestList(t *testing.T) {
	root := "file://" + filepath.ToSlash(t.TempDir())
	loc := root + "/ns/t/metadata/snap-7-0-kept.avro"
	kept := []iceberg.ManifestFile{iceberg.NewManifestFile(2, root+"/ns/t/metadata/m0.avro", 100, 0, 7).Build()}
	snap := &table.Snapshot{SnapshotID: 7, ManifestList: loc}
	for _, cached := range []bool{true, false} {
		cfg := icebergtable.Config{Name: "lake", Location: root}
		if cached {
			cfg.Cache = icebergtable.NewMetadataCache(1 << 20)
		}
		w, err := icebergtable.OpenWarehouse(cfg)
		if err != nil {
			t.Fatal(err)
		}
		w.KeepManifestList(loc, kept)
		mfs, err := w.ReadSnapshotManifests(t.Context(), snap)
		switch {
		case cached && (err != nil || len(mfs) != 1 || mfs[0].FilePath() != kept[0].FilePath()):
			t.Errorf("with a cache: %v, %v; want the kept list", mfs, err)
		case !cached && err == nil:
			t.Errorf("without a cache the missing list was read: %v", mfs)
		}
	}
}
