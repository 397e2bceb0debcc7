package classify_test

import (
	"testing"

	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/versionstore"
)

// TestWithoutMetadata covers the classifications decided by the version
// store's values alone, before any file is read: the locations below do
// not exist, so a read would fail the test.
func TestWithoutMetadata(t *testing.T) {
	tbl := func(loc string) *versionstore.Content {
		return &versionstore.Content{Type: versionstore.IcebergTable, MetadataLocation: "file:///nowhere/" + loc}
	}
	c := classify.New()
	for _, tc := range []struct {
		name                 string
		base, source, target *versionstore.Content
		class                classify.Class
		reason               string
	}{
		{"created on both sides", nil, tbl("a"), tbl("b"), classify.Structural, "the table was created on both sides"},
		{"dropped on the source", tbl("base"), nil, tbl("t"), classify.Structural, "the table was dropped on the source and changed on the other side"},
		{"dropped on the target", tbl("base"), tbl("s"), nil, classify.Structural, "the table was dropped on the target and changed on the other side"},
		{"dropped on both sides", tbl("base"), nil, nil, classify.FastForward, "both sides dropped the table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Classify(t.Context(), tc.base, tc.source, tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if res.Class != tc.class || res.Reason != tc.reason {
				t.Fatalf("got %s (%s), want %s (%s)", res.Class, res.Reason, tc.class, tc.reason)
			}
		})
	}
	view := &versionstore.Content{Type: versionstore.IcebergView, MetadataLocation: "file:///nowhere/v"}
	if _, err := c.Classify(t.Context(), tbl("base"), view, tbl("t")); err == nil {
		t.Fatal("a view was classified as a table")
	}
	// A table's metadata outside every warehouse is an error, not a class.
	if _, err := c.Classify(t.Context(), tbl("base"), tbl("s"), tbl("t")); err == nil {
		t.Fatal("metadata outside every warehouse was read")
	}
}
