package tablemerge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/tablemerge"
)

var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "day", Type: iceberg.PrimitiveTypes.String, Required: true},
)

// fixture is one table in a warehouse in a temporary directory, written
// and read by iceberg-go. Commits are staged transactions: the test plays
// the catalog, deciding which lineage each snapshot goes on.
type fixture struct {
	t  *testing.T
	wh *icebergtable.Warehouse
}

func newFixture(t *testing.T) *fixture {
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: "file://" + filepath.ToSlash(t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, wh: wh}
}

// create makes an empty table of format version fv, partitioned by day.
func (f *fixture) create(fv int) *table.Table {
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "day", Transform: iceberg.IdentityTransform{}})
	loc := f.wh.Location() + "/t"
	meta, err := table.NewMetadata(testSchema, &spec, table.UnsortedSortOrder, loc, iceberg.Properties{table.PropertyFormatVersion: strconv.Itoa(fv)})
	if err != nil {
		f.t.Fatal(err)
	}
	return f.table(meta, loc+"/metadata/00000-create.metadata.json")
}

func (f *fixture) table(meta table.Metadata, metaLoc string) *table.Table {
	return table.New(table.Identifier{"ns", "t"}, meta, metaLoc,
		func(ctx context.Context) (iceio.IO, error) { return iceio.LoadFS(ctx, nil, meta.Location()) }, nil)
}

// appendRows stages an append of ids (day "d<id%3>") on tbl and returns
// the table after it.
func (f *fixture) appendRows(tbl *table.Table, ids ...int64) *table.Table {
	f.t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		f.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("d%d", id%3))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.AppendTable(f.t.Context(), at, 1024, nil); err != nil {
		f.t.Fatal(err)
	}
	st, err := tx.StagedTable()
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Table
}

// eachEntry calls fn with every entry of tbl's main and its manifest,
// DELETED entries too unless discardDeleted.
func eachEntry(t *testing.T, tbl *table.Table, discardDeleted bool, fn func(iceberg.ManifestFile, iceberg.ManifestEntry)) {
	t.Helper()
	fs, err := iceio.LoadFS(t.Context(), nil, tbl.Location())
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range manifests {
		entries, err := m.FetchEntries(fs, discardDeleted)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			fn(m, e)
		}
	}
}

// liveEntries returns the live entries of tbl's main, data and deletes.
func liveEntries(t *testing.T, tbl *table.Table) []iceberg.ManifestEntry {
	t.Helper()
	var out []iceberg.ManifestEntry
	eachEntry(t, tbl, true, func(_ iceberg.ManifestFile, e iceberg.ManifestEntry) { out = append(out, e) })
	return out
}

// scanIDs reads every row of tbl's main and returns the ids, sorted.
func (f *fixture) scanIDs(tbl *table.Table) []int64 {
	f.t.Helper()
	at, err := tbl.Scan().ToArrowTable(f.t.Context())
	if err != nil {
		f.t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	var ids []int64
	rdr := array.NewTableReader(at, 0)
	defer rdr.Release()
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0).(*array.Int64)
		for i := range col.Len() {
			ids = append(ids, col.Value(i))
		}
	}
	slices.Sort(ids)
	return ids
}

// pick cherry-picks the snapshot src's main gained over base onto head.
func (f *fixture) pick(head, base, src *table.Table) (*table.Table, *tablemerge.Result) {
	f.t.Helper()
	res, err := tablemerge.CherryPick(f.t.Context(), f.wh, tablemerge.Request{
		Head:         head.Metadata(),
		HeadLocation: head.MetadataLocation(),
		Picks:        []tablemerge.Pick{{Snapshot: *src.CurrentSnapshot(), Parent: base.CurrentSnapshot()}},
		SourceRef:    "etl",
	})
	if err != nil {
		f.t.Fatalf("cherry-pick: %v", err)
	}
	meta, err := res.Builder.Build()
	if err != nil {
		f.t.Fatalf("build: %v", err)
	}
	return f.table(meta, head.MetadataLocation()+".next"), res
}

func TestCherryPickAppendOntoMovedHead(t *testing.T) {
	for _, fv := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", fv), func(t *testing.T) {
			f := newFixture(t)
			base := f.appendRows(f.create(fv), 1, 2)
			head := f.appendRows(base, 10, 11, 12) // main moved on
			src := f.appendRows(base, 20, 21)      // the other lineage
			got, res := f.pick(head, base, src)

			if ids, want := f.scanIDs(got), []int64{1, 2, 10, 11, 12, 20, 21}; !slices.Equal(ids, want) {
				t.Fatalf("rows after cherry-pick %v, want %v", ids, want)
			}
			meta := got.Metadata()
			snap := meta.CurrentSnapshot()
			if len(res.Snapshots) != 1 || snap.SnapshotID != res.Snapshots[0].SnapshotID {
				t.Fatalf("main at %d, picked %v", snap.SnapshotID, res.Snapshots)
			}
			if snap.SnapshotID != src.CurrentSnapshot().SnapshotID {
				t.Fatalf("the pick got id %d, want its own %d (free on the target)", snap.SnapshotID, src.CurrentSnapshot().SnapshotID)
			}
			if *snap.ParentSnapshotID != head.CurrentSnapshot().SnapshotID {
				t.Fatalf("parent %d, want the head %d", *snap.ParentSnapshotID, head.CurrentSnapshot().SnapshotID)
			}
			if snap.SequenceNumber != head.Metadata().LastSequenceNumber()+1 || meta.LastSequenceNumber() != snap.SequenceNumber {
				t.Fatalf("sequence number %d (table %d), head's last %d", snap.SequenceNumber, meta.LastSequenceNumber(), head.Metadata().LastSequenceNumber())
			}
			sum := snap.Summary.Properties
			headFiles, _ := strconv.Atoi(head.CurrentSnapshot().Summary.Properties["total-data-files"])
			addedFiles, _ := strconv.Atoi(sum["added-data-files"])
			for k, want := range map[string]string{
				"added-records": "2", "total-records": "7", "total-data-files": strconv.Itoa(headFiles + addedFiles),
				tablemerge.SummarySourceSnapshotID: strconv.FormatInt(src.CurrentSnapshot().SnapshotID, 10),
				tablemerge.SummarySourceParentID:   strconv.FormatInt(base.CurrentSnapshot().SnapshotID, 10),
				tablemerge.SummarySourceRef:        "etl",
			} {
				if sum[k] != want {
					t.Errorf("summary %s = %q, want %q (%v)", k, sum[k], want, sum)
				}
			}
			if snap.Summary.Operation != table.OpAppend {
				t.Errorf("operation %s", snap.Summary.Operation)
			}
			checkEntries(t, got, snap.SequenceNumber, src.CurrentSnapshot().SnapshotID)
			if fv == 3 {
				if *snap.FirstRowID != head.Metadata().NextRowID() || *snap.AddedRows != 2 || meta.NextRowID() != head.Metadata().NextRowID()+2 {
					t.Fatalf("row lineage: first-row-id %d added %d next %d; head next %d", *snap.FirstRowID, *snap.AddedRows, meta.NextRowID(), head.Metadata().NextRowID())
				}
			}
		})
	}
}

// checkEntries reads the current snapshot's manifests back: the picked
// files carry the new sequence number, the head's keep theirs, and (v3)
// row ids do not overlap.
func checkEntries(t *testing.T, tbl *table.Table, seq, pickedID int64) {
	t.Helper()
	type span struct{ first, n int64 }
	var spans []span
	picked := 0
	eachEntry(t, tbl, false, func(m iceberg.ManifestFile, e iceberg.ManifestEntry) {
		if m.SnapshotID() == tbl.CurrentSnapshot().SnapshotID {
			picked++
			if e.SequenceNum() != seq || m.SequenceNum() != seq {
				t.Errorf("picked file %s: data sequence number %d, manifest %d, want %d", e.DataFile().FilePath(), e.SequenceNum(), m.SequenceNum(), seq)
			}
			if e.SnapshotID() != pickedID {
				t.Errorf("picked file %s: snapshot %d", e.DataFile().FilePath(), e.SnapshotID())
			}
		} else if e.SequenceNum() >= seq {
			t.Errorf("head file %s: sequence number %d, not older than the pick's %d", e.DataFile().FilePath(), e.SequenceNum(), seq)
		}
		if tbl.Metadata().Version() >= 3 {
			if e.DataFile().FirstRowID() == nil {
				t.Fatalf("v3 file %s has no first row id", e.DataFile().FilePath())
			}
			spans = append(spans, span{*e.DataFile().FirstRowID(), e.DataFile().Count()})
		}
	})
	if picked == 0 {
		t.Fatal("no manifest of the picked snapshot is listed")
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.first - b.first) })
	for i := 1; i < len(spans); i++ {
		if spans[i].first < spans[i-1].first+spans[i-1].n {
			t.Fatalf("row ids overlap: %v", spans)
		}
	}
	if n := len(spans); n > 0 && spans[n-1].first+spans[n-1].n > tbl.Metadata().NextRowID() {
		t.Fatalf("row ids %v reach past next-row-id %d", spans, tbl.Metadata().NextRowID())
	}
}

// TestCherryPickChain picks two snapshots of a lineage in order.
func TestCherryPickChain(t *testing.T) {
	f := newFixture(t)
	base := f.appendRows(f.create(3), 1)
	head := f.appendRows(base, 2)
	s1 := f.appendRows(base, 3)
	s2 := f.appendRows(s1, 4, 5)
	res, err := tablemerge.CherryPick(t.Context(), f.wh, tablemerge.Request{
		Head: head.Metadata(), HeadLocation: head.MetadataLocation(),
		Picks: []tablemerge.Pick{
			{Snapshot: *s1.CurrentSnapshot(), Parent: base.CurrentSnapshot()},
			{Snapshot: *s2.CurrentSnapshot(), Parent: s1.CurrentSnapshot()},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	meta, err := res.Builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	got := f.table(meta, "x")
	if ids, want := f.scanIDs(got), []int64{1, 2, 3, 4, 5}; !slices.Equal(ids, want) {
		t.Fatalf("rows %v, want %v", ids, want)
	}
	if res.Snapshots[1].SequenceNumber != res.Snapshots[0].SequenceNumber+1 || *res.Snapshots[1].ParentSnapshotID != res.Snapshots[0].SnapshotID {
		t.Fatalf("chain %+v", res.Snapshots)
	}
	if tr := res.Snapshots[1].Summary.Properties["total-records"]; tr != "5" {
		t.Fatalf("total-records %s, want 5", tr)
	}
	checkEntries(t, got, res.Snapshots[1].SequenceNumber, s2.CurrentSnapshot().SnapshotID)
}

// TestCherryPickRefuses: a pick that is already on the target, or that
// did more than add files, is refused.
func TestCherryPickRefuses(t *testing.T) {
	f := newFixture(t)
	base := f.appendRows(f.create(2), 1)
	head := f.appendRows(base, 2)
	src := f.appendRows(base, 3)
	got, _ := f.pick(head, base, src)

	// The same pick again onto its result: its manifests are there.
	_, err := tablemerge.CherryPick(t.Context(), f.wh, tablemerge.Request{
		Head: got.Metadata(), HeadLocation: got.MetadataLocation(),
		Picks: []tablemerge.Pick{{Snapshot: *src.CurrentSnapshot(), Parent: base.CurrentSnapshot()}},
	})
	if !errors.Is(err, tablemerge.ErrAlreadyPublished) {
		t.Fatalf("picking twice: %v, want ErrAlreadyPublished", err)
	}

	// A copy of the target's own head snapshot (it names it in
	// floe.merge.source-snapshot-id, under an id of its own): the same
	// change, published already.
	copied := *src.CurrentSnapshot()
	copied.SnapshotID = head.CurrentSnapshot().SnapshotID + 1
	copied.Summary = &table.Summary{Operation: copied.Summary.Operation, Properties: maps.Clone(copied.Summary.Properties)}
	copied.Summary.Properties[tablemerge.SummarySourceSnapshotID] = strconv.FormatInt(head.CurrentSnapshot().SnapshotID, 10)
	_, err = tablemerge.CherryPick(t.Context(), f.wh, tablemerge.Request{
		Head: head.Metadata(), HeadLocation: head.MetadataLocation(),
		Picks: []tablemerge.Pick{{Snapshot: copied, Parent: base.CurrentSnapshot()}},
	})
	if !errors.Is(err, tablemerge.ErrAlreadyPublished) {
		t.Fatalf("picking a copy of the head: %v, want ErrAlreadyPublished", err)
	}

	// An overwrite drops its parent's manifests.
	tx := base.NewTransaction()
	if err := tx.Delete(t.Context(), iceberg.EqualTo(iceberg.Reference("id"), int64(1)), nil); err != nil {
		t.Fatal(err)
	}
	st, err := tx.StagedTable()
	if err != nil {
		t.Fatal(err)
	}
	_, err = tablemerge.CherryPick(t.Context(), f.wh, tablemerge.Request{
		Head: head.Metadata(), HeadLocation: head.MetadataLocation(),
		Picks: []tablemerge.Pick{{Snapshot: *st.CurrentSnapshot(), Parent: base.CurrentSnapshot()}},
	})
	if !errors.Is(err, tablemerge.ErrNotAdditive) {
		t.Fatalf("picking a delete: %v, want ErrNotAdditive", err)
	}
}

// TestCherryPickLongHistory picks onto a head with 1,000 snapshots.
func TestCherryPickLongHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1,000 snapshots")
	}
	f := newFixture(t)
	base := f.appendRows(f.create(3), 0)
	head := base
	const n = 1000
	for i := 1; i < n; i++ {
		head = f.appendRows(head, int64(i))
	}
	src := f.appendRows(base, n, n+1)
	got, _ := f.pick(head, base, src)
	if len(got.Metadata().Snapshots()) != n+1 {
		t.Fatalf("%d snapshots, want %d", len(got.Metadata().Snapshots()), n+1)
	}
	ids := f.scanIDs(got)
	want := make([]int64, n+2)
	for i := range want {
		want[i] = int64(i)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("%d rows, want %d (0..%d once each)", len(ids), len(want), n+1)
	}
	checkEntries(t, got, got.CurrentSnapshot().SequenceNumber, src.CurrentSnapshot().SnapshotID)
}

// TestCherryPickKeepsItsManifestLists: the manifest lists a cherry-pick
// writes are kept in the warehouse's cache as a reader decodes them from
// the file (the next merge onto the head reads them from there).
func TestCherryPickKeepsItsManifestLists(t *testing.T) {
	f := newFixture(t)
	cache := icebergtable.NewMetadataCache(1 << 20)
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: f.wh.Location(), Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	f.wh = wh
	base := f.appendRows(f.create(3), 1)
	head := f.appendRows(base, 2)
	s1 := f.appendRows(base, 3)
	s2 := f.appendRows(s1, 4, 5)
	res, err := tablemerge.CherryPick(t.Context(), wh, tablemerge.Request{
		Head: head.Metadata(), HeadLocation: head.MetadataLocation(),
		Picks: []tablemerge.Pick{
			{Snapshot: *s1.CurrentSnapshot(), Parent: base.CurrentSnapshot()},
			{Snapshot: *s2.CurrentSnapshot(), Parent: s1.CurrentSnapshot()},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	before := cache.Len()
	for _, s := range res.Snapshots {
		kept, err := wh.ReadSnapshotManifests(t.Context(), &s)
		if err != nil {
			t.Fatal(err)
		}
		data, err := wh.ReadFile(t.Context(), s.ManifestList)
		if err != nil {
			t.Fatal(err)
		}
		read, err := iceberg.ReadManifestList(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(kept, read) {
			t.Errorf("snapshot %d: kept list %+v, the file decodes to %+v", s.SnapshotID, kept, read)
		}
	}
	if n := cache.Len(); n != before {
		t.Errorf("reading the cherry-pick's lists added %d cache entries: they were not kept", n-before)
	}
}
