package gc_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/versionstore"
)

const old = 4 * 24 * time.Hour // older than the default grace period

// build writes tables on main, a branch and a tag, a branch deleted
// afterwards and a table dropped on main; it returns the directory of the
// table only the deleted branch had.
func build(l *lake) (goneDir string) {
	l.Create("main", "ns.a")
	l.AppendRows("main", "ns.a", 10)
	l.DeleteID("main", "ns.a", 3) // a position delete file
	l.Create("main", "ns.b")
	l.AppendRows("main", "ns.b", 5)
	l.branch("dev", "main", versionstore.Branch)
	l.AppendRows("dev", "ns.a", 7)
	l.AppendRows("dev", "ns.a", 3)
	l.Create("dev", "ns.c")
	l.AppendRows("dev", "ns.c", 4)
	l.branch("v1", "dev", versionstore.Tag)
	l.Drop("dev", "ns.c")             // the tag still reaches it
	l.ExpireAllButLast("dev", "ns.a") // main still reaches the first snapshot
	l.branch("tmp", "main", versionstore.Branch)
	l.Create("tmp", "ns.d")
	l.AppendRows("tmp", "ns.d", 6)
	goneDir = l.tableDir("tmp", "ns.d")
	l.deleteRef("tmp")     // nothing reaches ns.d any more
	l.Drop("main", "ns.b") // main's history still reaches it
	return goneDir
}

func TestDryRunThenRunDeletesOnlyWhatNoRefReaches(t *testing.T) {
	l := newLake(t)
	goneDir := build(l)
	l.age(old)
	// A stray old file and a young one nothing references.
	strayOld := filepath.Join(l.srv.WarehouseDir, "ns", "stray-old.parquet")
	strayYoung := filepath.Join(l.srv.WarehouseDir, "ns", "stray-young.parquet")
	for _, p := range []string{strayOld, strayYoung} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	oldTime := time.Now().Add(-old)
	if err := os.Chtimes(strayOld, oldTime, oldTime); err != nil {
		t.Fatal(err)
	}
	before := l.files()
	gone := under(before, goneDir)
	if gone == 0 {
		t.Fatalf("no files under %s", goneDir)
	}
	c := l.collector(gc.Options{})
	live := l.tableDir("main", "ns.a") + "/metadata"

	dry, err := c.Run(t.Context(), gc.RunOptions{DryRun: true, ListFiles: 1000,
		Explain: []string{"file://" + strayYoung, "file://" + strayOld}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(l.files()); n != len(before) {
		t.Fatalf("a dry run deleted files: %d before, %d after", len(before), n)
	}
	if dry.Deleted != int64(gone+1) || dry.Young != 1 {
		t.Fatalf("dry run: %d to delete, %d young; want %d (ns.d's files and the old stray) and 1\n%+v", dry.Deleted, dry.Young, gone+1, dry)
	}
	if len(dry.Tables) != 1 || dry.Tables[0].Table != gc.Unreferenced || dry.Tables[0].Files != int64(gone+1) {
		t.Fatalf("dry run per table: %+v; want everything unreferenced", dry.Tables)
	}
	verdicts := map[string]string{}
	for _, e := range dry.Explained {
		verdicts[e.Location] = e.Verdict
	}
	if verdicts["file://"+strayYoung] != gc.VerdictKept || verdicts["file://"+strayOld] != gc.VerdictDelete {
		t.Fatalf("explained: %+v", dry.Explained)
	}
	// Why is a live metadata file live?
	var metaFile string
	for f := range before {
		if filepath.Dir(f) == live && filepath.Ext(f) == ".json" {
			metaFile = f
		}
	}
	// And every file of ns.a's data: data files and the position delete
	// file are live, as what they are.
	asked := []string{metaFile}
	dataDir := l.tableDir("main", "ns.a") + "/data"
	for f := range before {
		if strings.HasPrefix(f, dataDir+"/") {
			asked = append(asked, f)
		}
	}
	ex, err := c.Run(t.Context(), gc.RunOptions{DryRun: true, Explain: asked})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range ex.Explained {
		if e.Verdict != gc.VerdictLive {
			t.Fatalf("explain %s: %+v", e.Location, e)
		}
		kinds[strings.Fields(strings.TrimPrefix(e.Reason, "live: "))[0]]++
	}
	if len(ex.Explained) != len(asked) || kinds["metadata"]+kinds["previous-metadata"] != 1 || kinds["data"] == 0 || kinds["position-deletes"] == 0 {
		t.Fatalf("explained %d of %d, kinds %v", len(ex.Explained), len(asked), kinds)
	}
	t.Logf("explain: %s", ex.Explained[0].Reason)

	rep, err := c.Run(t.Context(), gc.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != dry.Deleted || rep.DeleteErrors != 0 {
		t.Fatalf("run deleted %d (%d errors), the dry run said %d", rep.Deleted, rep.DeleteErrors, dry.Deleted)
	}
	after := l.files()
	if n := under(after, goneDir); n != 0 {
		t.Fatalf("%d files of the unreachable table remain", n)
	}
	if after[strayOld] || !after[strayYoung] {
		t.Fatalf("old stray kept %v, young stray kept %v; want deleted and kept", after[strayOld], after[strayYoung])
	}
	l.ScanAll()
	last, err := c.LastReport(t.Context())
	if err != nil || last.ID != rep.ID || last.Deleted != rep.Deleted {
		t.Fatalf("last report %+v, %v; want run %s", last, err, rep.ID)
	}
	// A second run finds nothing more.
	again, err := c.Run(t.Context(), gc.RunOptions{})
	if err != nil || again.Deleted != 0 {
		t.Fatalf("second run: %d deleted, %v", again.Deleted, err)
	}
	l.ScanAll()
	// The change feed shows the two runs, in order, and no dry run.
	page, err := changefeed.New(l.srv.Store, changefeed.Options{}).Read(t.Context(),
		changefeed.Query{Types: []changefeed.Type{changefeed.GCCompleted}, Limit: changefeed.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 2 || page.Events[0].GC.ID != rep.ID || page.Events[0].GC.Deleted != rep.Deleted ||
		page.Events[1].GC.ID != again.ID || page.Events[0].Ref != "" || page.Events[0].GC.Outcome != gc.OutcomeOK {
		t.Fatalf("gc events: %+v; want runs %s (%d deleted) and %s", page.Events, rep.ID, rep.Deleted, again.ID)
	}
}

// With a history rule of one commit, what only older commits reach goes:
// the table dropped on main, and on dev the snapshots expired there that
// no other ref still reaches.
func TestHistoryRuleLetsOldCommitsGo(t *testing.T) {
	l := newLake(t)
	build(l)
	bDir := l.tableDir("dev", "ns.b")
	l.Drop("dev", "ns.b") // now only history and the tag reach it
	l.deleteRef("v1")
	l.age(old)
	before := l.files()
	c := l.collector(gc.Options{History: func(context.Context, *versionstore.Ref) (gc.HistoryRule, error) {
		return gc.HistoryRule{Commits: 1}, nil
	}})
	rep, err := c.Run(t.Context(), gc.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := l.files()
	if under(before, bDir) == 0 || under(after, bDir) != 0 {
		t.Fatalf("files of the dropped ns.b: %d before, %d after; want some, then none\n%+v", under(before, bDir), under(after, bDir), rep)
	}
	// The snapshot expired on dev that main never had: its manifest list
	// goes, attributed to the table.
	var fromA int64
	for _, ts := range rep.Tables {
		if ts.Table == "ns.a" {
			fromA = ts.Files
		}
	}
	if fromA == 0 {
		t.Fatalf("nothing of ns.a's expired snapshots deleted: %+v", rep.Tables)
	}
	l.ScanAll()
}

func TestYoungFilesAreKept(t *testing.T) {
	l := newLake(t)
	goneDir := build(l)
	before := l.files()
	rep, err := l.collector(gc.Options{}).Run(t.Context(), gc.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != 0 || under(l.files(), goneDir) != under(before, goneDir) {
		t.Fatalf("young files deleted: %+v", rep)
	}
	if rep.Young == 0 {
		t.Fatalf("no young file counted: %+v", rep)
	}
}

// A commit landing after the mark that makes old, unmarked files live
// again (a branch created from an old commit) keeps them: the references
// are read again before anything is deleted.
func TestCommitDuringRunKeepsItsFiles(t *testing.T) {
	for _, when := range []string{"after mark", "during sweep"} {
		t.Run(when, func(t *testing.T) {
			l := newLake(t)
			l.Create("main", "ns.a")
			l.AppendRows("main", "ns.a", 5)
			main, _ := l.srv.Store.GetRef("main")
			oldHead := main.Head
			oldRows := map[string][]int64{"ns.a": append([]int64(nil), l.Expect("main")["ns.a"]...)}
			l.Drop("main", "ns.a")
			l.Create("main", "ns.e")
			l.AppendRows("main", "ns.e", 2)
			l.age(old)
			revive := func() {
				l.refAt("revived", oldHead, versionstore.Branch)
				l.Rows["revived"] = oldRows
				l.AppendRows("main", "ns.e", 3) // and a write concurrent with the run
			}
			opts := gc.Options{History: func(context.Context, *versionstore.Ref) (gc.HistoryRule, error) {
				return gc.HistoryRule{Commits: 1}, nil
			}}
			once := false
			if when == "after mark" {
				gc.SetTestHooks(&opts, revive, nil, 0)
			} else {
				gc.SetTestHooks(&opts, nil, func(int) error {
					if !once {
						once = true
						revive()
					}
					return nil
				}, 1)
			}
			if _, err := l.collector(opts).Run(t.Context(), gc.RunOptions{}); err != nil {
				t.Fatal(err)
			}
			l.ScanAll()
		})
	}
}

// A run that fails or is cancelled in the middle of its sweep has
// deleted only unreachable files; a later run finishes the job.
func TestInterruptedSweepDeletesNothingLive(t *testing.T) {
	for _, how := range []string{"error", "cancel"} {
		t.Run(how, func(t *testing.T) {
			l := newLake(t)
			goneDir := build(l)
			l.age(old)
			before := under(l.files(), goneDir)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var opts gc.Options
			batches := 0
			boom := errors.New("injected failure")
			gc.SetTestHooks(&opts, nil, func(int) error {
				batches++
				if batches == 3 {
					if how == "cancel" {
						cancel()
						return nil
					}
					return boom
				}
				return nil
			}, 1)
			c := l.collector(opts)
			rep, err := c.Run(ctx, gc.RunOptions{})
			if err == nil {
				t.Fatalf("the run succeeded: %+v", rep)
			}
			if how == "error" && !errors.Is(err, boom) || how == "cancel" && !errors.Is(err, context.Canceled) {
				t.Fatalf("run error %v", err)
			}
			if rep.Deleted == 0 || rep.Deleted >= int64(before) {
				t.Fatalf("the interrupted run deleted %d of %d; want some", rep.Deleted, before)
			}
			l.ScanAll()
			if _, err := l.collector(gc.Options{}).Run(t.Context(), gc.RunOptions{}); err != nil {
				t.Fatal(err)
			}
			if n := under(l.files(), goneDir); n != 0 {
				t.Fatalf("%d unreachable files left after the second run", n)
			}
			l.ScanAll()
		})
	}
}

func TestOneRunAtATime(t *testing.T) {
	l := newLake(t)
	l.Create("main", "ns.a")
	var opts gc.Options
	var c *gc.Collector
	var second error
	gc.SetTestHooks(&opts, func() { _, second = c.Run(t.Context(), gc.RunOptions{DryRun: true}) }, nil, 0)
	c = l.collector(opts)
	if _, err := c.Run(t.Context(), gc.RunOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(second, gc.ErrRunning) {
		t.Fatalf("a second run during the first: %v; want ErrRunning", second)
	}
}
