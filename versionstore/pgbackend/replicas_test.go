package pgbackend_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pgbackend"
)

// openReplicas opens n version stores over one schema, as n floe replicas
// over one database, all at once (the first start initialises main; the
// others must find it).
func openReplicas(t testing.TB, n int) []*versionstore.Store {
	t.Helper()
	c := pgtest.Need(t, cluster)
	dsn, err := c.Schema(t.Context(), pgtest.SchemaName(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	stores := make([]*versionstore.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			be, err := pgbackend.Open(context.Background(), dsn, pgbackend.Options{})
			if err != nil {
				errs[i] = err
				return
			}
			s, err := versionstore.Open(context.Background(), be, versionstore.Options{})
			if err != nil {
				errs[i] = errors.Join(err, be.Close())
				return
			}
			stores[i] = s
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range stores {
			if s != nil {
				s.Close()
			}
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: open: %v", i, err)
		}
	}
	return stores
}

func putTable(name string) versionstore.Operation {
	k := versionstore.ContentKey{"ns", name}
	return versionstore.Operation{Kind: versionstore.OpPut, Key: k, Content: &versionstore.Content{
		Type: versionstore.IcebergTable, MetadataLocation: "file:///w/ns/" + name + "/metadata/00000.metadata.json",
	}}
}

func commitOn(ctx context.Context, s *versionstore.Store, branch string, ops ...versionstore.Operation) (*versionstore.CommitResult, error) {
	r, err := s.GetRef(branch)
	if err != nil {
		return nil, err
	}
	return s.Commit(ctx, versionstore.CommitRequest{Branch: branch, Expected: r.Head, Operations: ops, Meta: versionstore.CommitMeta{Message: "test"}, Committer: "test"})
}

// TestReplicasReadTheirWrites: a commit acknowledged by one replica is seen
// by every other at once, heads never go back, and a branch created on one
// replica can be committed to through another.
func TestReplicasReadTheirWrites(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs := openReplicas(t, 3)
	if _, err := commitOn(ctx, rs[0], "main", versionstore.Operation{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns"}, Content: &versionstore.Content{Type: versionstore.Namespace}}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		w := rs[i%3]
		res, err := commitOn(ctx, w, "main", putTable(fmt.Sprintf("t%d", i)))
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		for j, r := range rs {
			got, err := r.GetRef("main")
			if err != nil {
				t.Fatal(err)
			}
			if got.Head != res.Commit.Hash {
				t.Fatalf("commit %d on replica %d: replica %d reads head %s, want %s", i, i%3, j, got.Head, res.Commit.Hash)
			}
			resolved, err := r.Resolve(ctx, "main")
			if err != nil || resolved.Hash != res.Commit.Hash {
				t.Fatalf("replica %d resolves main to %v, %v; want %s", j, resolved, err, res.Commit.Hash)
			}
		}
	}
	head, _ := rs[0].GetRef("main")
	if _, err := rs[1].CreateRef(ctx, versionstore.CreateRefRequest{Name: "dev", Type: versionstore.Branch, Target: head.Head, Principal: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := commitOn(ctx, rs[2], "dev", putTable("on-dev")); err != nil {
		t.Fatalf("commit through another replica to a branch created on one: %v", err)
	}
	found := false
	for _, r := range rs[0].ListRefs() {
		found = found || r.Name == "dev"
	}
	if !found {
		t.Fatal("a replica does not list a branch another created")
	}
}

// TestReplicasConcurrentDistinctKeys: committers on three replicas add
// distinct tables to one branch at once. Every commit must succeed (the
// store rebases a round whose compare-and-swap another replica won), and
// every table must be on the branch exactly once.
func TestReplicasConcurrentDistinctKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs := openReplicas(t, 3)
	if _, err := commitOn(ctx, rs[0], "main", versionstore.Operation{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns"}, Content: &versionstore.Content{Type: versionstore.Namespace}}); err != nil {
		t.Fatal(err)
	}
	const committers, each = 24, 10
	var wg sync.WaitGroup
	errs := make(chan error, committers*each)
	for c := range committers {
		wg.Go(func() {
			s := rs[c%len(rs)]
			for i := range each {
				if _, err := commitOn(ctx, s, "main", putTable(fmt.Sprintf("c%02d-%02d", c, i))); err != nil {
					errs <- fmt.Errorf("committer %d commit %d: %w", c, i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	head, err := rs[1].GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := rs[2].Entries(ctx, head.Head, versionstore.EntriesOptions{Prefix: versionstore.ContentKey{"ns"}})
	if err != nil {
		t.Fatal(err)
	}
	tables := 0
	for _, e := range entries {
		if e.Type == versionstore.IcebergTable {
			tables++
		}
	}
	if tables != committers*each {
		t.Fatalf("%d tables on main, want %d", tables, committers*each)
	}
	commits, _, err := rs[0].Log(ctx, head.Head, versionstore.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := committers*each + 2; len(commits) != want { // + the namespace commit and main's root
		t.Logf("log has %d commits (including the namespace's)", len(commits))
	}
	var retries uint64
	for _, r := range rs {
		retries += r.Stats().BackendRetries.Load()
	}
	t.Logf("%d rounds were rebased after another replica won the compare-and-swap", retries)
	if retries == 0 {
		t.Log("no cross-replica conflict happened; the retry path was not exercised this run")
	}
}

// TestReplicasConflictingKey: two replicas committing the same key from the
// same expected head: exactly one wins, the other gets a conflict (not a
// lost update).
func TestReplicasConflictingKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs := openReplicas(t, 2)
	if _, err := commitOn(ctx, rs[0], "main", versionstore.Operation{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns"}, Content: &versionstore.Content{Type: versionstore.Namespace}}); err != nil {
		t.Fatal(err)
	}
	base, _ := rs[0].GetRef("main")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			_, errs[i] = rs[i].Commit(ctx, versionstore.CommitRequest{Branch: "main", Expected: base.Head, Operations: []versionstore.Operation{putTable("same")}, Committer: "test"})
		})
	}
	wg.Wait()
	ok, conflicts := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, versionstore.ErrReferenceConflict):
			conflicts++
		default:
			t.Fatalf("commit: %v", err)
		}
	}
	if ok != 1 || conflicts != 1 {
		t.Fatalf("%d commits succeeded and %d conflicted, want 1 and 1", ok, conflicts)
	}
}

// TestReplicasNoLostUpdateUnderContention: committers on three replicas
// read a shared table's version and write the next one, each from the head
// it read, while others keep the branch contended with distinct tables, so
// rounds go through the row lock and are built on heads other replicas
// wrote. A commit from a stale head must conflict and be retried, never
// overwrite: the table ends at exactly the number of acknowledged updates.
func TestReplicasNoLostUpdateUnderContention(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs := openReplicas(t, 3)
	if _, err := commitOn(ctx, rs[0], "main", versionstore.Operation{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns"}, Content: &versionstore.Content{Type: versionstore.Namespace}}); err != nil {
		t.Fatal(err)
	}
	shared := versionstore.ContentKey{"ns", "shared"}
	version := func(c *versionstore.Content) int {
		var v int
		if _, err := fmt.Sscanf(c.MetadataLocation, "file:///w/ns/shared/v%d.json", &v); err != nil {
			t.Errorf("shared table at %q: %v", c.MetadataLocation, err)
		}
		return v
	}
	if _, err := commitOn(ctx, rs[0], "main", versionstore.Operation{Kind: versionstore.OpPut, Key: shared, Content: &versionstore.Content{
		Type: versionstore.IcebergTable, MetadataLocation: "file:///w/ns/shared/v0.json"}}); err != nil {
		t.Fatal(err)
	}
	const updaters, updates, fillers = 6, 15, 12
	var (
		wg        sync.WaitGroup
		done      = make(chan struct{})
		conflicts atomic.Int64
	)
	for f := range fillers {
		wg.Go(func() {
			s := rs[f%len(rs)]
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if _, err := commitOn(ctx, s, "main", putTable(fmt.Sprintf("fill%02d-%04d", f, i))); err != nil {
					t.Errorf("filler %d: %v", f, err)
					return
				}
			}
		})
	}
	var upd sync.WaitGroup
	for u := range updaters {
		upd.Go(func() {
			s := rs[u%len(rs)]
			for n := 0; n < updates; {
				head, err := s.GetRef("main")
				if err != nil {
					t.Error(err)
					return
				}
				c, err := s.GetContent(ctx, head.Head, shared)
				if err != nil {
					t.Error(err)
					return
				}
				next := *c
				next.MetadataLocation = fmt.Sprintf("file:///w/ns/shared/v%d.json", version(c)+1)
				_, err = s.Commit(ctx, versionstore.CommitRequest{Branch: "main", Expected: head.Head, Committer: "test",
					Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: shared, Content: &next}}})
				switch {
				case err == nil:
					n++
				case errors.Is(err, versionstore.ErrReferenceConflict):
					conflicts.Add(1)
				default:
					t.Errorf("updater %d: %v", u, err)
					return
				}
			}
		})
	}
	upd.Wait()
	// The fillers go on until some round took the lock, so the contended
	// path is exercised however the scheduler ran the updaters.
	for deadline := time.Now().Add(20 * time.Second); lockedRounds(rs) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	head, err := rs[2].GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rs[1].GetContent(ctx, head.Head, shared)
	if err != nil {
		t.Fatal(err)
	}
	if got := version(c); got != updaters*updates {
		t.Fatalf("shared table at version %d after %d acknowledged updates: updates were lost", got, updaters*updates)
	}
	t.Logf("%d stale updates conflicted and were retried", conflicts.Load())
	if lockedRounds(rs) == 0 {
		t.Error("no round waited for the ref's row lock: the contended path was not exercised")
	}
}

func lockedRounds(rs []*versionstore.Store) uint64 {
	var n uint64
	for _, r := range rs {
		n += r.Stats().LockedRounds.Load()
	}
	return n
}
