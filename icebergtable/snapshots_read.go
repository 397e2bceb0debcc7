package icebergtable

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ReadSnapshotManifests reads the manifest list of snap through the
// warehouse's file IO: the manifests that make up the table at that
// snapshot. It reads no manifest and no data file.
func (w *Warehouse) ReadSnapshotManifests(ctx context.Context, snap *table.Snapshot) ([]iceberg.ManifestFile, error) {
	fsys, done, err := w.fileIO(ctx, snap.ManifestList)
	if err != nil {
		return nil, err
	}
	defer done()
	mfs, err := snap.Manifests(fsys)
	if err != nil {
		return nil, fmt.Errorf("read the manifest list %s of snapshot %d: %w", snap.ManifestList, snap.SnapshotID, err)
	}
	return mfs, nil
}

// ReadManifestEntries reads every entry of one manifest, deleted entries
// included (they say which files the manifest's snapshot removed). It
// reads no data file.
func (w *Warehouse) ReadManifestEntries(ctx context.Context, mf iceberg.ManifestFile) ([]iceberg.ManifestEntry, error) {
	fsys, done, err := w.fileIO(ctx, mf.FilePath())
	if err != nil {
		return nil, err
	}
	defer done()
	entries, err := mf.FetchEntries(fsys, false)
	if err != nil {
		return nil, fmt.Errorf("read the manifest %s: %w", mf.FilePath(), err)
	}
	return entries, nil
}
