package tablemerge_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/merge/tablemerge"
)

// overwriteDay stages on tbl an overwrite of partition day with ids.
func (f *fixture) overwriteDay(tbl *table.Table, day string, ids ...int64) *table.Table {
	f.t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		f.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(day)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.OverwriteTable(f.t.Context(), at, 1024, nil, table.WithOverwriteFilter(iceberg.EqualTo(iceberg.Reference("day"), day))); err != nil {
		f.t.Fatal(err)
	}
	st, err := tx.StagedTable()
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Table
}

func inDay(day string) func(iceberg.DataFile) bool {
	return func(df iceberg.DataFile) bool { return df.Partition()[1000] == day }
}

// TestReplayOverwrite replays a partition overwrite onto a head that
// moved on in other partitions: the head's files of the partition that
// were the overwrite's input are removed (their manifest rewritten), the
// overwrite's files added, every other row kept.
func TestReplayOverwrite(t *testing.T) {
	for _, fv := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", fv), func(t *testing.T) {
			f := newFixture(t)
			base := f.appendRows(f.appendRows(f.create(fv), 1, 2, 3), 4, 5, 6)
			head := f.appendRows(base, 10, 11) // d1, d2
			src := f.overwriteDay(base, "d0", 30, 33)
			if ids, want := f.scanIDs(src), []int64{1, 2, 4, 5, 30, 33}; !slices.Equal(ids, want) {
				t.Fatalf("the overwrite's own rows %v, want %v", ids, want)
			}
			res, err := tablemerge.CherryPick(t.Context(), f.wh, tablemerge.Request{
				Head: head.Metadata(), HeadLocation: head.MetadataLocation(),
				Picks: []tablemerge.Pick{{Snapshot: *src.CurrentSnapshot(), Parent: base.CurrentSnapshot(),
					Replay: &tablemerge.Replay{InScope: inDay("d0")}}},
			})
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			meta, err := res.Builder.Build()
			if err != nil {
				t.Fatal(err)
			}
			got := f.table(meta, "replayed")
			if ids, want := f.scanIDs(got), []int64{1, 2, 4, 5, 10, 11, 30, 33}; !slices.Equal(ids, want) {
				t.Fatalf("rows after the replay %v, want %v", ids, want)
			}
			snap := got.CurrentSnapshot()
			sum := snap.Summary.Properties
			for k, want := range map[string]string{
				"added-records": "2", "deleted-records": "2", "total-records": "8", tablemerge.SummaryReplayed: "true",
			} {
				if sum[k] != want {
					t.Errorf("summary %s = %q, want %q (%v)", k, sum[k], want, sum)
				}
			}
			if snap.Summary.Operation != table.OpOverwrite || *snap.ParentSnapshotID != head.CurrentSnapshot().SnapshotID {
				t.Errorf("operation %s, parent %d", snap.Summary.Operation, *snap.ParentSnapshotID)
			}
			if fv == 3 {
				// The rewritten manifest's EXISTING rows keep their row ids
				// and, as the spec's list writer does, still reserve a range.
				if *snap.FirstRowID != head.Metadata().NextRowID() || meta.NextRowID() != *snap.FirstRowID+*snap.AddedRows || *snap.AddedRows < 2 {
					t.Errorf("row lineage: first-row-id %d added-rows %d next-row-id %d; head's next %d",
						*snap.FirstRowID, *snap.AddedRows, meta.NextRowID(), head.Metadata().NextRowID())
				}
				checkRowIDs(t, got)
			}
		})
	}
}

// TestReplayRefusesUnknownFiles: a live file of the partition that was
// not in the overwrite's input (the head appended to it) refuses the
// replay rather than dropping its rows; so does a file the operation
// touched outside its partitions.
func TestReplayRefusesUnknownFiles(t *testing.T) {
	f := newFixture(t)
	base := f.appendRows(f.create(2), 1, 2, 3)
	head := f.appendRows(base, 12) // d0
	src := f.overwriteDay(base, "d0", 30)
	_, err := tablemerge.CherryPick(t.Context(), f.wh, tablemerge.Request{
		Head: head.Metadata(), HeadLocation: head.MetadataLocation(),
		Picks: []tablemerge.Pick{{Snapshot: *src.CurrentSnapshot(), Parent: base.CurrentSnapshot(),
			Replay: &tablemerge.Replay{InScope: inDay("d0")}}},
	})
	if !errors.Is(err, tablemerge.ErrNotReplayable) {
		t.Fatalf("replay over an append to the partition: %v, want ErrNotReplayable", err)
	}
	_, err = tablemerge.CherryPick(t.Context(), f.wh, tablemerge.Request{
		Head: head.Metadata(), HeadLocation: head.MetadataLocation(),
		Picks: []tablemerge.Pick{{Snapshot: *src.CurrentSnapshot(), Parent: base.CurrentSnapshot(),
			Replay: &tablemerge.Replay{InScope: inDay("d1")}}},
	})
	if !errors.Is(err, tablemerge.ErrNotReplayable) {
		t.Fatalf("replay of an overwrite outside its partitions: %v, want ErrNotReplayable", err)
	}
}

// checkRowIDs: the live files' row id ranges do not overlap and lie below
// the table's next-row-id.
func checkRowIDs(t *testing.T, tbl *table.Table) {
	t.Helper()
	type span struct{ first, n int64 }
	var spans []span
	for _, e := range liveEntries(t, tbl) {
		if e.DataFile().FirstRowID() == nil {
			t.Fatalf("v3 file %s has no first row id", e.DataFile().FilePath())
		}
		spans = append(spans, span{*e.DataFile().FirstRowID(), e.DataFile().Count()})
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
