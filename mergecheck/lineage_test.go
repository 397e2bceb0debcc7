package mergecheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/classify"
	"github.com/floe-catalog/floe/icebergtable"
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
		targetHistory: map[int64]bool{}, added: map[string]addedFile{}, targetLive: map[string]classify.Partition{}}
	for id, n := classify.HeadSnapshotID(tgt), 0; id != nil && n < 10; n++ {
		sn := tgt.SnapshotByID(*id)
		for _, c := range changeIDs(*sn) {
			s.targetHistory[c] = true
		}
		id = sn.ParentSnapshotID
	}
	s.chain, s.unrooted = chainSince(tgt, cand)
	var vd verdict
	tableLineage(&vd, s)
	return vd.result(CheckLineage, "pass").Reason
}

func TestTableLineage(t *testing.T) {
	target := metadata(t, snap{id: 1, list: "m1"}, snap{id: 2, parent: 1, list: "m2"})
	for _, tc := range []struct {
		name string
		cand []snap
		want string
	}{
		{"on top of the head", []snap{{id: 1, list: "m1"}, {id: 2, parent: 1, list: "m2"}, {id: 3, parent: 2, list: "m3"}}, "pass"},
		{"the head itself", []snap{{id: 1, list: "m1"}, {id: 2, parent: 1, list: "m2"}}, "pass"},
		{"forked below the head", []snap{{id: 1, list: "m1"}, {id: 4, parent: 1, list: "m4"}},
			"table ns.t: the candidate's history does not contain the target's head snapshot 2 (it forks at snapshot 1)"},
		// A copy that kept the id of a snapshot the target has, under
		// another manifest list: published twice.
		{"a snapshot id the target has", []snap{{id: 1, list: "m1"}, {id: 4, parent: 1, list: "m4"}, {id: 2, parent: 4, list: "m2b"}},
			"table ns.t: the candidate's history does not contain the target's head snapshot 2 (it forks at snapshot 1); table ns.t: snapshot 2 is already on the target"},
		{"a copy of the target's snapshot", []snap{{id: 1, list: "m1"}, {id: 2, parent: 1, list: "m2"}, {id: 5, parent: 2, list: "m5", copies: 1}},
			"table ns.t: snapshot 5 copies snapshot 1, already on the target"},
		{"unrelated history", []snap{{id: 7, list: "m7"}},
			"table ns.t: the candidate's history does not contain the target's head snapshot 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lineageOf(t, target, metadata(t, tc.cand...)); got != tc.want {
				t.Fatalf("lineage %q\nwant     %q", got, tc.want)
			}
		})
	}
}
