package tablemerge_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/tablemerge"
)

// hist is one snapshot of a hand-written main-ref history: id, parent (0:
// none), manifest list name, and the snapshot it copies (0: none).
type hist struct {
	id, parent int64
	list       string
	copies     int64
}

// history is a v2 table whose main ref is the last snapshot.
func history(t *testing.T, snaps ...hist) table.Metadata {
	t.Helper()
	var js []string
	for i, s := range snaps {
		parent := ""
		if s.parent != 0 {
			parent = fmt.Sprintf(`"parent-snapshot-id": %d,`, s.parent)
		}
		extra := ""
		if s.copies != 0 {
			extra = fmt.Sprintf(`, %q: "%d"`, tablemerge.SummarySourceSnapshotID, s.copies)
		}
		js = append(js, fmt.Sprintf(`{"snapshot-id": %d, %s "sequence-number": %d, "timestamp-ms": %d,
			"manifest-list": "file:///wh/t/metadata/%s.avro", "summary": {"operation": "append"%s}, "schema-id": 0}`,
			s.id, parent, i+1, 1700000000000+int64(i), s.list, extra))
	}
	head := snaps[len(snaps)-1].id
	raw := fmt.Sprintf(`{"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location": "file:///wh/t",
		"last-sequence-number": %d, "last-updated-ms": 1700000000000, "last-column-id": 1,
		"schemas": [{"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": true, "type": "long"}]}],
		"current-schema-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}], "default-spec-id": 0, "last-partition-id": 999,
		"sort-orders": [{"order-id": 0, "fields": []}], "default-sort-order-id": 0, "properties": {},
		"current-snapshot-id": %d, "refs": {"main": {"snapshot-id": %d, "type": "branch"}}, "snapshots": [%s]}`,
		len(snaps), head, head, strings.Join(js, ","))
	f, err := icebergtable.ParseTableMetadata("file:///wh/t/metadata/00001.metadata.json", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return f.Metadata
}

// TestSince: a side's history read against a base's by changes, with
// cherry-picked copies on either side.
func TestSince(t *testing.T) {
	ids := func(snaps []table.Snapshot) []int64 {
		out := []int64{}
		for _, s := range snaps {
			out = append(out, s.SnapshotID)
		}
		return out
	}
	// main: 1, 2, then a branch's 30 landed as a copy that kept its id,
	// then 5.
	main := history(t, hist{id: 1, list: "m1"}, hist{id: 2, parent: 1, list: "m2"},
		hist{id: 30, parent: 2, list: "m30b", copies: 30}, hist{id: 5, parent: 30, list: "m5"})
	for _, tc := range []struct {
		name                 string
		side                 []hist
		met                  int64 // 0: never
		added, held, missing []int64
		twice                []tablemerge.Repeat
	}{
		{name: "on top of the head", side: []hist{{id: 1, list: "m1"}, {id: 2, parent: 1, list: "m2"},
			{id: 30, parent: 2, list: "m30b", copies: 30}, {id: 5, parent: 30, list: "m5"}, {id: 6, parent: 5, list: "m6"}},
			met: 5, added: []int64{6}, held: []int64{}, missing: []int64{}},
		// The branch took main in twice: it holds its own 30, copies of
		// main's 2 and 5, and its new 40.
		{name: "merged back, through copies", side: []hist{{id: 1, list: "m1"}, {id: 30, parent: 1, list: "m30"},
			{id: 2, parent: 30, list: "m2b", copies: 2}, {id: 40, parent: 2, list: "m40"}, {id: 9, parent: 40, list: "m9", copies: 5}},
			met: 1, added: []int64{40}, held: []int64{30, 2, 9}, missing: []int64{}},
		{name: "lacks main's last change", side: []hist{{id: 1, list: "m1"}, {id: 30, parent: 1, list: "m30"},
			{id: 2, parent: 30, list: "m2b", copies: 2}, {id: 40, parent: 2, list: "m40"}},
			met: 1, added: []int64{40}, held: []int64{30, 2}, missing: []int64{5}},
		{name: "a copy of a change below the meeting point", side: []hist{{id: 1, list: "m1"}, {id: 2, parent: 1, list: "m2"},
			{id: 7, parent: 2, list: "m7", copies: 1}},
			met: 2, added: []int64{}, held: []int64{7}, missing: []int64{5, 30},
			twice: []tablemerge.Repeat{{Of: 1, OfBase: true}}},
		{name: "its own change twice", side: []hist{{id: 1, list: "m1"}, {id: 2, parent: 1, list: "m2"},
			{id: 30, parent: 2, list: "m30b", copies: 30}, {id: 5, parent: 30, list: "m5"}, {id: 6, parent: 5, list: "m6"},
			{id: 8, parent: 6, list: "m8", copies: 6}},
			met: 5, added: []int64{6, 8}, held: []int64{}, missing: []int64{},
			twice: []tablemerge.Repeat{{Of: 6}}},
		{name: "unrelated", side: []hist{{id: 70, list: "m70"}},
			added: []int64{70}, held: []int64{}, missing: []int64{5, 30, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tablemerge.Since(main, history(t, tc.side...))
			var met int64
			if l.Met != nil {
				met = *l.Met
			}
			missing := append([]int64{}, l.Missing...)
			if met != tc.met || !slices.Equal(ids(l.Added), tc.added) || !slices.Equal(ids(l.Held), tc.held) ||
				!slices.Equal(missing, tc.missing) || l.Broken != "" {
				t.Fatalf("met %d added %v held %v missing %v broken %q\nwant met %d added %v held %v missing %v",
					met, ids(l.Added), ids(l.Held), missing, l.Broken, tc.met, tc.added, tc.held, tc.missing)
			}
			if len(l.Twice) != len(tc.twice) {
				t.Fatalf("twice %+v, want %+v", l.Twice, tc.twice)
			}
			for i, r := range l.Twice {
				if r.Of != tc.twice[i].Of || r.OfBase != tc.twice[i].OfBase {
					t.Fatalf("twice[%d] of %d (base %v), want of %d (base %v)", i, r.Of, r.OfBase, tc.twice[i].Of, tc.twice[i].OfBase)
				}
			}
		})
	}
}

// TestChangeSetHolds: a change is held by its id, by a copy naming it,
// and by the original of a copy.
func TestChangeSetHolds(t *testing.T) {
	m := history(t, hist{id: 1, list: "m1"}, hist{id: 2, parent: 1, list: "m2", copies: 20})
	set := tablemerge.ChangeSetOf(m.Snapshots()...)
	other := history(t, hist{id: 1, list: "x1"}, hist{id: 20, parent: 1, list: "x20"}, hist{id: 3, parent: 20, list: "x3", copies: 1},
		hist{id: 4, parent: 3, list: "x4"})
	for _, tc := range []struct {
		id   int64
		want bool
	}{{1, true}, {20, true}, {3, true}, {4, false}} {
		if got := set.Holds(*other.SnapshotByID(tc.id)); got != tc.want {
			t.Errorf("Holds(snapshot %d) = %v, want %v", tc.id, got, tc.want)
		}
	}
}
