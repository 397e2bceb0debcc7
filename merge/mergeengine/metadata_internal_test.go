package mergeengine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// The three-way merges of properties and refs, case by case; the scenario
// file testdata/metadata runs them on real tables.

func TestMergeProperties(t *testing.T) {
	base := iceberg.Properties{"a": "1", "b": "1", "c": "1", "gc.enabled": "false"}
	for _, tc := range []struct {
		name          string
		src, tgt      iceberg.Properties
		set           iceberg.Properties
		remove, clash []string
	}{
		{name: "source sets, changes and removes", src: iceberg.Properties{"a": "2", "c": "1", "n": "x", "gc.enabled": "false"}, tgt: base,
			set: iceberg.Properties{"a": "2", "n": "x"}, remove: []string{"b"}},
		{name: "keys only the target changed stay", src: base, tgt: iceberg.Properties{"a": "9"}, set: iceberg.Properties{}},
		{name: "the same change on both sides", src: iceberg.Properties{"a": "2", "b": "1", "c": "1"}, tgt: iceberg.Properties{"a": "2", "c": "1"},
			set: iceberg.Properties{}},
		{name: "both changed differently", src: iceberg.Properties{"a": "2", "b": "1", "c": "1"}, tgt: iceberg.Properties{"a": "3", "b": "1", "c": "1"},
			set: iceberg.Properties{}, clash: []string{`table property a changed on both sides: the source set it to "2", the target set it to "3" (base "1")`}},
		{name: "removed against changed", src: iceberg.Properties{"b": "1", "c": "1"}, tgt: iceberg.Properties{"a": "3", "b": "1", "c": "1"},
			set: iceberg.Properties{}, clash: []string{`table property a changed on both sides: the source removed it, the target set it to "3" (base "1")`}},
		{name: "protected properties are never changed", src: iceberg.Properties{"a": "1", "b": "1", "c": "1", "gc.enabled": "true",
			"write.metadata.delete-after-commit.enabled": "true", "format-version": "3"}, tgt: base, set: iceberg.Properties{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, remove, clash := mergeProperties(base, tc.src, tc.tgt)
			if !reflect.DeepEqual(set, tc.set) || !reflect.DeepEqual(remove, tc.remove) || !reflect.DeepEqual(clash, tc.clash) {
				t.Errorf("got set %v remove %v clashes %q, want %v %v %q", set, remove, clash, tc.set, tc.remove, tc.clash)
			}
		})
	}
}

func TestMergeRefs(t *testing.T) {
	tag := func(id int64) table.SnapshotRef {
		return table.SnapshotRef{SnapshotID: id, SnapshotRefType: table.TagRef}
	}
	age := int64(1000)
	aged := table.SnapshotRef{SnapshotID: 20, SnapshotRefType: table.BranchRef, MaxRefAgeMs: &age}
	main := table.SnapshotRef{SnapshotID: 1, SnapshotRefType: table.BranchRef}
	base := map[string]table.SnapshotRef{"main": main, "old": tag(1), "keep": tag(1)}
	// 20 was picked as 21; 1 and 5 are on the target; 30 is nowhere.
	ids := map[int64]int64{1: 1, 5: 5, 20: 21}
	for _, tc := range []struct {
		name     string
		src, tgt map[string]table.SnapshotRef
		changes  []refChange
		clash    string // a substring of the only clash
	}{
		{name: "created at a picked snapshot: at its copy, retention kept",
			src: map[string]table.SnapshotRef{"main": tag(99), "old": tag(1), "keep": tag(1), "b": aged}, tgt: base,
			changes: []refChange{{name: "b", ref: table.SnapshotRef{SnapshotID: 21, SnapshotRefType: table.BranchRef, MaxRefAgeMs: &age}}}},
		{name: "moved to a snapshot the target has, and removed",
			src: map[string]table.SnapshotRef{"main": main, "keep": tag(5)}, tgt: base,
			changes: []refChange{{name: "keep", ref: tag(5)}, {name: "old", remove: true}}},
		{name: "at a snapshot the merge does not bring",
			src: map[string]table.SnapshotRef{"main": main, "old": tag(1), "keep": tag(1), "x": tag(30)}, tgt: base,
			clash: "table tag x of the source points at snapshot 30, which the merge does not bring"},
		{name: "removed on the source, moved on the target",
			src: map[string]table.SnapshotRef{"main": main, "keep": tag(1)}, tgt: map[string]table.SnapshotRef{"main": main, "old": tag(5), "keep": tag(1)},
			clash: "table tag old changed on both sides: the source removed, the target at snapshot 5 (base at snapshot 1)"},
		{name: "created on both sides at the same snapshot",
			src: map[string]table.SnapshotRef{"main": main, "old": tag(1), "keep": tag(1), "n": tag(5)},
			tgt: map[string]table.SnapshotRef{"main": main, "old": tag(1), "keep": tag(1), "n": tag(5)}},
		{name: "created on both sides at different snapshots",
			src:   map[string]table.SnapshotRef{"main": main, "old": tag(1), "keep": tag(1), "n": tag(5)},
			tgt:   map[string]table.SnapshotRef{"main": main, "old": tag(1), "keep": tag(1), "n": tag(1)},
			clash: "table tag n changed on both sides: the source at snapshot 5, the target at snapshot 1 (base removed)"},
		{name: "only the target changed it",
			src: base, tgt: map[string]table.SnapshotRef{"main": main, "keep": tag(5)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes, clashes := mergeRefs(base, tc.src, tc.tgt, ids)
			switch {
			case tc.clash != "":
				if len(clashes) != 1 || !strings.Contains(clashes[0], tc.clash) {
					t.Errorf("clashes %q, want one with %q", clashes, tc.clash)
				}
			case len(clashes) > 0 || !reflect.DeepEqual(changes, tc.changes):
				t.Errorf("got %+v, clashes %q; want %+v", changes, clashes, tc.changes)
			}
		})
	}
}
