package gc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/versionstore"
)

// TestRevivalInTheWindowFailsTheRun: a commit landing between a batch's
// last check and its deletes that makes old, unmarked files live again (a
// branch created at a commit beyond every kept history) is the window
// README.md's "Concurrency" leaves open. Its files are deleted; the run
// must then see it, fail, and say which files were lost, rather than
// report success.
func TestRevivalInTheWindowFailsTheRun(t *testing.T) {
	l := newLake(t)
	l.Create("main", "ns.a")
	l.AppendRows("main", "ns.a", 5)
	main, err := l.srv.Store.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	oldHead := main.Head
	l.Drop("main", "ns.a")
	l.Create("main", "ns.e")
	l.AppendRows("main", "ns.e", 2)
	l.age(old)
	opts := gc.Options{History: func(context.Context, *versionstore.Ref) (gc.HistoryRule, error) {
		return gc.HistoryRule{Commits: 1}, nil
	}}
	revived := false
	gc.SetBeforeDelete(&opts, func() {
		if !revived {
			revived = true
			l.refAt("revived", oldHead, versionstore.Branch)
		}
	})
	rep, err := l.collector(opts).Run(t.Context(), gc.RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "made live again") {
		t.Fatalf("a run that deleted files a commit revived: error %v; want the revival reported\n%+v", err, rep)
	}
	if !revived || rep.Revived == 0 || rep.Revived > rep.Deleted || rep.Outcome != gc.OutcomeError {
		t.Fatalf("report: revived %d of %d deleted, outcome %s", rep.Revived, rep.Deleted, rep.Outcome)
	}
	named := 0
	for _, w := range rep.Warnings {
		if strings.Contains(w, "made live by a commit during the sweep") && strings.Contains(w, "on revived at commit") {
			named++
		}
	}
	if int64(named) != rep.Revived {
		t.Fatalf("%d of %d revived files named in the warnings: %q", named, rep.Revived, rep.Warnings)
	}
	// main's tables are untouched.
	delete(l.Rows, "revived")
	l.ScanAll()
}
