package icebergtable

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/internal/manifestread"
)

// ReadSnapshotManifests reads the manifest list of snap through the
// warehouse's file IO: the manifests that make up the table at that
// snapshot. It reads no manifest and no data file.
//
// Decoded lists are kept in the warehouse's cache (MetadataCache), since
// manifest lists never change.
func (w *Warehouse) ReadSnapshotManifests(ctx context.Context, snap *table.Snapshot) ([]iceberg.ManifestFile, error) {
	return w.readSnapshotManifests(ctx, snap, true)
}

// ScanSnapshotManifests is ReadSnapshotManifests for a scan that reads
// every list once, such as the garbage collector's mark: it answers from
// the cache but adds nothing to it, so the scan does not evict what the
// hot tables' commits and merges read.
func (w *Warehouse) ScanSnapshotManifests(ctx context.Context, snap *table.Snapshot) ([]iceberg.ManifestFile, error) {
	return w.readSnapshotManifests(ctx, snap, false)
}

func (w *Warehouse) readSnapshotManifests(ctx context.Context, snap *table.Snapshot, keep bool) ([]iceberg.ManifestFile, error) {
	if mfs, ok := w.cache.manifestList(snap.ManifestList); ok {
		return mfs, nil
	}
	fsys, done, err := w.fileIO(ctx, snap.ManifestList)
	if err != nil {
		return nil, err
	}
	defer done()
	mfs, err := w.readManifestList(ctx, fsys, snap)
	if err != nil {
		return nil, fmt.Errorf("read the manifest list %s of snapshot %d: %w", snap.ManifestList, snap.SnapshotID, err)
	}
	if keep {
		w.cache.addManifestList(snap.ManifestList, mfs)
	}
	return mfs, nil
}

// KeepManifestList adds to the warehouse's cache the decoded manifest
// list mfs of the file at loc, which its writer just wrote (and decoded
// from the bytes it wrote): a list is immutable, so the next reader of the
// snapshot needs no read and no decode.
func (w *Warehouse) KeepManifestList(loc string, mfs []iceberg.ManifestFile) {
	w.cache.addManifestList(loc, mfs)
}

// ReadManifestEntries reads every entry of one manifest, deleted entries
// included (they say which files the manifest's snapshot removed). It
// reads no data file. Decoded entries are kept in the warehouse's cache,
// keyed by the manifest and what its entries inherit from the list.
func (w *Warehouse) ReadManifestEntries(ctx context.Context, mf iceberg.ManifestFile) ([]iceberg.ManifestEntry, error) {
	if entries, ok := w.cache.manifest(mf); ok {
		return entries, nil
	}
	fsys, done, err := w.fileIO(ctx, mf.FilePath())
	if err != nil {
		return nil, err
	}
	defer done()
	entries, err := w.readManifest(ctx, fsys, mf)
	if err != nil {
		return nil, fmt.Errorf("read the manifest %s: %w", mf.FilePath(), err)
	}
	w.cache.addManifest(mf, entries)
	return entries, nil
}

// readManifest reads the entries of mf through manifestread, which also
// reads the delete manifests whose header contradicts their list
// (DuckDB's).
func (w *Warehouse) readManifest(ctx context.Context, fsys iceio.IO, mf iceberg.ManifestFile) ([]iceberg.ManifestEntry, error) {
	data, err := w.readAll(ctx, fsys, mf.FilePath())
	if err != nil {
		return nil, err
	}
	return manifestread.ReadManifest(mf, data, false)
}

// readManifestList reads the manifest list of snap through manifestread,
// which also reads the lists of writers whose Avro schema iceberg-go's
// reader refuses (DuckDB's); a v1 snapshot without a list names its
// manifests itself.
func (w *Warehouse) readManifestList(ctx context.Context, fsys iceio.IO, snap *table.Snapshot) ([]iceberg.ManifestFile, error) {
	if snap.ManifestList == "" {
		return snap.Manifests(fsys)
	}
	data, err := w.readAll(ctx, fsys, snap.ManifestList)
	if err != nil {
		return nil, err
	}
	return manifestread.ReadList(data)
}

// readAll reads the file at loc whole, at most the warehouse's read bound
// (MaxMetadataFileBytes), as every other metadata read: a manifest is
// decoded from memory, and a file of unbounded size must never be.
func (w *Warehouse) readAll(ctx context.Context, fsys iceio.IO, loc string) (_ []byte, err error) {
	f, err := fsys.Open(loc)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	return readBounded(ctx, f, w.maxRead)
}
