package mergeengine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/mergeengine"
	"github.com/floe-catalog/floe/versionstore"
)

// directive parses one scenario line ("append on=etl table=ns.t ...").
func directive(line string) *datadriven.TestData {
	f := strings.Fields(line)
	td := &datadriven.TestData{Pos: "replan_test", Cmd: f[0]}
	for _, a := range f[1:] {
		k, v, _ := strings.Cut(a, "=")
		arg := datadriven.CmdArg{Key: k}
		if v != "" {
			arg.Vals = []string{v}
		}
		td.CmdArgs = append(td.CmdArgs, arg)
	}
	return td
}

// movingStore moves the target under the engine: before the first merge
// that carries resolved content (the engine's commit of a plan), it runs
// move (an append on the target).
type movingStore struct {
	mergeengine.Store
	move   func()
	writes atomic.Int32 // merges with resolved content
}

func (s *movingStore) Merge(ctx context.Context, req versionstore.MergeRequest) (*versionstore.MergeResult, error) {
	resolved := false
	for _, m := range req.KeyModes {
		resolved = resolved || m.Resolved != nil
	}
	if resolved && !req.DryRun && s.writes.Add(1) == 1 {
		s.move()
	}
	return s.Store.Merge(ctx, req)
}

// TestReplanWhenTargetMoves: the target's table changes between the
// engine's plan and its commit, so the store refuses the resolved value
// (ExpectedTarget no longer matches); the engine plans again on the new
// head and the merge lands with every row of both sides and of the
// concurrent append, once.
func TestReplanWhenTargetMoves(t *testing.T) {
	d := newScenario(t)
	for _, l := range []string{
		"table table=ns.t",
		"branch etl",
		"append on=etl table=ns.t day=2026-08-20 rows=2",
		"append table=ns.t day=2026-08-21 rows=1",
	} {
		d.run(t, directive(l))
	}
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: d.srv.Warehouse})
	if err != nil {
		t.Fatal(err)
	}
	st := &movingStore{Store: d.srv.Store, move: func() {
		d.run(t, directive("append table=ns.t day=2026-08-22 rows=1"))
	}}
	eng, err := mergeengine.New(mergeengine.Options{Store: st, Warehouses: []*icebergtable.Warehouse{wh}})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := d.srv.Store.GetRef("etl")
	tgt, _ := d.srv.Store.GetRef("main")
	res, err := eng.MergeTables(t.Context(), versionstore.MergeRequest{
		Target: "main", ExpectedTarget: tgt.Head, From: src.Head, FromRef: "etl", Committer: "test",
	})
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	if !res.WasApplied || st.writes.Load() != 2 {
		t.Fatalf("applied %v after %d commit attempts, want applied after 2", res.WasApplied, st.writes.Load())
	}
	if got, want := d.scanRows(t, directive("rows table=ns.t")), "2026-08-20: 1 2\n2026-08-21: 3\n2026-08-22: 4\n"; got != want {
		t.Fatalf("rows:\n%s\nwant:\n%s", got, want)
	}
}

// TestCheckSeesResolvedContent: the merge's check (authorization) is
// asked about exactly what is written: the table's new metadata file, not
// the source's value, and the commit holds what it approved.
func TestCheckSeesResolvedContent(t *testing.T) {
	d := newScenario(t)
	for _, l := range []string{
		"table table=ns.t",
		"branch etl",
		"append on=etl table=ns.t day=2026-08-20 rows=1",
		"append table=ns.t day=2026-08-21 rows=1",
	} {
		d.run(t, directive(l))
	}
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: d.srv.Warehouse})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := mergeengine.New(mergeengine.Options{Store: d.srv.Store, Warehouses: []*icebergtable.Warehouse{wh}})
	if err != nil {
		t.Fatal(err)
	}
	st := d.srv.Store
	src, _ := st.GetRef("etl")
	tgt, _ := st.GetRef("main")
	key := versionstore.ContentKey{"ns", "t"}
	srcVal, _ := st.GetContent(t.Context(), src.Head, key)
	tgtVal, _ := st.GetContent(t.Context(), tgt.Head, key)
	var approved []versionstore.CheckedChange
	res, err := eng.MergeTables(t.Context(), versionstore.MergeRequest{
		Target: "main", ExpectedTarget: tgt.Head, From: src.Head, FromRef: "etl", Committer: "test",
		Check: func(_ context.Context, ch []versionstore.CheckedChange) error { approved = ch; return nil },
	})
	if err != nil || !res.WasApplied {
		t.Fatalf("merge: %v", err)
	}
	if len(approved) != 1 || approved[0].After == nil || approved[0].Before == nil {
		t.Fatalf("checked changes %+v", approved)
	}
	after := approved[0].After
	if after.MetadataLocation == srcVal.MetadataLocation || after.MetadataLocation == tgtVal.MetadataLocation ||
		approved[0].Before.MetadataLocation != tgtVal.MetadataLocation || after.ID != tgtVal.ID {
		t.Fatalf("check saw %s (before %s); source %s, target %s", after.MetadataLocation, approved[0].Before.MetadataLocation, srcVal.MetadataLocation, tgtVal.MetadataLocation)
	}
	merged, _ := st.GetContent(t.Context(), res.ResultantHash, key)
	if merged.MetadataLocation != after.MetadataLocation {
		t.Fatalf("committed %s, approved %s", merged.MetadataLocation, after.MetadataLocation)
	}
	if len(res.Tables) != 1 || !res.Tables[0].Merged || len(res.Tables[0].Picked) != 1 {
		t.Fatalf("tables %+v", res.Tables)
	}
}
