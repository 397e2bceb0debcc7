package mergecheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/versionstore"
)

// snap is one snapshot of a hand-written table history: id, parent (0:
// none), manifest list name, and the snapshot it copies (0: none).
type snap struct {
	id, parent int64
	list       string
	copies     int64
}

// metadata writes a v2 table whose main ref is the last snapshot.
func metadata(t *testing.T, snaps ...snap) table.Metadata {
	t.Helper()
	var js []string
	for i, s := range snaps {
		parent := ""
		if s.parent != 0 {
			parent = fmt.Sprintf(`"parent-snapshot-id": %d,`, s.parent)
		}
		extra := ""
		if s.copies != 0 {
			extra = fmt.Sprintf(`, "floe.merge.source-snapshot-id": "%d"`, s.copies)
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

func lineageOf(t *testing.T, tgt, cand table.Metadata) string {
	s := &tableScan{key: versionstore.ContentKey{"ns", "t"}, after: &versionstore.Content{}, tgtMeta: tgt, candMeta: cand,
		added: map[string]addedFile{}, targetLive: map[string]classify.Partition{}}
	s.lineage = classify.LineageSince(tgt, cand)
	s.chain = published(s.lineage)
	var vd verdict
	tableLineage(&vd, s)
	return vd.result(CheckLineage, "pass").Reason
}

func TestTableLineage(t *testing.T) {
	target := metadata(t, snap{id: 1, list: "m1"}, snap{id: 2, parent: 1, list: "m2"})
	// main after a branch landed (its snapshot 30, copied keeping its
	// id) and appended again (5).
	landed := metadata(t, snap{id: 1, list: "m1"}, snap{id: 2, parent: 1, list: "m2"},
		snap{id: 30, parent: 2, list: "m30b", copies: 30}, snap{id: 5, parent: 30, list: "m5"})
	for _, tc := range []struct {
		name   string
		target table.Metadata
		cand   []snap
		want   string
	}{
		{"on top of the head", target, []snap{{id: 1, list: "m1"}, {id: 2, parent: 1, list: "m2"}, {id: 3, parent: 2, list: "m3"}}, "pass"},
		{"the head itself", target, []snap{{id: 1, list: "m1"}, {id: 2, parent: 1, list: "m2"}}, "pass"},
		{"forked below the head", target, []snap{{id: 1, list: "m1"}, {id: 4, parent: 1, list: "m4"}},
			"table ns.t: the candidate's history does not contain the target's head snapshot 2 (it forks at snapshot 1)"},
		// The branch took main in by a merge: the copy of main's head
		// kept its id, under another manifest list. The history holds
		// main's change once, through the copy.
		{"main merged in: a copy that kept the head's id", target,
			[]snap{{id: 1, list: "m1"}, {id: 4, parent: 1, list: "m4"}, {id: 2, parent: 4, list: "m2b", copies: 2}}, "pass"},
		{"main merged in: a copy under a new id", target,
			[]snap{{id: 1, list: "m1"}, {id: 4, parent: 1, list: "m4"}, {id: 9, parent: 4, list: "m9", copies: 2}}, "pass"},
		// Round two: main holds the branch's landed snapshot (a copy) and
		// a new append; the branch holds its original, a copy of main's
		// first append, its new one and a copy of main's new append.
		{"main merged in again after landing", landed, []snap{{id: 1, list: "m1"}, {id: 30, parent: 1, list: "m30"},
			{id: 2, parent: 30, list: "m2b", copies: 2}, {id: 40, parent: 2, list: "m40"}, {id: 5, parent: 40, list: "m5b", copies: 5}}, "pass"},
		{"main merged in, but not its last append", landed, []snap{{id: 1, list: "m1"}, {id: 30, parent: 1, list: "m30"},
			{id: 2, parent: 30, list: "m2b", copies: 2}, {id: 40, parent: 2, list: "m40"}},
			"table ns.t: the candidate's history does not contain the target's head snapshot 5 (it forks at snapshot 1)"},
		{"a copy of the head, but not of the snapshot below it", landed, []snap{{id: 1, list: "m1"}, {id: 30, parent: 1, list: "m30"},
			{id: 40, parent: 30, list: "m40"}, {id: 5, parent: 40, list: "m5b", copies: 5}},
			"table ns.t: the candidate's history does not contain the target's snapshot 2 (it forks at snapshot 1)"},
		// Published twice: a copy of a change the history already has.
		{"a copy of the target's snapshot", target, []snap{{id: 1, list: "m1"}, {id: 2, parent: 1, list: "m2"}, {id: 5, parent: 2, list: "m5", copies: 1}},
			"table ns.t: snapshot 5 copies snapshot 1, already on the target"},
		{"two copies of the target's head", target, []snap{{id: 1, list: "m1"}, {id: 4, parent: 1, list: "m4"},
			{id: 2, parent: 4, list: "m2b", copies: 2}, {id: 6, parent: 2, list: "m6", copies: 2}},
			"table ns.t: snapshot 6 copies snapshot 2, already on the target"},
		{"the head, and a copy of it", target, []snap{{id: 1, list: "m1"}, {id: 2, parent: 1, list: "m2"}, {id: 6, parent: 2, list: "m6", copies: 2}},
			"table ns.t: snapshot 6 copies snapshot 2, already on the target"},
		{"a copy of its own snapshot", target, []snap{{id: 1, list: "m1"}, {id: 2, parent: 1, list: "m2"}, {id: 7, parent: 2, list: "m7"},
			{id: 8, parent: 7, list: "m8", copies: 7}},
			"table ns.t: snapshot 8 copies snapshot 7, already in the candidate's history"},
		{"unrelated history", target, []snap{{id: 7, list: "m7"}},
			"table ns.t: the candidate's history does not contain the target's head snapshot 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lineageOf(t, tc.target, metadata(t, tc.cand...)); got != tc.want {
				t.Fatalf("lineage %q\nwant     %q", got, tc.want)
			}
		})
	}
}
