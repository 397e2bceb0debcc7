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

// pinnedAppend stages on base an append of with's new files the way
// DuckDB's Iceberg extension (1.4) writes one: its manifest's ADDED
// entries spell out their snapshot id and sequence numbers (pinned)
// instead of leaving them to be inherited from the manifest list. pinned
// is the data sequence number written into the entries; the snapshot's own
// is base's last plus one.
func (f *fixture) pinnedAppend(base, with *table.Table, pinned func(seq int64) int64) table.Snapshot {
	f.t.Helper()
	ctx := f.t.Context()
	fs, err := iceio.LoadFS(ctx, nil, base.Location())
	if err != nil {
		f.t.Fatal(err)
	}
	meta := base.Metadata()
	id := with.CurrentSnapshot().SnapshotID + 1
	seq := meta.LastSequenceNumber() + 1
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(meta.Version(), &buf, meta.PartitionSpec(), meta.CurrentSchema(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	withManifests, err := with.CurrentSnapshot().Manifests(fs)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, m := range withManifests {
		if m.SnapshotID() != with.CurrentSnapshot().SnapshotID {
			continue
		}
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, e := range entries {
			s, fileSeq := pinned(seq), pinned(seq)
			if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &id, &s, &fileSeq, e.DataFile())); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	loc := fmt.Sprintf("%s/metadata/pinned-%d-m0.avro", base.Location(), id)
	mf, err := w.ToManifestFile(loc, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	mf = iceberg.NewManifestFile(mf.Version(), loc, int64(buf.Len()), mf.PartitionSpecID(), id).
		AddedFiles(mf.AddedDataFiles()).AddedRows(mf.AddedRows()).Partitions(mf.Partitions()).SequenceNum(-1, -1).Build()
	if err := f.wh.WriteFile(ctx, loc, buf.Bytes()); err != nil {
		f.t.Fatal(err)
	}
	parent := base.CurrentSnapshot().SnapshotID
	var list []iceberg.ManifestFile
	baseManifests, err := base.CurrentSnapshot().Manifests(fs)
	if err != nil {
		f.t.Fatal(err)
	}
	list = append(list, mf)
	list = append(list, baseManifests...)
	buf.Reset()
	if err := iceberg.WriteManifestList(meta.Version(), &buf, id, &parent, &seq, meta.NextRowID(), list); err != nil {
		f.t.Fatal(err)
	}
	listLoc := fmt.Sprintf("%s/metadata/snap-%d-pinned.avro", base.Location(), id)
	if err := f.wh.WriteFile(ctx, listLoc, buf.Bytes()); err != nil {
		f.t.Fatal(err)
	}
	return table.Snapshot{
		SnapshotID: id, ParentSnapshotID: &parent, SequenceNumber: seq, TimestampMs: with.CurrentSnapshot().TimestampMs,
		ManifestList: listLoc, Summary: with.CurrentSnapshot().Summary, SchemaID: with.CurrentSnapshot().SchemaID,
	}
}

// TestCherryPickPinnedSequenceNumbers: an append whose entries pin the
// sequence numbers they would inherit (DuckDB's) is picked onto a head
// that moved on, its entries written anew so they take the pick's sequence
// number; one that pins another number stays refused, since dropping it
// would change which deletes apply to its files.
func TestCherryPickPinnedSequenceNumbers(t *testing.T) {
	f := newFixture(t)
	base := f.appendRows(f.create(2), 1, 2)
	head := f.appendRows(base, 10, 11)
	src := f.pinnedAppend(base, f.appendRows(base, 20, 21), func(seq int64) int64 { return seq })

	res, err := tablemerge.CherryPick(t.Context(), f.wh, tablemerge.Request{
		Head: head.Metadata(), HeadLocation: head.MetadataLocation(),
		Picks:     []tablemerge.Pick{{Snapshot: src, Parent: base.CurrentSnapshot()}},
		SourceRef: "duckdev",
	})
	if err != nil {
		t.Fatalf("cherry-pick of a pinned append: %v", err)
	}
	if len(res.Written) == 0 {
		t.Fatal("cherry-pick re-listed the pinned manifest instead of writing its entries anew")
	}
	meta, err := res.Builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	picked := f.table(meta, head.MetadataLocation()+".next")
	if got, want := f.scanIDs(picked), []int64{1, 2, 10, 11, 20, 21}; !slices.Equal(got, want) {
		t.Fatalf("rows after the pick: %v, want %v", got, want)
	}
	checkEntries(t, picked, head.Metadata().LastSequenceNumber()+1, picked.CurrentSnapshot().SnapshotID)

	older := f.pinnedAppend(base, f.appendRows(base, 30), func(seq int64) int64 { return seq - 1 })
	_, err = tablemerge.CherryPick(t.Context(), f.wh, tablemerge.Request{
		Head: head.Metadata(), HeadLocation: head.MetadataLocation(),
		Picks:     []tablemerge.Pick{{Snapshot: older, Parent: base.CurrentSnapshot()}},
		SourceRef: "duckdev",
	})
	if !errors.Is(err, tablemerge.ErrUnsupported) {
		t.Fatalf("cherry-pick of entries pinning an older sequence number: %v, want ErrUnsupported", err)
	}
}
