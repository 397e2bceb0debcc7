package tablemerge_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/merge/tablemerge"
)

// slowFiles holds back every write whose location passes slow, as a
// busy disk would, and fails those that pass fail.
type slowFiles struct {
	tablemerge.Files
	slow, fail func(loc string) bool
}

var errDiskFull = errors.New("no space left on device")

func (s slowFiles) WriteFile(ctx context.Context, loc string, data []byte) error {
	if s.fail != nil && s.fail(loc) {
		return errDiskFull
	}
	if s.slow != nil && s.slow(loc) {
		time.Sleep(300 * time.Millisecond)
	}
	return s.Files.WriteFile(ctx, loc, data)
}

// TestCherryPickWritesBehind: a cherry-pick writes its manifest copies and
// lists in the background, but a later pick that reads the head's
// manifests (a replay, here of an overwrite of the partition the first
// pick appended to) finds the first pick's copy written, however slow the
// disk; the rows come out right. A write that fails fails the cherry-pick,
// and Result.Written names every file that may exist.
func TestCherryPickWritesBehind(t *testing.T) {
	f := newFixture(t)
	base := f.appendRows(f.create(2), 1, 2, 3) // 3 is in d0
	head := f.appendRows(base, 10, 11)
	src1 := f.appendRows(base, 42) // d0
	src2 := f.overwriteDay(src1, "d0", 50, 53)
	picks := []tablemerge.Pick{
		{Snapshot: *src1.CurrentSnapshot(), Parent: base.CurrentSnapshot()},
		{Snapshot: *src2.CurrentSnapshot(), Parent: src1.CurrentSnapshot(), Replay: &tablemerge.Replay{InScope: inDay("d0")}},
	}
	// The first pick's manifest copy is the first manifest written.
	var manifests atomic.Int32
	slowManifests := slowFiles{Files: f.wh, slow: func(loc string) bool {
		return strings.HasSuffix(loc, "-m0.avro") && manifests.Add(1) == 1
	}}
	res, err := tablemerge.CherryPick(t.Context(), slowManifests, tablemerge.Request{Head: head.Metadata(), HeadLocation: head.MetadataLocation(), Picks: picks})
	if err != nil {
		t.Fatalf("cherry-pick of an append and a replayed overwrite: %v", err)
	}
	for _, loc := range res.Written {
		if _, err := os.Stat(strings.TrimPrefix(loc, "file://")); err != nil {
			t.Errorf("written file %s: %v", loc, err)
		}
	}
	meta, err := res.Builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	if ids, want := f.scanIDs(f.table(meta, "picked")), []int64{1, 2, 10, 11, 50, 53}; !slices.Equal(ids, want) {
		t.Fatalf("rows after the cherry-pick %v, want %v", ids, want)
	}

	failLists := slowFiles{Files: f.wh, fail: func(loc string) bool { return strings.Contains(loc, "/snap-") }}
	res, err = tablemerge.CherryPick(t.Context(), failLists, tablemerge.Request{Head: head.Metadata(), HeadLocation: head.MetadataLocation(), Picks: picks[:1]})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("cherry-pick whose manifest list cannot be written: %v, want %v", err, errDiskFull)
	}
	if res == nil || len(res.Written) == 0 {
		t.Fatalf("a failed cherry-pick names no file written: %+v", res)
	}
}
