package classify_test

import (
	"reflect"
	"testing"

	"github.com/floe-catalog/floe/merge/classify"
)

func TestParseOperation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		summary map[string]string
		want    *classify.Operation
		replay  bool
	}{
		{"no record", map[string]string{"added-records": "3"}, nil, false},
		{"pinned overwrite", map[string]string{
			classify.OpKind: "overwrite-partitions", classify.OpPartitions: "day=2026-08-20, day=2026-08-21",
			classify.OpSourceSnapshotIDs: "ns.raw@12,ns.t@7",
		}, &classify.Operation{Kind: "overwrite-partitions", Partitions: []string{"day=2026-08-20", "day=2026-08-21"}, Pinned: true,
			Sources: []classify.SourceSnapshot{{Table: "ns.raw", SnapshotID: 12}, {Table: "ns.t", SnapshotID: 7}}}, true},
		{"delete reading nothing", map[string]string{
			classify.OpKind: "delete-partitions", classify.OpPartitions: "day=2026-08-20", classify.OpSourceSnapshotIDs: "none",
		}, &classify.Operation{Kind: "delete-partitions", Partitions: []string{"day=2026-08-20"}, Pinned: true, Sources: []classify.SourceSnapshot{}}, true},
		{"unpartitioned", map[string]string{
			classify.OpKind: "overwrite-partitions", classify.OpPartitions: "", classify.OpSourceSnapshotIDs: "none",
		}, &classify.Operation{Kind: "overwrite-partitions", Partitions: []string{""}, Pinned: true, Sources: []classify.SourceSnapshot{}}, true},
		{"unpinned", map[string]string{classify.OpKind: "overwrite-partitions", classify.OpPartitions: "day=2026-08-20"},
			&classify.Operation{Kind: "overwrite-partitions", Partitions: []string{"day=2026-08-20"}, Sources: []classify.SourceSnapshot{}}, false},
		{"append", map[string]string{classify.OpKind: "append", classify.OpSourceSnapshotIDs: "none"},
			&classify.Operation{Kind: "append", Partitions: []string{}, Pinned: true, Sources: []classify.SourceSnapshot{}}, false},
		{"no partitions", map[string]string{classify.OpKind: "overwrite-partitions", classify.OpSourceSnapshotIDs: "none"},
			&classify.Operation{Kind: "overwrite-partitions", Partitions: []string{}, Pinned: true, Sources: []classify.SourceSnapshot{},
				Invalid: "floe.operation.partitions is missing"}, false},
		{"bad source", map[string]string{classify.OpKind: "delete-partitions", classify.OpPartitions: "d=1", classify.OpSourceSnapshotIDs: "ns.t"},
			&classify.Operation{Kind: "delete-partitions", Partitions: []string{"d=1"}, Pinned: true, Sources: []classify.SourceSnapshot{},
				Invalid: `floe.operation.source-snapshot-ids: "ns.t" is not TABLE@SNAPSHOT-ID`}, false},
		{"unknown kind", map[string]string{classify.OpKind: "merge-into"},
			&classify.Operation{Kind: "merge-into", Partitions: []string{}, Sources: []classify.SourceSnapshot{},
				Invalid: `unknown floe.operation.kind "merge-into" (append, overwrite-partitions or delete-partitions)`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := classify.ParseOperation(tc.summary)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseOperation(%v)\n got %+v\nwant %+v", tc.summary, got, tc.want)
			}
			if got.Replayable() != tc.replay {
				t.Fatalf("Replayable() = %v, want %v", got.Replayable(), tc.replay)
			}
		})
	}
}
