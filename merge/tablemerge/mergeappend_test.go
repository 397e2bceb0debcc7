package tablemerge_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/merge/tablemerge"
)

// mergeAppend stages on base what Iceberg Java's merge-append (the
// default for Spark appends, commit.manifest-merge.enabled) commits for
// the files of with's last snapshot: one new manifest holding those files
// as ADDED entries and every file of base's manifests as EXISTING
// entries, and a manifest list of that manifest alone. carry drops the
// files it returns false for from the EXISTING entries (a broken writer).
func (f *fixture) mergeAppend(base, with *table.Table, carry func(path string) bool) table.Snapshot {
	f.t.Helper()
	ctx := f.t.Context()
	fs, err := iceio.LoadFS(ctx, nil, base.Location())
	if err != nil {
		f.t.Fatal(err)
	}
	meta := base.Metadata()
	id := with.CurrentSnapshot().SnapshotID + 1
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(meta.Version(), &buf, meta.PartitionSpec(), meta.CurrentSchema(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	// The new files, as their writer wrote them (inheriting sequence
	// numbers), from the manifest with's snapshot added.
	withManifests, err := with.CurrentSnapshot().Manifests(fs)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, m := range withManifests {
		if m.SnapshotID() != with.CurrentSnapshot().SnapshotID {
			continue
		}
		raw := iceberg.NewManifestFile(m.Version(), m.FilePath(), m.Length(), m.PartitionSpecID(), m.SnapshotID()).SequenceNum(-1, -1).Build()
		entries, err := raw.FetchEntries(fs, true)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, e := range entries {
			if err := w.Add(e); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	baseManifests, err := base.CurrentSnapshot().Manifests(fs)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, m := range baseManifests {
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, e := range entries {
			if carry(e.DataFile().FilePath()) {
				if err := w.Existing(e); err != nil {
					f.t.Fatal(err)
				}
			}
		}
	}
	loc := fmt.Sprintf("%s/metadata/merged-%d-m0.avro", base.Location(), id)
	mf, err := w.ToManifestFile(loc, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	mf = iceberg.NewManifestFile(mf.Version(), loc, int64(buf.Len()), mf.PartitionSpecID(), id).
		AddedFiles(mf.AddedDataFiles()).ExistingFiles(mf.ExistingDataFiles()).
		AddedRows(mf.AddedRows()).ExistingRows(mf.ExistingRows()).Partitions(mf.Partitions()).SequenceNum(-1, -1).Build()
	if err := f.wh.WriteFile(ctx, loc, buf.Bytes()); err != nil {
		f.t.Fatal(err)
	}
	seq := meta.LastSequenceNumber() + 1
	parent := base.CurrentSnapshot().SnapshotID
	buf.Reset()
	if err := iceberg.WriteManifestList(meta.Version(), &buf, id, &parent, &seq, meta.NextRowID(), []iceberg.ManifestFile{mf}); err != nil {
		f.t.Fatal(err)
	}
	listLoc := fmt.Sprintf("%s/metadata/snap-%d-merged.avro", base.Location(), id)
	if err := f.wh.WriteFile(ctx, listLoc, buf.Bytes()); err != nil {
		f.t.Fatal(err)
	}
	sum := with.CurrentSnapshot().Summary
	snap := table.Snapshot{
		SnapshotID: id, ParentSnapshotID: &parent, SequenceNumber: seq, TimestampMs: with.CurrentSnapshot().TimestampMs,
		ManifestList: listLoc, Summary: sum, SchemaID: with.CurrentSnapshot().SchemaID,
	}
	if meta.Version() >= 3 {
		first, added := meta.NextRowID(), mf.AddedRows()+mf.ExistingRows()
		snap.FirstRowID, snap.AddedRows = &first, &added
	}
	return snap
}

// TestCherryPickMergeAppend: a merge-append's manifest carries the files
// of the manifests it merged as EXISTING entries. Picked onto a head that
// moved on, only its ADDED entries are listed again (in a new manifest):
// a scan returns every row exactly once, the head's too.
func TestCherryPickMergeAppend(t *testing.T) {
	for _, fv := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", fv), func(t *testing.T) {
			f := newFixture(t)
			base := f.appendRows(f.appendRows(f.create(fv), 1, 2), 3)
			head := f.appendRows(base, 10, 11)
			src := f.mergeAppend(base, f.appendRows(base, 20, 21), func(string) bool { return true })

			// The source lineage reads right on its own.
			srcMeta, err := table.MetadataBuilderFromBase(base.Metadata(), base.MetadataLocation())
			if err != nil {
				t.Fatal(err)
			}
			if err := srcMeta.AddSnapshot(&src); err != nil {
				t.Fatal(err)
			}
			if err := srcMeta.SetSnapshotRef(table.MainBranch, src.SnapshotID, table.BranchRef); err != nil {
				t.Fatal(err)
			}
			built, err := srcMeta.Build()
			if err != nil {
				t.Fatal(err)
			}
			if ids, want := f.scanIDs(f.table(built, "src")), []int64{1, 2, 3, 20, 21}; !slices.Equal(ids, want) {
				t.Fatalf("the merge-append's own rows %v, want %v", ids, want)
			}

			res, err := tablemerge.CherryPick(t.Context(), f.wh, tablemerge.Request{
				Head: head.Metadata(), HeadLocation: head.MetadataLocation(),
				Picks: []tablemerge.Pick{{Snapshot: src, Parent: base.CurrentSnapshot()}},
			})
			if err != nil {
				t.Fatalf("cherry-pick of a merge-append: %v", err)
			}
			if len(res.Written) != 2 {
				t.Fatalf("written %v: want the manifest of the added entries and the manifest list", res.Written)
			}
			meta, err := res.Builder.Build()
			if err != nil {
				t.Fatal(err)
			}
			got := f.table(meta, "picked")
			if ids, want := f.scanIDs(got), []int64{1, 2, 3, 10, 11, 20, 21}; !slices.Equal(ids, want) {
				t.Fatalf("rows after picking a merge-append %v, want %v (each once)", ids, want)
			}
			if tr := got.CurrentSnapshot().Summary.Properties["total-records"]; tr != "7" {
				t.Errorf("total-records %s, want 7", tr)
			}
			checkEntries(t, got, got.CurrentSnapshot().SequenceNumber, got.CurrentSnapshot().SnapshotID)
		})
	}
}

// TestCherryPickMergeAppendDroppingFiles: a snapshot that merges its
// parent's manifests away without carrying all their files removed them:
// not an append, refused.
func TestCherryPickMergeAppendDroppingFiles(t *testing.T) {
	f := newFixture(t)
	base := f.appendRows(f.appendRows(f.create(2), 1), 2)
	head := f.appendRows(base, 10)
	dropped := ""
	src := f.mergeAppend(base, f.appendRows(base, 20), func(p string) bool {
		if dropped == "" {
			dropped = p
			return false
		}
		return true
	})
	_, err := tablemerge.CherryPick(t.Context(), f.wh, tablemerge.Request{
		Head: head.Metadata(), HeadLocation: head.MetadataLocation(),
		Picks: []tablemerge.Pick{{Snapshot: src, Parent: base.CurrentSnapshot()}},
	})
	if !errors.Is(err, tablemerge.ErrNotAdditive) {
		t.Fatalf("a merge that drops %s: %v, want ErrNotAdditive", dropped, err)
	}
}
