package storebackup

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
	"github.com/floe-catalog/floe/versionstore/storeexport"
)

// BenchmarkExportImport exports a store of 10,000 commits over 200 tables
// and imports it into a new Pebble directory (synced, as in production),
// reporting objects per second and the file's size.
func BenchmarkExportImport(b *testing.B) {
	dir := b.TempDir()
	be, err := pebblebackend.Open(filepath.Join(dir, "src"), pebblebackend.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	s, err := versionstore.Open(b.Context(), be, versionstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	head, _ := s.GetRef("main")
	res, err := s.Commit(b.Context(), versionstore.CommitRequest{Branch: "main", Expected: head.Head, Operations: []versionstore.Operation{{
		Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns"}, Content: &versionstore.Content{Type: versionstore.Namespace}}}})
	if err != nil {
		b.Fatal(err)
	}
	last := res.Commit.Hash
	for i := range 10000 {
		name := fmt.Sprintf("t%03d", i%200)
		res, err := s.Commit(b.Context(), versionstore.CommitRequest{Branch: "main", Expected: last, Operations: []versionstore.Operation{{
			Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns", name}, Content: &versionstore.Content{Type: versionstore.IcebergTable,
				ID: "id-" + name, MetadataLocation: fmt.Sprintf("s3://lake/ns/%s/metadata/%05d.metadata.json", name, i), SnapshotID: int64(i)}}}})
		if err != nil {
			b.Fatal(err)
		}
		last = res.Commit.Hash
	}
	var file bytes.Buffer
	var st *storeexport.Stats
	for i := 0; b.Loop(); i++ {
		file.Reset()
		if st, err = storeexport.Export(b.Context(), be, &file, storeexport.ExportOptions{}); err != nil {
			b.Fatal(err)
		}
		dst, err := pebblebackend.Open(filepath.Join(dir, fmt.Sprintf("dst%d", i)), pebblebackend.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := storeexport.Import(b.Context(), dst, bytes.NewReader(file.Bytes()), storeexport.ImportOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := dst.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Objects), "objects")
	b.ReportMetric(float64(file.Len())/(1<<20), "file-MiB")
	b.ReportMetric(float64(st.Objects)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
}
