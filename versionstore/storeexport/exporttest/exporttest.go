package exporttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/floe-catalog/floe/versionstore"
)

// table is a content value for key ns.<name>, version n.
func table(name string, n int) versionstore.Operation {
	return versionstore.Operation{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns", name}, Content: &versionstore.Content{
		Type: versionstore.IcebergTable, ID: "id-" + name, MetadataLocation: fmt.Sprintf("file:///wh/ns/%s/metadata/%05d.metadata.json", name, n),
		UUID: "00000000-0000-4000-8000-000000000001", SnapshotID: int64(n), LastSequenceNumber: int64(n),
	}}
}

// Populate writes a varied history: a namespace and tables on main, a
// branch with its own commits merged back, a tag, a deleted branch (its
// commits now reachable only from the reference log), a dropped table and
// records, one of them written with a commit.
func Populate(t testing.TB, s *versionstore.Store) {
	t.Helper()
	ctx := context.Background()
	commit := func(branch string, msg string, ops ...versionstore.Operation) *versionstore.Commit {
		t.Helper()
		r, err := s.GetRef(branch)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Commit(ctx, versionstore.CommitRequest{Branch: branch, Expected: r.Head, Operations: ops,
			Meta: versionstore.CommitMeta{Author: "alice", Message: msg, Properties: map[string]string{"k": msg}}, Committer: "alice"})
		if err != nil {
			t.Fatalf("commit %q on %s: %v", msg, branch, err)
		}
		return res.Commit
	}
	commit("main", "namespace", versionstore.Operation{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns"},
		Content: &versionstore.Content{Type: versionstore.Namespace, Properties: map[string]string{"owner": "alice"}}})
	for i := range 40 {
		commit("main", fmt.Sprintf("table %d", i), table(fmt.Sprintf("t%02d", i), 1))
	}
	main, _ := s.GetRef("main")
	for _, name := range []string{"dev", "gone"} {
		if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: name, Type: versionstore.Branch, Target: main.Head, Principal: "bob"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		commit("dev", fmt.Sprintf("dev %d", i), table("t01", 2+i))
		commit("gone", fmt.Sprintf("gone %d", i), table("t02", 2+i))
	}
	dev, _ := s.GetRef("dev")
	main, _ = s.GetRef("main")
	if _, err := s.Merge(ctx, versionstore.MergeRequest{Target: "main", ExpectedTarget: main.Head, From: dev.Head, FromRef: "dev", Committer: "bob"}); err != nil {
		t.Fatal(err)
	}
	main, _ = s.GetRef("main")
	if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: "v1", Type: versionstore.Tag, Target: main.Head, Principal: "bob"}); err != nil {
		t.Fatal(err)
	}
	gone, _ := s.GetRef("gone")
	if err := s.DeleteRef(ctx, versionstore.DeleteRefRequest{Name: "gone", Expected: gone.Head, Principal: "bob"}); err != nil {
		t.Fatal(err)
	}
	commit("main", "drop t03", versionstore.Operation{Kind: versionstore.OpDelete, Key: versionstore.ContentKey{"ns", "t03"}})
	if err := s.PutRecord(ctx, versionstore.Record{Key: "test/standalone", Value: []byte("a record")}); err != nil {
		t.Fatal(err)
	}
	r, _ := s.GetRef("main")
	if _, err := s.Commit(ctx, versionstore.CommitRequest{Branch: "main", Expected: r.Head, Operations: []versionstore.Operation{table("t04", 9)},
		Committer: "carol", Record: &versionstore.Record{Key: "test/with-commit", Value: []byte("written with a commit")}}); err != nil {
		t.Fatal(err)
	}
}

// Acked is one commit a writer saw acknowledged.
type Acked struct {
	Branch string
	Commit versionstore.Hash
}

// Load is write load: one goroutine per branch, each committing new table
// versions back to back until Stop.
type Load struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	acked []Acked
	err   error
}

// StartLoad creates the branches (from main) and starts a writer on each.
func StartLoad(t testing.TB, s *versionstore.Store, branches ...string) *Load {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &Load{cancel: cancel}
	main, err := s.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range branches {
		if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: b, Type: versionstore.Branch, Target: main.Head}); err != nil {
			t.Fatal(err)
		}
	}
	// Two writers per branch, each with its own tables: their commits
	// queue on the same branch, so group-commit rounds hold several commits
	// (and the trees of all but the last are not persisted; see
	// versionstore/intermediate.go). Each names its own last commit as
	// expected, so the store rebases it over the other's.
	for _, b := range branches {
		for w := range 2 {
			l.wg.Go(func() {
				expected := main.Head
				for n := 0; ctx.Err() == nil; n++ {
					res, err := s.Commit(ctx, versionstore.CommitRequest{Branch: b, Expected: expected, Operations: []versionstore.Operation{
						table(fmt.Sprintf("load-%s-%d-%d", b, w, n%8), n)}, Committer: "load",
						Meta: versionstore.CommitMeta{Message: fmt.Sprintf("%s/%d %d", b, w, n)}})
					if ctx.Err() != nil {
						return
					}
					l.mu.Lock()
					if err != nil {
						l.err = fmt.Errorf("commit on %s: %w", b, err)
						l.mu.Unlock()
						return
					}
					l.acked = append(l.acked, Acked{Branch: b, Commit: res.Commit.Hash})
					l.mu.Unlock()
					expected = res.Commit.Hash
				}
			})
		}
	}
	return l
}

// Acked returns the commits acknowledged so far.
func (l *Load) Acked() []Acked {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Acked(nil), l.acked...)
}

// Stop stops the writers and fails t if one of them failed.
func (l *Load) Stop(t testing.TB) {
	t.Helper()
	l.cancel()
	l.wg.Wait()
	if l.err != nil {
		t.Fatal(l.err)
	}
}

// CheckAcked fails t unless every acked commit is on its branch in s (the
// head or one of its ancestors), and reads every reference's head commit
// and tree.
func CheckAcked(t testing.TB, s *versionstore.Store, acked []Acked) {
	t.Helper()
	if missing := Missing(t, s, acked); len(missing) > 0 {
		t.Fatalf("%d of %d acknowledged commits are missing, the first %s on %s", len(missing), len(acked), missing[0].Commit, missing[0].Branch)
	}
	ReadEveryRef(t, s)
}

// Missing returns the acked commits that are not on their branch in s.
func Missing(t testing.TB, s *versionstore.Store, acked []Acked) []Acked {
	t.Helper()
	var missing []Acked
	for _, a := range acked {
		r, err := s.GetRef(a.Branch)
		if err != nil {
			t.Fatalf("branch %s of acknowledged commit %s: %v", a.Branch, a.Commit, err)
		}
		ok, err := s.IsAncestor(context.Background(), a.Commit, r.Head)
		if errors.Is(err, versionstore.ErrCommitNotFound) {
			ok, err = false, nil
		}
		if err != nil {
			t.Fatalf("is %s on %s: %v", a.Commit, a.Branch, err)
		}
		if !ok {
			missing = append(missing, a)
		}
	}
	return missing
}

// ReadEveryRef reads every reference's head commit and lists its whole
// tree with the content values.
func ReadEveryRef(t testing.TB, s *versionstore.Store) {
	t.Helper()
	ctx := context.Background()
	for _, r := range s.ListRefs() {
		if r.Head == versionstore.NoAncestor {
			continue
		}
		if _, err := s.ReadCommit(ctx, r.Head); err != nil {
			t.Fatalf("read head %s of %s: %v", r.Head, r.Name, err)
		}
		for token := ""; ; {
			_, next, err := s.Entries(ctx, r.Head, versionstore.EntriesOptions{WithContent: true, PageToken: token})
			if err != nil {
				t.Fatalf("list the tree of %s at %s: %v", r.Name, r.Head, err)
			}
			if next == "" {
				break
			}
			token = next
		}
	}
}
