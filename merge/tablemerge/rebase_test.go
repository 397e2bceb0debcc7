package tablemerge_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floe-catalog/floe/merge/tablemerge"
)

// TestChanges: what a lineage changed between two snapshots, by live
// files. The tables are iceberg-go's: an append to d1 and d2, an
// overwrite of d2 (its file removed, a new one added) and an append to
// d1.
func TestChanges(t *testing.T) {
	f := newFixture(t)
	t1 := f.appendRows(f.create(2), 1, 2) // d1: 1, d2: 2
	t2 := f.overwriteDay(t1, "d2", 5)
	t3 := f.appendRows(t2, 4)
	days := func(fs []iceberg.DataFile) []any {
		var out []any
		for _, df := range fs {
			out = append(out, df.Partition()[1000])
		}
		return out
	}
	paths := func(fs []iceberg.DataFile) []string {
		var out []string
		for _, df := range fs {
			out = append(out, df.FilePath())
		}
		return out
	}

	first, err := tablemerge.Changes(t.Context(), f.wh, nil, t1.CurrentSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Added) != 2 || len(first.Removed) != 0 || len(first.Deleted) != 0 {
		t.Fatalf("from no snapshot: added %v, removed %v, deleted %v", paths(first.Added), paths(first.Removed), first.Deleted)
	}

	ow, err := tablemerge.Changes(t.Context(), f.wh, t1.CurrentSnapshot(), t2.CurrentSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if got := days(ow.Added); !slices.Equal(got, []any{"d2"}) {
		t.Fatalf("the overwrite added files of %v", got)
	}
	if got := days(ow.Removed); !slices.Equal(got, []any{"d2"}) {
		t.Fatalf("the overwrite removed files of %v", got)
	}
	if got := slices.Sorted(maps.Keys(ow.Deleted)); !slices.Equal(got, paths(ow.Removed)) {
		t.Fatalf("the overwrite records %v as deleted, removed %v", got, paths(ow.Removed))
	}

	// Over two snapshots: both the overwrite's and the append's files;
	// Deleted is only what the last snapshot itself recorded (nothing).
	both, err := tablemerge.Changes(t.Context(), f.wh, t1.CurrentSnapshot(), t3.CurrentSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if got := days(both.Added); len(got) != 2 || !slices.Contains(got, "d1") || !slices.Contains(got, "d2") {
		t.Fatalf("since t1: added files of %v, want d1 and d2", got)
	}
	if !slices.Equal(paths(both.Removed), paths(ow.Removed)) || len(both.Deleted) != 0 {
		t.Fatalf("since t1: removed %v (want %v), deleted %v", paths(both.Removed), paths(ow.Removed), both.Deleted)
	}
	if !slices.IsSortedFunc(both.Added, func(a, b iceberg.DataFile) int {
		if a.FilePath() < b.FilePath() {
			return -1
		}
		return 1
	}) {
		t.Fatalf("added not sorted by path: %v", paths(both.Added))
	}

	same, err := tablemerge.Changes(t.Context(), f.wh, t3.CurrentSnapshot(), t3.CurrentSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if len(same.Added)+len(same.Removed)+len(same.Deleted) != 0 {
		t.Fatalf("a snapshot against itself: %+v", same)
	}
}
