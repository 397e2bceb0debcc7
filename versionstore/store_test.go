package versionstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// openTestStore opens a store on Pebble in a temporary directory.
func openTestStore(t testing.TB, opts Options) *Store {
	t.Helper()
	return openStoreAt(t, t.TempDir(), opts)
}

func openStoreAt(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	be, err := pebblebackend.Open(dir, pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), be, opts)
	if err != nil {
		be.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func ns(elems ...string) *Content            { return &Content{Type: Namespace} }
func table(loc string) *Content              { return &Content{Type: IcebergTable, MetadataLocation: loc} }
func key(elems ...string) ContentKey         { return ContentKey(elems) }
func put(k ContentKey, c *Content) Operation { return Operation{Kind: OpPut, Key: k, Content: c} }
func del(k ContentKey) Operation             { return Operation{Kind: OpDelete, Key: k} }

func head(t testing.TB, s *Store, name string) Hash {
	t.Helper()
	r, err := s.GetRef(name)
	if err != nil {
		t.Fatal(err)
	}
	return r.Head
}

func mustCommit(t testing.TB, s *Store, branch string, ops ...Operation) *CommitResult {
	t.Helper()
	res, err := s.Commit(context.Background(), CommitRequest{Branch: branch, Expected: head(t, s, branch), Operations: ops,
		Meta: CommitMeta{Message: "test"}, Committer: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func conflictTypes(err error) []ConflictType {
	var ce *ConflictError
	if !errors.As(err, &ce) {
		return nil
	}
	var out []ConflictType
	for _, c := range ce.Conflicts {
		out = append(out, c.Type)
	}
	return out
}

// TestRefs covers what the scenario files do not: one namespace for
// branch and tag names, deletes and assigns that need the exact head, the
// default branch that cannot be deleted, and the reference log.
func TestRefs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTestStore(t, Options{})
	base := mustCommit(t, s, "main", put(key("db"), ns()), put(key("db", "a"), table("a1")))
	if _, err := s.CreateRef(ctx, CreateRefRequest{Name: "dev", Type: Branch, Target: base.Commit.Hash}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRef(ctx, CreateRefRequest{Name: "dev", Type: Tag, Target: base.Commit.Hash}); !errors.Is(err, ErrReferenceExists) {
		t.Fatalf("duplicate ref: %v", err)
	}
	if _, err := s.CreateRef(ctx, CreateRefRequest{Name: "fix", Type: Branch, Target: base.Commit.Hash}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, "fix", put(key("db", "b"), table("b1")))
	// Assign and delete need the expected head; main cannot be deleted.
	if err := s.DeleteRef(ctx, DeleteRefRequest{Name: "fix", Expected: base.Commit.Hash}); !errors.Is(err, ErrReferenceConflict) {
		t.Fatalf("delete with stale hash: %v", err)
	}
	if err := s.DeleteRef(ctx, DeleteRefRequest{Name: "fix", Expected: head(t, s, "fix")}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRef(ctx, DeleteRefRequest{Name: "main", Expected: head(t, s, "main")}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("delete main: %v", err)
	}
	d := mustCommit(t, s, "dev", put(key("db", "c"), table("c1")))
	if _, err := s.AssignRef(ctx, AssignRefRequest{Name: "dev", Expected: base.Commit.Hash, Target: base.Commit.Hash}); !errors.Is(err, ErrReferenceConflict) {
		t.Fatalf("assign with stale hash: %v", err)
	}
	if _, err := s.AssignRef(ctx, AssignRefRequest{Name: "dev", Expected: d.Commit.Hash, Target: base.Commit.Hash}); err != nil {
		t.Fatal(err)
	}
	entries, _, err := s.RefLog(ctx, "fix", 0, "")
	if err != nil || len(entries) != 3 || entries[0].Op != RefLogDelete || entries[1].Op != RefLogCommit || entries[2].Op != RefLogCreate {
		t.Fatalf("reflog of fix: %v %+v", err, entries)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTestStore(t, Options{})
	c1 := mustCommit(t, s, "main", put(key("n"), ns()))
	c2 := mustCommit(t, s, "main", put(key("n", "t"), table("x")))
	c3 := mustCommit(t, s, "main", del(key("n", "t")))
	for _, tc := range []struct {
		expr string
		want Hash
	}{
		{"main", c3.Commit.Hash},
		{"-", c3.Commit.Hash},
		{"main~1", c2.Commit.Hash},
		{"main~2^1", NoAncestor},
		{"main@" + c2.Commit.Hash.String()[:10], c2.Commit.Hash},
		{"@" + c1.Commit.Hash.String(), c1.Commit.Hash},
		{"@" + c3.Commit.Hash.String() + "~2", c1.Commit.Hash},
		{fmt.Sprintf("main*%d", c3.Commit.CommitTime.UnixMilli()+1), c3.Commit.Hash},
		{"main*" + c1.Commit.CommitTime.Format("2006-01-02T15:04:05.999999999Z07:00"), c1.Commit.Hash},
	} {
		r, err := s.Resolve(ctx, tc.expr)
		if err != nil || r.Hash != tc.want {
			t.Fatalf("%s: %v, got %v want %s", tc.expr, err, r, tc.want)
		}
	}
	for _, bad := range []string{"nope", "main~x", "main^3", "@zz", "main~9", "a..b"} {
		if _, err := s.Resolve(ctx, bad); err == nil {
			t.Fatalf("%s resolved", bad)
		}
	}
}

func TestConcurrentCommitsDistinctKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTestStore(t, Options{})
	mustCommit(t, s, "main", put(key("db"), ns()))
	const writers, each = 64, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				// Every writer uses the head it last saw; the store rebases.
				r, _ := s.GetRef("main")
				_, err := s.Commit(ctx, CommitRequest{Branch: "main", Expected: r.Head, Committer: fmt.Sprint("w", w),
					Operations: []Operation{put(key("db", fmt.Sprintf("t%02d_%02d", w, i)), table("loc"))}})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("commit failed: %v", err)
	}
	log, _, err := s.Log(ctx, head(t, s, "main"), LogOptions{})
	if err != nil || len(log) != writers*each+1 {
		t.Fatalf("log: %v, %d commits", err, len(log))
	}
	for _, c := range log {
		if len(c.Parents) != 1 {
			t.Fatalf("commit %s has %d parents; history must be linear", c.Hash, len(c.Parents))
		}
	}
	entries, _, err := s.Entries(ctx, head(t, s, "main"), EntriesOptions{Prefix: key("db")})
	if err != nil || len(entries) != writers*each+1 {
		t.Fatalf("entries: %v, %d", err, len(entries))
	}
}

func TestConcurrentCommitsSameKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTestStore(t, Options{})
	r := mustCommit(t, s, "main", put(key("db"), ns()), put(key("db", "hot"), table("v0")))
	id := r.Added[1].ID
	start := r.Commit.Hash
	const writers = 32
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, conflicts := 0, 0
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := table(fmt.Sprint("v", w+1))
			c.ID = id
			// All expect the same head and touch the same key: exactly one wins.
			_, err := s.Commit(ctx, CommitRequest{Branch: "main", Expected: start, Operations: []Operation{put(key("db", "hot"), c)}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrReferenceConflict):
				conflicts++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 1 || conflicts != writers-1 {
		t.Fatalf("%d succeeded and %d conflicted, want 1 and %d", ok, conflicts, writers-1)
	}
	if got := s.Stats().Conflicts.Load(); got != writers-1 {
		t.Fatalf("conflict counter %d", got)
	}
}

func TestReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStoreAt(t, dir, Options{})
	c := mustCommit(t, s, "main", put(key("n"), ns()))
	if _, err := s.CreateRef(t.Context(), CreateRefRequest{Name: "tag1", Type: Tag, Target: c.Commit.Hash}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(t.Context(), CommitRequest{Branch: "main", Expected: c.Commit.Hash}); !errors.Is(err, ErrClosed) {
		t.Fatalf("commit after close: %v", err)
	}
	s2 := openStoreAt(t, dir, Options{})
	if head(t, s2, "main") != c.Commit.Hash || head(t, s2, "tag1") != c.Commit.Hash {
		t.Fatal("refs not persisted")
	}
	if _, err := s2.Commit(t.Context(), CommitRequest{Branch: "tag1", Expected: c.Commit.Hash}); !errors.Is(err, ErrNotABranch) {
		t.Fatalf("commit to tag: %v", err)
	}
}

func TestRecords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &now
	s := openTestStore(t, Options{Now: func() time.Time { return *clock }})
	exp := now.Add(time.Hour)
	res, err := s.Commit(ctx, CommitRequest{Branch: "main", Expected: NoAncestor, Operations: []Operation{put(key("n"), ns())},
		Record: &Record{Key: "idem/1", Value: []byte("response-1"), Expires: exp}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.GetRecord(ctx, "idem/1")
	if err != nil || string(r.Value) != "response-1" || !r.Expires.Equal(exp) {
		t.Fatalf("record written with a commit: %+v, %v", r, err)
	}
	// A commit that fails writes no record.
	_, err = s.Commit(ctx, CommitRequest{Branch: "main", Expected: res.Commit.Hash, Operations: []Operation{del(key("missing"))},
		Record: &Record{Key: "idem/2", Value: []byte("x"), Expires: exp}})
	if !errors.Is(err, ErrReferenceConflict) {
		t.Fatalf("conflicting commit: %v", err)
	}
	if _, err := s.GetRecord(ctx, "idem/2"); !errors.Is(err, ErrRecordNotFound) {
		t.Fatalf("record of a failed commit: %v", err)
	}
	if err := s.PutRecord(ctx, Record{Key: "idem/3", Value: []byte("409"), Expires: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	later := now.Add(30 * time.Minute)
	clock = &later
	if _, err := s.GetRecord(ctx, "idem/3"); !errors.Is(err, ErrRecordNotFound) {
		t.Fatalf("expired record still readable: %v", err)
	}
	n, err := s.ExpireRecords(ctx, later)
	if err != nil || n != 1 {
		t.Fatalf("expired %d records, %v; want 1", n, err)
	}
	if _, err := s.GetRecord(ctx, "idem/1"); err != nil {
		t.Fatalf("unexpired record was deleted: %v", err)
	}
}

// TestAssignRefRecords: an assignment carries several records into its
// durable batch, all or none: a stale expected head or one failed record
// condition writes no record and leaves the reference where it was.
func TestAssignRefRecords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	s := openStoreAt(t, dir, Options{})
	c, err := s.Commit(ctx, CommitRequest{Branch: "main", Expected: NoAncestor, Operations: []Operation{put(key("n"), ns())}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRef(ctx, CreateRefRequest{Name: "cand", Type: Branch, Target: NoAncestor}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRecord(ctx, Record{Key: "q/a", Value: []byte("validating")}); err != nil {
		t.Fatal(err)
	}
	// Stale expected head: nothing written.
	_, err = s.AssignRef(ctx, AssignRefRequest{Name: "cand", Expected: c.Commit.Hash, Target: c.Commit.Hash,
		Records: []Record{{Key: "q/b", Value: []byte("merged")}}})
	if !errors.Is(err, ErrReferenceConflict) {
		t.Fatalf("stale assign: %v", err)
	}
	if _, err := s.GetRecord(ctx, "q/b"); !errors.Is(err, ErrRecordNotFound) {
		t.Fatalf("record of a failed assign: %v", err)
	}
	// One record's condition fails: no record, no move.
	_, err = s.AssignRef(ctx, AssignRefRequest{Name: "cand", Expected: NoAncestor, Target: c.Commit.Hash, Records: []Record{
		{Key: "q/b", Value: []byte("merged")},
		{Key: "q/a", Value: []byte("merged"), If: &RecordCondition{Exists: true, Value: []byte("queued")}},
	}})
	if !errors.Is(err, ErrRecordConflict) {
		t.Fatalf("assign with a failed condition: %v", err)
	}
	if head(t, s, "cand") != NoAncestor {
		t.Fatal("a refused assign moved the reference")
	}
	if _, err := s.GetRecord(ctx, "q/b"); !errors.Is(err, ErrRecordNotFound) {
		t.Fatalf("record of a refused assign: %v", err)
	}
	// Both conditions hold: the move and both records, durably.
	_, err = s.AssignRef(ctx, AssignRefRequest{Name: "cand", Expected: NoAncestor, Target: c.Commit.Hash, Records: []Record{
		{Key: "q/b", Value: []byte("merged")},
		{Key: "q/a", Value: []byte("merged"), If: &RecordCondition{Exists: true, Value: []byte("validating")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStoreAt(t, dir, Options{})
	if head(t, s2, "cand") != c.Commit.Hash {
		t.Fatal("assign not durable")
	}
	for _, k := range []string{"q/a", "q/b"} {
		if r, err := s2.GetRecord(ctx, k); err != nil || string(r.Value) != "merged" {
			t.Fatalf("record %s after reopen: %v %v", k, r, err)
		}
	}
}
