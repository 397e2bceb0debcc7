package versionstore_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/floe-catalog/floe/versionstore"
)

// concurrentHistory has committers goroutines commit perCommitter new keys
// each to main, so that rounds of group commit hold several commits and
// most commits' trees are intermediate: not persisted. It returns main's
// commits, oldest first.
func concurrentHistory(t *testing.T, s *versionstore.Store, committers, perCommitter int) []*versionstore.Commit {
	t.Helper()
	ctx := t.Context()
	// A base of a few hundred keys makes a tree of several levels, which
	// the commits below all change at its right edge: within a round, each
	// commit's nodes there replace the previous commit's, which are
	// therefore not persisted.
	ops := []versionstore.Operation{put(nsKey(0), &versionstore.Content{Type: versionstore.Namespace})}
	for i := range 600 {
		k := versionstore.ContentKey{"ns0000", fmt.Sprintf("base-%04d", i)}
		ops = append(ops, put(k, tableContent(k, 0, "")))
	}
	if _, err := commit(ctx, s, versionstore.DefaultBranch, ops...); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range committers {
		wg.Go(func() {
			for i := range perCommitter {
				k := versionstore.ContentKey{"ns0000", fmt.Sprintf("new-%04d-%02d", i, g)}
				if _, err := commit(ctx, s, versionstore.DefaultBranch, put(k, tableContent(k, 0, ""))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if st := s.Stats(); st.Commits.Load() <= st.Batches.Load() {
		t.Fatalf("%d commits in %d batches: no round held two commits, so no tree was intermediate", st.Commits.Load(), st.Batches.Load())
	}
	return mainHistory(t, s)
}

func mainHistory(t *testing.T, s *versionstore.Store) []*versionstore.Commit {
	t.Helper()
	var all []*versionstore.Commit
	token := ""
	for {
		page, next, err := s.Log(t.Context(), headOf(t, s, versionstore.DefaultBranch), versionstore.LogOptions{PageToken: token, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		token = next
	}
	slices.Reverse(all)
	return all
}

// keysAt lists every key at a commit.
func keysAt(t *testing.T, s *versionstore.Store, at versionstore.Hash) []string {
	t.Helper()
	var keys []string
	for _, e := range allEntries(t, s, at) {
		keys = append(keys, e.Key.String())
	}
	return keys
}

func allEntries(t *testing.T, s *versionstore.Store, at versionstore.Hash) []versionstore.Entry {
	t.Helper()
	var all []versionstore.Entry
	token := ""
	for {
		page, next, err := s.Entries(t.Context(), at, versionstore.EntriesOptions{PageToken: token, Limit: 1000})
		if err != nil {
			t.Fatalf("entries at %s: %v", at, err)
		}
		all = append(all, page...)
		if next == "" {
			return all
		}
		token = next
	}
}

// checkHistory reads every commit's tree, listing, point lookups and the
// diff from its parent, against the key sets the operations imply.
func checkHistory(t *testing.T, s *versionstore.Store, history []*versionstore.Commit) {
	t.Helper()
	ctx := t.Context()
	var want []string
	for _, c := range history {
		for _, op := range c.Operations {
			if op.Kind == versionstore.OpPut {
				want = append(want, op.Key.String())
			}
		}
		slices.Sort(want)
		entries := allEntries(t, s, c.Hash)
		values := map[string]versionstore.Hash{}
		var got []string
		for _, e := range entries {
			got = append(got, e.Key.String())
			values[e.Key.String()] = e.Value
		}
		if !slices.Equal(got, want) {
			t.Fatalf("commit %s: %d keys, want %d", c.Hash, len(got), len(want))
		}
		for _, op := range c.Operations {
			if values[op.Key.String()] != op.Value {
				t.Fatalf("commit %s: %s holds %s, its operation put %s", c.Hash, op.Key, values[op.Key.String()], op.Value)
			}
			if _, err := s.GetContent(ctx, c.Hash, op.Key); err != nil {
				t.Fatalf("commit %s: content of %s: %v", c.Hash, op.Key, err)
			}
		}
		if c.Parent() == versionstore.NoAncestor {
			continue
		}
		diff, _, err := s.Diff(ctx, c.Parent(), c.Hash, versionstore.DiffOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(diff) != len(c.Operations) {
			t.Fatalf("commit %s: diff from its parent has %d entries, want %d", c.Hash, len(diff), len(c.Operations))
		}
	}
}

// TestIntermediateTrees reads every commit of a history made by concurrent
// committers: in the process that wrote them (trees of recent rounds are
// kept in memory) and after reopening, where every intermediate tree is
// rebuilt from its persisted ancestor.
func TestIntermediateTrees(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _, err := openStore(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	history := concurrentHistory(t, s, 16, 25)
	checkHistory(t, s, history)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, _, err = openStore(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkHistory(t, s, history)
	if s.Stats().TreesRebuilt.Load() == 0 {
		t.Fatal("no tree was rebuilt after reopening: every commit's tree was persisted")
	}
}

// TestWritesOnIntermediateCommits builds on commits whose trees were not
// persisted: a commit on a branch created at one, on a branch assigned to
// one, a merge whose merge base is one, a transplant of one. After each
// write the store is reopened and the written branch read whole, which
// fails if a persisted tree points at nodes that were never written. With
// reopen_before_writes the history is not in memory when the writes run,
// so they rebuild the trees they build on.
func TestWritesOnIntermediateCommits(t *testing.T) {
	t.Parallel()
	for _, reopenFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("reopen_before_writes=%v", reopenFirst), func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			s, _, err := openStore(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { s.Close() }()
			reopen := func() {
				t.Helper()
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if s, _, err = openStore(ctx, dir); err != nil {
					t.Fatal(err)
				}
			}
			history := concurrentHistory(t, s, 8, 20)
			var intermediate []*versionstore.Commit
			for _, c := range history {
				persisted, err := versionstore.TreePersisted(ctx, s, c.Hash)
				if err != nil {
					t.Fatal(err)
				}
				if !persisted {
					intermediate = append(intermediate, c)
				}
			}
			if len(intermediate) < 4 {
				t.Fatalf("only %d of %d commits have intermediate trees", len(intermediate), len(history))
			}
			early := intermediate[len(intermediate)/4]
			mid := intermediate[len(intermediate)/2]
			last := intermediate[len(intermediate)-1]
			midKeys, earlyKeys, baseKeys := keysAt(t, s, mid.Hash), keysAt(t, s, early.Hash), keysAt(t, s, history[0].Hash)
			if reopenFirst {
				reopen()
			}
			// writeThenCheck runs write, reopens the store and checks that
			// branch holds exactly want.
			writeThenCheck := func(what, branch string, want []string, write func() error) {
				t.Helper()
				if err := write(); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if !reopenFirst {
					reopen()
				}
				want = slices.Clone(want)
				slices.Sort(want)
				if got := keysAt(t, s, headOf(t, s, branch)); !slices.Equal(got, want) {
					t.Fatalf("%s: branch %s holds %d keys, want %d", what, branch, len(got), len(want))
				}
			}

			kb := versionstore.ContentKey{"ns0000", "a-on-branch"}
			writeThenCheck("commit on a branch created at an intermediate commit", "at-mid", append(slices.Clone(midKeys), kb.String()), func() error {
				if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: "at-mid", Type: versionstore.Branch, Target: mid.Hash}); err != nil {
					return err
				}
				_, err := commit(ctx, s, "at-mid", put(kb, tableContent(kb, 0, "")))
				return err
			})

			km := versionstore.ContentKey{"ns0000", "a-on-moved"}
			writeThenCheck("commit on a branch assigned to an intermediate commit", "moved", append(slices.Clone(earlyKeys), km.String()), func() error {
				moved, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: "moved", Type: versionstore.Branch, Target: history[1].Hash})
				if err != nil {
					return err
				}
				if _, err := s.AssignRef(ctx, versionstore.AssignRefRequest{Name: "moved", Expected: moved.Head, Target: early.Hash}); err != nil {
					return err
				}
				_, err = commit(ctx, s, "moved", put(km, tableContent(km, 0, "")))
				return err
			})

			writeThenCheck("merge whose merge base is an intermediate commit", "moved", append(append(slices.Clone(midKeys), kb.String()), km.String()), func() error {
				res, err := s.Merge(ctx, versionstore.MergeRequest{
					Target: "moved", ExpectedTarget: headOf(t, s, "moved"), From: headOf(t, s, "at-mid"), Committer: "test",
				})
				if err == nil && !res.WasSuccessful {
					err = fmt.Errorf("merge had conflicts: %+v", res)
				}
				return err
			})

			writeThenCheck("transplant of an intermediate commit", "picked", append(slices.Clone(baseKeys), last.Operations[0].Key.String()), func() error {
				if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: "picked", Type: versionstore.Branch, Target: history[0].Hash}); err != nil {
					return err
				}
				_, err := s.Transplant(ctx, versionstore.TransplantRequest{Target: "picked", ExpectedTarget: history[0].Hash, Commits: []versionstore.Hash{last.Hash}, Committer: "test"})
				return err
			})

			reopen()
			checkHistory(t, s, history)
		})
	}
}

// TestTransplantOntoEmptyBranch: a transplant of two commits onto an empty
// branch writes two commits in one round; the first one's tree is not
// persisted and is rebuilt from the empty tree, its parent's.
func TestTransplantOntoEmptyBranch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	s, _, err := openStore(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	// main: namespace ns0000, then namespace ns0001 with a table, then
	// another table. The last two, transplanted, make trees main never had.
	nsPut := func(i int) versionstore.Operation {
		return put(nsKey(i), &versionstore.Content{Type: versionstore.Namespace})
	}
	t1 := versionstore.ContentKey{"ns0001", "t1"}
	t2 := versionstore.ContentKey{"ns0001", "t2"}
	if _, err := commit(ctx, s, versionstore.DefaultBranch, nsPut(0)); err != nil {
		t.Fatal(err)
	}
	c1, err := commit(ctx, s, versionstore.DefaultBranch, nsPut(1), put(t1, tableContent(t1, 0, "")))
	if err != nil {
		t.Fatal(err)
	}
	c2, err := commit(ctx, s, versionstore.DefaultBranch, put(t2, tableContent(t2, 0, "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: "empty", Type: versionstore.Branch, Target: versionstore.NoAncestor}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transplant(ctx, versionstore.TransplantRequest{Target: "empty", ExpectedTarget: versionstore.NoAncestor,
		Commits: []versionstore.Hash{c1.Commit.Hash, c2.Commit.Hash}, Committer: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, _, err = openStore(ctx, dir); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	history, _, err := s.Log(ctx, headOf(t, s, "empty"), versionstore.LogOptions{})
	if err != nil || len(history) != 2 {
		t.Fatalf("log of the transplant: %d commits, %v", len(history), err)
	}
	if got := keysAt(t, s, history[1].Hash); !slices.Equal(got, []string{nsKey(1).String(), t1.String()}) {
		t.Fatalf("first transplanted commit holds %q", got)
	}
	if s.Stats().TreesRebuilt.Load() != 1 {
		t.Fatalf("%d trees rebuilt, want the first transplanted commit's", s.Stats().TreesRebuilt.Load())
	}
}

// TestReadsAfterAMergeThatWroteNothing: a merge onto a branch whose head
// tree is intermediate copies that tree into its round and rebuilds the
// source's tree on it. When the merge writes nothing (a dry run), those
// copies are dropped, so the rebuilt tree must not be remembered for later
// reads: a read of the source's child, rebuilt from it, would miss nodes.
func TestReadsAfterAMergeThatWroteNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	s, _, err := openStore(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	ops := []versionstore.Operation{put(nsKey(0), &versionstore.Content{Type: versionstore.Namespace})}
	for i := range 600 {
		k := versionstore.ContentKey{"ns0000", fmt.Sprintf("base-%04d", i)}
		ops = append(ops, put(k, tableContent(k, 0, "")))
	}
	if _, err := commit(ctx, s, versionstore.DefaultBranch, ops...); err != nil {
		t.Fatal(err)
	}
	// Each committer writes near its own base key, so consecutive
	// commits of a round change different leaves: a commit keeps its
	// predecessor's new leaf, which a later commit of the round replaces,
	// so that leaf is in no persisted tree.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				k := versionstore.ContentKey{"ns0000", fmt.Sprintf("base-%04d-%02d", g*75, i)}
				if _, err := commit(ctx, s, versionstore.DefaultBranch, put(k, tableContent(k, 0, ""))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	history := mainHistory(t, s)
	intermediate := func(c *versionstore.Commit) bool {
		persisted, err := versionstore.TreePersisted(ctx, s, c.Hash)
		if err != nil {
			t.Fatal(err)
		}
		return !persisted
	}
	run := -1
	for i := 1; i+2 < len(history) && run < 0; i++ {
		if intermediate(history[i]) && intermediate(history[i+1]) && intermediate(history[i+2]) {
			run = i
		}
	}
	if run < 0 {
		t.Fatal("no three consecutive commits with intermediate trees")
	}
	base, source, child := history[run], history[run+1], history[run+2]
	wantChild := keysAt(t, s, child.Hash)
	// Reopened, the store remembers no tree: the merge below rebuilds both.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, _, err = openStore(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: "b", Type: versionstore.Branch, Target: base.Hash}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Merge(ctx, versionstore.MergeRequest{
		Target: "b", ExpectedTarget: base.Hash, From: source.Hash, Committer: "test", DryRun: true,
	})
	if err != nil || !res.WasSuccessful {
		t.Fatalf("dry-run merge: %+v, %v", res, err)
	}
	if got := keysAt(t, s, child.Hash); !slices.Equal(got, wantChild) {
		t.Fatalf("commit after the merged one: %d keys, want %d", len(got), len(wantChild))
	}
}
