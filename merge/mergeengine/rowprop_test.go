package mergeengine_test

// TestRowLevelMergeProperty runs random sequences of row-level changes,
// what merge-on-read ETL writes, on two catalog branches (main and dev)
// of two tables that keep all their rows in one partition, so both sides
// keep deleting rows of the same data files: a v3 table (deletion
// vectors, at most one per data file) and a v2 table (position delete
// files). Each round appends rows, deletes rows and updates rows (a
// delete and the row written again with its id) on either branch, then
// merges dev into main through the Nessie API. The tables run under
// snapshot isolation, so only rows decide:
//
//   - a row dev deleted or updated since its last merge that main deleted
//     or updated since dev branched is a row changed on both sides: the
//     merge is refused ("rows changed on both sides", named by _row_id on
//     v3, by data file and position on v2), and nothing is written (main's
//     head, its rows, the warehouse's metadata files and manifest lists);
//   - otherwise the merge lands, and main holds its own rows with dev's
//     changes applied: the rows dev deleted (or the old versions of those
//     it updated) gone, the rows it appended (or wrote again) there once.
//
// After a refusal the sequence ends (dev's change stays unmergeable).
// Environment: FLOE_ROWPROP_SEED, FLOE_ROWPROP_SEQUENCES (default 6),
// FLOE_ROWPROP_ROUNDS (default 4).

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestRowLevelMergeProperty(t *testing.T) {
	propertySequences(t, "FLOE_ROWPROP", 6, 4, func(t *testing.T, rng *rand.Rand) (*[]string, func(*testing.T, int)) {
		r := &rowPropRun{propRun: propRun{d: newScenario(t), rng: rng}, fileOf: map[int]int{}}
		return &r.log, r.run
	})
}

// rowPropDay is the one partition every row lives in.
const rowPropDay = "2026-08-20"

// rowTable is the model of one table: each branch's live rows, and the
// rows each side changed that the merge rule compares. A row is a token
// (one written row, whatever its id), so a row written again under an
// old id is another row: both sides' deletes name physical rows.
type rowTable struct {
	name string
	v3   bool
	rows map[string]map[int]int64 // branch → live row → its id
	// mainDeleted: rows main deleted since dev branched (main never takes
	// dev's changes back, so they stay main's side).
	mainDeleted map[int]bool
	// devDeleted, devAdded: dev's changes since its last merge: the rows
	// it deleted that it did not write since, and the rows it wrote.
	devDeleted map[int]bool
	devAdded   map[int]int64
}

type rowPropRun struct {
	propRun
	tables []*rowTable
	rows   int         // the last row token handed out
	fileOf map[int]int // row → the append (data file) that wrote it
	files  int
}

func (r *rowPropRun) run(t *testing.T, rounds int) {
	for _, spec := range []struct {
		name  string
		props string
		v3    bool
	}{
		{"ns.v3", "format-version:3,write.delete.mode:merge-on-read,write.delete.isolation-level:snapshot", true},
		{"ns.v2", "write.delete.mode:merge-on-read,write.delete.isolation-level:snapshot", false},
	} {
		r.do(t, cmd("table", "table="+spec.name, "properties="+spec.props))
		m := &rowTable{name: spec.name, v3: spec.v3, rows: map[string]map[int]int64{"main": {}},
			mainDeleted: map[int]bool{}, devDeleted: map[int]bool{}, devAdded: map[int]int64{}}
		r.tables = append(r.tables, m)
		r.appendRows(t, "main", m, 3+r.rng.IntN(3))
	}
	r.do(t, cmd("branch", "dev"))
	for _, m := range r.tables {
		m.rows["dev"] = maps.Clone(m.rows["main"])
	}
	for round := range rounds {
		r.log = append(r.log, fmt.Sprintf("# round %d", round+1))
		for range 2 + r.rng.IntN(5) {
			b := []string{"main", "dev"}[r.rng.IntN(2)]
			r.randomOp(t, b, r.tables[r.rng.IntN(len(r.tables))])
		}
		if !r.mergeAndCheck(t) {
			return
		}
	}
}

func (r *rowPropRun) randomOp(t *testing.T, b string, m *rowTable) {
	live := r.deletable(b, m)
	switch n := r.rng.IntN(10); {
	case n < 4 || len(live) == 0:
		r.appendRows(t, b, m, 1+r.rng.IntN(3))
	case n < 7:
		id := live[r.rng.IntN(len(live))]
		r.deleteRow(t, b, m, id)
	default: // update: the row deleted and written again under its id
		id := live[r.rng.IntN(len(live))]
		r.deleteRow(t, b, m, id)
		r.writeID(t, b, m, id)
	}
}

func (r *rowPropRun) appendRows(t *testing.T, b string, m *rowTable, n int) {
	r.files++
	first := r.d.lake.LastID() + 1
	r.do(t, cmd("append", "on="+b, "table="+m.name, "day="+rowPropDay, "rows="+strconv.Itoa(n)))
	for id := first; id < first+int64(n); id++ {
		r.added(b, m, id)
	}
}

// writeID writes the id again (an update's new version) with a fresh row
// beside it, so the file keeps a row when the id is deleted again.
func (r *rowPropRun) writeID(t *testing.T, b string, m *rowTable, id int64) {
	r.files++
	fresh := r.d.lake.LastID() + 2 // the append uses up an id per row
	r.do(t, cmd("append", "on="+b, "table="+m.name, "day="+rowPropDay, "rows=2", "ids="+strconv.FormatInt(id, 10)))
	r.added(b, m, id)
	r.added(b, m, fresh)
}

func (r *rowPropRun) added(b string, m *rowTable, id int64) {
	r.rows++
	r.fileOf[r.rows] = r.files
	m.rows[b][r.rows] = id
	if b == "dev" {
		m.devAdded[r.rows] = id
	}
}

// deleteRow deletes every row with the id (a delete by id does), as a
// merge-on-read delete: a delete file or deletion vector, no file rewritten.
func (r *rowPropRun) deleteRow(t *testing.T, b string, m *rowTable, id int64) {
	r.do(t, cmd("delete", "on="+b, "table="+m.name, "id="+strconv.FormatInt(id, 10)))
	for row, rid := range m.rows[b] {
		if rid != id {
			continue
		}
		delete(m.rows[b], row)
		switch _, own := m.devAdded[row]; {
		case b == "main":
			m.mainDeleted[row] = true
		case own:
			// A row dev wrote since its last merge: deleting it takes it
			// back out of what dev adds.
			delete(m.devAdded, row)
		default:
			m.devDeleted[row] = true
		}
	}
}

// mergeAndCheck merges dev into main and checks the outcome against the
// model; false ends the sequence (a refusal).
func (r *rowPropRun) mergeAndCheck(t *testing.T) bool {
	// A row both sides deleted (an update deletes too) is a conflict on
	// either format: named by _row_id on v3, by data file and position
	// on v2 (tablemerge/posdeletes.go).
	var conflicts []string
	var wants []string
	for _, m := range r.tables {
		n := len(conflicts)
		for row := range m.devDeleted {
			if m.mainDeleted[row] {
				conflicts = append(conflicts, fmt.Sprintf("%s row %d", m.name, row))
			}
		}
		if len(conflicts) > n {
			wants = append(wants, m.name)
			if m.v3 {
				wants = append(wants, "_row_id=")
			} else {
				wants = append(wants, "(format v2 position deletes): data file ")
			}
		}
	}
	before := map[string]string{}
	for _, m := range r.tables {
		before[m.name] = r.rowsOf(t, "main", m)
	}
	files := r.do(t, cmd("files"))
	head, err := r.d.srv.Store.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	out := r.do(t, cmd("merge", "source=dev", "target=main"))
	r.log = append(r.log, "  -> "+strings.TrimSpace(out))
	if len(conflicts) > 0 {
		if !strings.HasPrefix(out, "409 ") || !strings.Contains(out, "rows changed on both sides") || slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(out, w) }) {
			t.Fatalf("merge: got %q, want a refusal naming rows changed on both sides (%s), with %q", out, strings.Join(conflicts, ", "), wants)
		}
		now, err := r.d.srv.Store.GetRef("main")
		if err != nil {
			t.Fatal(err)
		}
		if now.Head != head.Head {
			t.Fatalf("a refused merge moved main from %s to %s", head.Head, now.Head)
		}
		if got := r.do(t, cmd("files")); got != files {
			t.Fatalf("a refused merge left files: before %q, after %q", files, got)
		}
		for _, m := range r.tables {
			if got := r.rowsOf(t, "main", m); got != before[m.name] {
				t.Fatalf("%s on main changed by a refused merge:\nbefore %s\nafter  %s", m.name, before[m.name], got)
			}
		}
		return false
	}
	if !strings.HasPrefix(out, "200 ") {
		t.Fatalf("merge: got %q, want success", out)
	}
	for _, m := range r.tables {
		for row := range m.devDeleted {
			delete(m.rows["main"], row)
		}
		maps.Copy(m.rows["main"], m.devAdded)
		m.devDeleted, m.devAdded = map[int]bool{}, map[int]int64{}
		for _, b := range []string{"main", "dev"} {
			if got, want := r.rowsOf(t, b, m), renderRows(m.rows[b]); got != want {
				t.Fatalf("%s on %s after the merge:\ngot  %s\nwant %s", m.name, b, got, want)
			}
		}
	}
	if again := r.do(t, cmd("merge", "source=dev", "target=main")); !strings.Contains(again, "nothing to merge") {
		t.Fatalf("merging again: %q, want nothing to merge", again)
	}
	return true
}

func (r *rowPropRun) rowsOf(t *testing.T, b string, m *rowTable) string {
	return strings.TrimSpace(r.d.run(t, cmd("rows", "on="+b, "table="+m.name)))
}

// renderRows renders the model's rows as the rows command does: the ids
// of the day, sorted, one for each live row.
func renderRows(rows map[int]int64) string {
	ids := slices.Sorted(maps.Values(rows))
	if len(ids) == 0 {
		return "(no rows)"
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.FormatInt(id, 10)
	}
	return rowPropDay + ": " + strings.Join(out, " ")
}

// deletable are the ids of b's live rows whose deletion leaves every data
// file holding them with a live row: iceberg-go drops a data file whose
// rows are all deleted instead of writing a delete for it, and this test
// is about deletes of rows of files both sides keep (a data file removed
// on one side is the file-level rules' case, testdata/row_level).
func (r *rowPropRun) deletable(b string, m *rowTable) []int64 {
	left := map[int]map[int64]bool{} // file → ids of its live rows on b
	for row, id := range m.rows[b] {
		f := r.fileOf[row]
		if left[f] == nil {
			left[f] = map[int64]bool{}
		}
		left[f][id] = true
	}
	var out []int64
	for _, id := range slices.Compact(slices.Sorted(maps.Values(m.rows[b]))) {
		ok := true
		for row, rid := range m.rows[b] {
			if rid == id && len(left[r.fileOf[row]]) < 2 {
				ok = false
			}
		}
		if ok {
			out = append(out, id)
		}
	}
	return out
}
