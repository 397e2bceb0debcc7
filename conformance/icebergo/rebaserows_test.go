package icebergo

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Zero-retry row-level commits: floe rebases a stale copy-on-write or
// merge-on-read delete or overwrite onto the table's new head when it does
// not really conflict (rest/icebergrest/rebaserows.go). The tables are
// partitioned by region, the "day" of the seed's story: d1 and d2. Every
// stale commit below is iceberg-go's own, made on a table object loaded
// before another writer committed; iceberg-go retries nothing by default,
// so a 409 reaches the test.

var byRegion = iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})

// rowLevelTable creates a table partitioned by region holding rows 1 (d1),
// 2 and 3 (one file of d2), with the given properties on top of the
// format version.
func rowLevelTable(t *testing.T, f *floeServer, name, formatVersion string, props iceberg.Properties) *table.Table {
	t.Helper()
	cat := f.catalog(t, "lake")
	if _, err := cat.LoadNamespaceProperties(t.Context(), catalog.ToIdentifier("ns")); err != nil {
		if err := cat.CreateNamespace(t.Context(), catalog.ToIdentifier("ns"), nil); err != nil {
			t.Fatal(err)
		}
	}
	all := iceberg.Properties{table.PropertyFormatVersion: formatVersion}
	for k, v := range props {
		all[k] = v
	}
	tbl := createTable(t, cat, catalog.ToIdentifier("ns", name), catalog.WithPartitionSpec(&byRegion), catalog.WithProperties(all))
	return appendRows(t, tbl, []row{{1, "d1", 1}, {2, "d2", 2}, {3, "d2", 3}})
}

func deleteRows(t *testing.T, tbl *table.Table, filter iceberg.BooleanExpression) (*table.Table, error) {
	t.Helper()
	tx := tbl.NewTransaction()
	if err := tx.Delete(t.Context(), filter, nil); err != nil {
		t.Fatalf("stage delete on %v: %v", tbl.Identifier(), err)
	}
	return tx.Commit(t.Context())
}

func idIs(id int64) iceberg.BooleanExpression { return iceberg.EqualTo(iceberg.Reference("id"), id) }

// commitOutcomes sums floe_iceberg_commits_total by outcome over every
// row-level operation.
func commitOutcomes(t *testing.T, f *floeServer) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for k, v := range f.metrics(t) {
		if !strings.HasPrefix(k, "floe_iceberg_commits_total{") {
			continue
		}
		for _, op := range []string{"overwrite", "delete", "replace"} {
			if strings.Contains(k, `operation="`+op+`"`) {
				for _, oc := range []string{"ok", "rebased", "conflict"} {
					if strings.Contains(k, `outcome="`+oc+`"`) {
						out[oc] += v
					}
				}
			}
		}
	}
	return out
}

func currentRows(t *testing.T, f *floeServer, name string) []row {
	t.Helper()
	tbl, err := f.catalog(t, "lake").LoadTable(t.Context(), catalog.ToIdentifier("ns", name))
	if err != nil {
		t.Fatal(err)
	}
	return scanRows(t, tbl, "")
}

// TestZeroRetryRowLevel: a delete and an overwrite of d2, each made on a
// main that an append to d1 has since moved, land at their first attempt
// (format v2 and v3, copy-on-write and merge-on-read deletes, Iceberg's
// default serializable isolation), and the rows read back are both
// writers'. On v3 the rebased snapshot takes its row ids from the head.
func TestZeroRetryRowLevel(t *testing.T) {
	t.Parallel()
	for _, fv := range []string{"2", "3"} {
		for _, mode := range []string{table.WriteModeCopyOnWrite, table.WriteModeMergeOnRead} {
			t.Run("v"+fv+"/"+mode, func(t *testing.T) {
				f := startFloe(t)
				tbl := rowLevelTable(t, f, "t", fv, iceberg.Properties{table.WriteDeleteModeKey: mode})
				stale := tbl
				tbl = appendRows(t, tbl, []row{{4, "d1", 4}}) // main moved: stale is stale
				before := commitOutcomes(t, f)
				if _, err := deleteRows(t, stale, idIs(2)); err != nil {
					t.Fatalf("stale delete of a d2 row after an append to d1: %v", err)
				}
				rowsEqual(t, currentRows(t, f, "t"), []row{{1, "d1", 1}, {3, "d2", 3}, {4, "d1", 4}})

				// An overwrite of d2 (copy-on-write: its file is replaced),
				// stale behind another append to d1.
				cur, err := f.catalog(t, "lake").LoadTable(t.Context(), catalog.ToIdentifier("ns", "t"))
				if err != nil {
					t.Fatal(err)
				}
				appendRows(t, cur, []row{{5, "d1", 5}})
				at := arrowTable(t, cur, []row{{6, "d2", 6}})
				defer at.Release()
				if _, err := cur.OverwriteTable(t.Context(), at, 1024, nil,
					table.WithOverwriteFilter(iceberg.EqualTo(iceberg.Reference("region"), "d2"))); err != nil {
					t.Fatalf("stale overwrite of d2 after an append to d1: %v", err)
				}
				final, err := f.catalog(t, "lake").LoadTable(t.Context(), catalog.ToIdentifier("ns", "t"))
				if err != nil {
					t.Fatal(err)
				}
				rowsEqual(t, scanRows(t, final, ""), []row{{1, "d1", 1}, {4, "d1", 4}, {5, "d1", 5}, {6, "d2", 6}})

				after := commitOutcomes(t, f)
				if got := after["rebased"] - before["rebased"]; got != 2 {
					t.Errorf("%v row-level commits counted rebased, want 2 (before %v, after %v)", got, before, after)
				}
				if after["conflict"] != 0 {
					t.Errorf("row-level conflicts counted: %v", after)
				}
				meta := final.Metadata()
				// Rebased as the appends are: the snapshot names itself as
				// its source on main, and is not marked a replayed record.
				sum := meta.CurrentSnapshot().Summary.Properties
				if sum["floe.merge.source-ref"] != "main" || sum["floe.merge.replayed"] != "" {
					t.Errorf("rebased overwrite's summary %v", sum)
				}
				var seqs []int64
				for s := meta.CurrentSnapshot(); s != nil; {
					seqs = append(seqs, s.SequenceNumber)
					if s.ParentSnapshotID == nil {
						break
					}
					s = meta.SnapshotByID(*s.ParentSnapshotID)
				}
				for i := 1; i < len(seqs); i++ {
					if seqs[i] >= seqs[i-1] {
						t.Errorf("main's sequence numbers, newest first: %v, want decreasing", seqs)
					}
				}
				if fv == "3" {
					checkRowLineage(t, meta)
				}
			})
		}
	}
}

// checkRowLineage: on v3 every snapshot of main takes its first row id
// where its parent's range ended, and the table's next-row-id is past the
// last: the rebased snapshots were given row ids on the head, not kept
// from the base they were made on.
func checkRowLineage(t *testing.T, meta table.Metadata) {
	t.Helper()
	var chain []*table.Snapshot
	for s := meta.CurrentSnapshot(); s != nil; {
		chain = append([]*table.Snapshot{s}, chain...)
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	next := int64(0)
	for _, s := range chain {
		if s.FirstRowID == nil || s.AddedRows == nil {
			t.Fatalf("v3 snapshot %d without row lineage", s.SnapshotID)
		}
		if *s.FirstRowID != next {
			t.Errorf("snapshot %d first-row-id %d, want %d", s.SnapshotID, *s.FirstRowID, next)
		}
		next = *s.FirstRowID + *s.AddedRows
	}
	if meta.NextRowID() != next {
		t.Errorf("next-row-id %d, want %d", meta.NextRowID(), next)
	}
}

// TestRowLevelRebaseConflicts: a stale row-level commit that really
// conflicts with what main gained since still fails with
// CommitFailedException (409), changes nothing, and is counted as a
// conflict, never as rebased.
func TestRowLevelRebaseConflicts(t *testing.T) {
	t.Parallel()
	snapshotIso := iceberg.Properties{"write.delete.isolation-level": "snapshot"}
	for _, tc := range []struct {
		name  string
		fv    string
		props iceberg.Properties
		// head is what another writer commits after the stale load.
		head func(t *testing.T, tbl *table.Table)
		// stale is the stale writer's commit of id 3's deletion.
		want []row // rows after both (nil: the stale commit must fail)
	}{
		{name: "file removed meanwhile/copy-on-write", fv: "2",
			head: func(t *testing.T, tbl *table.Table) {
				mustDelete(t, tbl, iceberg.EqualTo(iceberg.Reference("region"), "d2"))
			}},
		{name: "file removed meanwhile/merge-on-read", fv: "2", props: iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead},
			head: func(t *testing.T, tbl *table.Table) {
				mustDelete(t, tbl, iceberg.EqualTo(iceberg.Reference("region"), "d2"))
			}},
		{name: "serializable/append to the same partition", fv: "2",
			head: func(t *testing.T, tbl *table.Table) { appendRows(t, tbl, []row{{7, "d2", 7}}) }},
		// Under snapshot isolation a new file in the partition does not
		// matter: the delete lands and the new row stays.
		{name: "snapshot/append to the same partition", fv: "2", props: snapshotIso,
			head: func(t *testing.T, tbl *table.Table) { appendRows(t, tbl, []row{{7, "d2", 7}}) },
			want: []row{{1, "d1", 1}, {2, "d2", 2}, {7, "d2", 7}}},
		{name: "snapshot/merge-on-read/append to the same partition", fv: "2",
			props: iceberg.Properties{"write.delete.isolation-level": "snapshot", table.WriteDeleteModeKey: table.WriteModeMergeOnRead},
			head:  func(t *testing.T, tbl *table.Table) { appendRows(t, tbl, []row{{7, "d2", 7}}) },
			want:  []row{{1, "d1", 1}, {2, "d2", 2}, {7, "d2", 7}}},
		// Copy-on-write: the rewrite of d2's file would bring the head's
		// deleted row back.
		{name: "snapshot/copy-on-write/same file deleted on both sides", fv: "2", props: snapshotIso,
			head: func(t *testing.T, tbl *table.Table) { mustDelete(t, tbl, idIs(2)) }},
		// ... and deletes of rows of one file on both sides are (a row
		// may have been changed on both): the files touched on both sides.
		{name: "snapshot/merge-on-read/same file deleted on both sides", fv: "2", props: iceberg.Properties{
			"write.delete.isolation-level": "snapshot", table.WriteDeleteModeKey: table.WriteModeMergeOnRead},
			head: func(t *testing.T, tbl *table.Table) { mustDelete(t, tbl, idIs(2)) }},
		// v3: the head gave d2's file a deletion vector; the stale commit's
		// own deletion vector for the same file is a real conflict (a data
		// file has at most one).
		{name: "v3/snapshot/deletion vectors for one file", fv: "3", props: iceberg.Properties{
			"write.delete.isolation-level": "snapshot", table.WriteDeleteModeKey: table.WriteModeMergeOnRead},
			head: func(t *testing.T, tbl *table.Table) { mustDelete(t, tbl, idIs(2)) }},
		{name: "v3/serializable/append to the same partition", fv: "3", props: iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead},
			head: func(t *testing.T, tbl *table.Table) { appendRows(t, tbl, []row{{7, "d2", 7}}) }},
		{name: "v3/snapshot/append to the same partition", fv: "3", props: iceberg.Properties{
			"write.delete.isolation-level": "snapshot", table.WriteDeleteModeKey: table.WriteModeMergeOnRead},
			head: func(t *testing.T, tbl *table.Table) { appendRows(t, tbl, []row{{7, "d2", 7}}) },
			want: []row{{1, "d1", 1}, {2, "d2", 2}, {7, "d2", 7}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFloe(t)
			stale := rowLevelTable(t, f, "t", tc.fv, tc.props)
			tc.head(t, stale)
			headRows := currentRows(t, f, "t")
			before := commitOutcomes(t, f)
			_, err := deleteRows(t, stale, idIs(3))
			after := commitOutcomes(t, f)
			if tc.want != nil {
				if err != nil {
					t.Fatalf("stale delete: %v, want it rebased", err)
				}
				rowsEqual(t, currentRows(t, f, "t"), tc.want)
				if d := after["rebased"] - before["rebased"]; d != 1 {
					t.Errorf("rebased count moved by %v, want 1", d)
				}
				return
			}
			if !errors.Is(err, table.ErrCommitFailed) {
				t.Fatalf("stale conflicting delete: %v, want commit failed", err)
			}
			if !strings.Contains(err.Error(), "Requirement failed: branch main has changed") {
				t.Errorf("error %q does not carry Iceberg's wording", err)
			}
			rowsEqual(t, currentRows(t, f, "t"), headRows)
			if d := after["conflict"] - before["conflict"]; d != 1 {
				t.Errorf("conflict count moved by %v, want 1 (%v -> %v)", d, before, after)
			}
			if after["rebased"] != before["rebased"] {
				t.Errorf("a conflict counted as rebased: %v -> %v", before, after)
			}
		})
	}
}

func mustDelete(t *testing.T, tbl *table.Table, filter iceberg.BooleanExpression) {
	t.Helper()
	if _, err := deleteRows(t, tbl, filter); err != nil {
		t.Fatalf("delete on the head: %v", err)
	}
}
