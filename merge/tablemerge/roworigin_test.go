package tablemerge_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/merge/tablemerge"
)

// liveFirstRowIDs returns each live data file of tbl's main with its first
// row id.
func liveFirstRowIDs(t *testing.T, tbl *table.Table) map[string]int64 {
	out := map[string]int64{}
	for _, e := range liveEntries(t, tbl) {
		if e.DataFile().ContentType() == iceberg.EntryContentData {
			out[e.DataFile().FilePath()] = *e.DataFile().FirstRowID()
		}
	}
	return out
}

// TestRowOrigins: an id is followed back to the data file it was handed
// to, in the history of the branch that handed it out, and that file's
// rows have other ids on a branch that listed it with its own first row
// ids; ids never handed out, and v2 tables, have no origin.
func TestRowOrigins(t *testing.T) {
	f := newFixture(t)
	base := f.appendRows(f.create(3), 1, 2, 3) // ids 0-2, one file per day
	src := f.appendRows(base, 4, 5, 6)         // the branch's ids 3-5
	tgt := f.appendRows(base, 7)               // main's id 3
	merged, _ := f.pick(tgt, base, src)        // the branch's files get 4-6 on main

	srcFiles := liveFirstRowIDs(t, src)
	mergedFiles := liveFirstRowIDs(t, merged)
	ids := []int64{0, 1, 2, 3, 4, 5, 6, 99}
	file, first, err := tablemerge.RowOrigins(context.Background(), f.wh, src.Metadata(), ids)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(file)), []int64{0, 1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("placed ids %v, want %v (6 and 99 were never handed out on the branch)", got, want)
	}
	moved := 0
	for id, path := range file {
		at, ok := srcFiles[path]
		if !ok || at != first[id] || id < at || id >= at+1 {
			t.Errorf("id %d placed in %s (first row id %d), which the branch lists with first row id %d (listed: %v)", id, path, first[id], at, ok)
		}
		onMain, ok := mergedFiles[path]
		if !ok {
			t.Errorf("id %d's file %s is not on main after the merge", id, path)
			continue
		}
		if id >= 3 {
			// The branch's new rows: main listed their files with its own ids.
			if onMain == at {
				t.Errorf("file %s of the branch's id %d has first row id %d on main too; want main's own", path, id, at)
			}
			moved++
		} else if onMain != at {
			t.Errorf("file %s from the branch point has first row id %d on main, %d on the branch", path, onMain, at)
		}
	}
	if moved != 3 {
		t.Errorf("%d of the branch's rows placed in files main lists under other ids, want 3", moved)
	}

	v2 := f.appendRows(f.create(2), 1, 2)
	if file, _, err := tablemerge.RowOrigins(context.Background(), f.wh, v2.Metadata(), []int64{0, 1}); err != nil || len(file) != 0 {
		t.Fatalf("v2 table: origins %v, %v; want none", file, err)
	}
}
