package mergeengine_test

import (
	"testing"

	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/merge/tablemerge"
)

// TestSourceSnapshotProperty: the classifier recognises cherry-picked
// copies by the summary property tablemerge writes on them; the two
// packages name it apart (neither imports the other), so they must agree.
func TestSourceSnapshotProperty(t *testing.T) {
	if classify.SummarySourceSnapshotID != tablemerge.SummarySourceSnapshotID {
		t.Fatalf("classify reads %q, tablemerge writes %q", classify.SummarySourceSnapshotID, tablemerge.SummarySourceSnapshotID)
	}
}
