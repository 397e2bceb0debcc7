package versionstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/versionstore/backend"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// mergeFixture is main with db, db.a and db.gone, and dev, branched from
// it, changing db.a, adding db.new and deleting db.gone.
type mergeFixture struct {
	s       *Store
	base    Hash // where dev branched
	devHead Hash
	aID     string
}

func newMergeFixture(t *testing.T, opts Options) *mergeFixture {
	t.Helper()
	ctx := t.Context()
	s := openTestStore(t, opts)
	base := mustCommit(t, s, "main", put(key("db"), ns()), put(key("db", "a"), table("a1")), put(key("db", "gone"), table("g1")))
	if _, err := s.CreateRef(ctx, CreateRefRequest{Name: "dev", Type: Branch, Target: base.Commit.Hash}); err != nil {
		t.Fatal(err)
	}
	a, err := s.GetContent(ctx, base.Commit.Hash, key("db", "a"))
	if err != nil {
		t.Fatal(err)
	}
	a2 := table("a2")
	a2.ID = a.ID
	mustCommit(t, s, "dev", put(key("db", "a"), a2), put(key("db", "new"), table("n1")))
	d := mustCommit(t, s, "dev", del(key("db", "gone")))
	return &mergeFixture{s: s, base: base.Commit.Hash, devHead: d.Commit.Hash, aID: a.ID}
}

func (f *mergeFixture) merge(ctx context.Context, mutate func(*MergeRequest)) (*MergeResult, error) {
	req := MergeRequest{Target: "main", ExpectedTarget: f.s.refs.get("main").Head, From: f.devHead, FromRef: "dev", Committer: "tester"}
	if mutate != nil {
		mutate(&req)
	}
	return f.s.Merge(ctx, req)
}

func wantNoRecord(t *testing.T, s *Store, key string) {
	t.Helper()
	if r, err := s.GetRecord(t.Context(), key); !errors.Is(err, ErrRecordNotFound) {
		t.Fatalf("record %q: got %+v, %v; want none", key, r, err)
	}
}

func wantRecordValue(t *testing.T, s *Store, key, value string) {
	t.Helper()
	r, err := s.GetRecord(t.Context(), key)
	if err != nil || string(r.Value) != value {
		t.Fatalf("record %q: got %+v, %v; want %q", key, r, err, value)
	}
}

// TestMergeCarriesRecord: a merge's or transplant's record is written iff
// its commit is: never for a dry run, a conflict, a refused check, a merge
// with nothing to do, or a conditional record whose condition fails.
func TestMergeCarriesRecord(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newMergeFixture(t, Options{})
	s := f.s
	rec := func(k string) *Record { return &Record{Key: k, Value: []byte("done")} }
	mainBefore := head(t, s, "main")

	if _, err := f.merge(ctx, func(r *MergeRequest) { r.DryRun, r.Record = true, rec("q/dry") }); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	wantNoRecord(t, s, "q/dry")

	denied := errors.New("denied")
	if _, err := f.merge(ctx, func(r *MergeRequest) {
		r.Record = rec("q/denied")
		r.Check = func(context.Context, []CheckedChange) error { return denied }
	}); !errors.Is(err, denied) {
		t.Fatalf("refused merge: %v", err)
	}
	wantNoRecord(t, s, "q/denied")

	if _, err := f.merge(ctx, func(r *MergeRequest) {
		r.Record = &Record{Key: "q/cas", Value: []byte("x"), If: &RecordCondition{Exists: true, Value: []byte("old")}}
	}); !errors.Is(err, ErrRecordConflict) {
		t.Fatalf("merge with a failing record condition: %v, want ErrRecordConflict", err)
	}
	wantNoRecord(t, s, "q/cas")
	if h := head(t, s, "main"); h != mainBefore {
		t.Fatalf("main moved to %s though nothing may be written", h)
	}

	// A conflict: main changes db.a too.
	conflicting := *f
	mustCommit(t, s, "main", put(key("db", "other"), table("o1")))
	mark := head(t, s, "main")
	a3 := table("a3")
	a3.ID = f.aID
	mustCommit(t, s, "main", put(key("db", "a"), a3))
	res, err := conflicting.merge(ctx, func(r *MergeRequest) { r.Record = rec("q/conflict") })
	if !errors.Is(err, ErrReferenceConflict) || res == nil || res.WasApplied {
		t.Fatalf("conflicting merge: %+v, %v", res, err)
	}
	wantNoRecord(t, s, "q/conflict")

	// Undo main's change of db.a, then merge for real, with a
	// create-if-absent record.
	if _, err := s.AssignRef(ctx, AssignRefRequest{Name: "main", Expected: head(t, s, "main"), Target: mark}); err != nil {
		t.Fatal(err)
	}
	res, err = f.merge(ctx, func(r *MergeRequest) {
		r.Record = &Record{Key: "q/ok", Value: []byte("merged"), If: &RecordCondition{}}
	})
	if err != nil || !res.WasApplied {
		t.Fatalf("merge: %+v, %v", res, err)
	}
	wantRecordValue(t, s, "q/ok", "merged")

	// Merged already: nothing to write, so no record either.
	res, err = f.merge(ctx, func(r *MergeRequest) { r.Record = rec("q/noop") })
	if err != nil || res.WasApplied || !res.WasSuccessful {
		t.Fatalf("second merge: %+v, %v", res, err)
	}
	wantNoRecord(t, s, "q/noop")

	// Transplants: the record rides with the replayed commits.
	if _, err := s.CreateRef(ctx, CreateRefRequest{Name: "fix", Type: Branch, Target: f.base}); err != nil {
		t.Fatal(err)
	}
	devLog, _, err := s.Log(ctx, f.devHead, LogOptions{Until: f.base})
	if err != nil {
		t.Fatal(err)
	}
	picks := []Hash{devLog[1].Hash, devLog[0].Hash}
	tr := TransplantRequest{Target: "fix", ExpectedTarget: f.base, Commits: picks, Committer: "tester", DryRun: true, Record: rec("q/tdry")}
	if _, err := s.Transplant(ctx, tr); err != nil {
		t.Fatal(err)
	}
	wantNoRecord(t, s, "q/tdry")
	tr.DryRun, tr.Record = false, rec("q/t")
	if res, err := s.Transplant(ctx, tr); err != nil || len(res.Commits) != 2 {
		t.Fatalf("transplant: %+v, %v", res, err)
	}
	wantRecordValue(t, s, "q/t", "done")
}

// TestRecordsWithoutExpiryAndCompareAndSwap covers conditional record
// writes on their own and in commits, and records that never expire.
func TestRecordsWithoutExpiryAndCompareAndSwap(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	s := openTestStore(t, Options{Now: func() time.Time { return *clock.Load() }})

	if err := s.PutRecord(ctx, Record{Key: "queue/1", Value: []byte("queued")}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRecord(ctx, Record{Key: "idem/1", Value: []byte("r"), Expires: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	far := now.Add(10 * 365 * 24 * time.Hour)
	clock.Store(&far)
	if n, err := s.ExpireRecords(ctx, far); err != nil || n != 1 {
		t.Fatalf("expired %d records, %v; want only the one with an expiry", n, err)
	}
	r, err := s.GetRecord(ctx, "queue/1")
	if err != nil || string(r.Value) != "queued" || !r.Expires.IsZero() {
		t.Fatalf("record without expiry after ten years and a sweep: %+v, %v", r, err)
	}

	cas := func(k, old, v string) error {
		return s.PutRecord(ctx, Record{Key: k, Value: []byte(v), If: &RecordCondition{Exists: true, Value: []byte(old)}})
	}
	if err := cas("queue/1", "queued", "running"); err != nil {
		t.Fatalf("compare-and-swap: %v", err)
	}
	if err := cas("queue/1", "queued", "stolen"); !errors.Is(err, ErrRecordConflict) {
		t.Fatalf("stale compare-and-swap: %v, want ErrRecordConflict", err)
	}
	if err := cas("queue/absent", "x", "y"); !errors.Is(err, ErrRecordConflict) {
		t.Fatalf("compare-and-swap of an absent record: %v, want ErrRecordConflict", err)
	}
	wantRecordValue(t, s, "queue/1", "running")
	create := func(k, v string) error {
		return s.PutRecord(ctx, Record{Key: k, Value: []byte(v), If: &RecordCondition{}})
	}
	if err := create("queue/1", "again"); !errors.Is(err, ErrRecordConflict) {
		t.Fatalf("create-if-absent of a live record: %v, want ErrRecordConflict", err)
	}
	// An expired record counts as absent, before and after the sweep.
	if err := s.PutRecord(ctx, Record{Key: "idem/2", Value: []byte("old"), Expires: far.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	later := far.Add(time.Hour)
	clock.Store(&later)
	if err := create("idem/2", "new"); err != nil {
		t.Fatalf("create-if-absent over an expired record: %v", err)
	}
	if n, err := s.ExpireRecords(ctx, later); err != nil || n != 0 {
		t.Fatalf("sweep after the expired record was replaced: %d, %v", n, err)
	}
	wantRecordValue(t, s, "idem/2", "new")

	// In a commit: a failing condition fails the commit.
	h := head(t, s, "main")
	_, err = s.Commit(ctx, CommitRequest{Branch: "main", Expected: h, Operations: []Operation{put(key("ns"), ns())},
		Record: &Record{Key: "queue/1", Value: []byte("x"), If: &RecordCondition{Exists: true, Value: []byte("queued")}}})
	if !errors.Is(err, ErrRecordConflict) {
		t.Fatalf("commit with a stale record condition: %v, want ErrRecordConflict", err)
	}
	if head(t, s, "main") != h {
		t.Fatal("main moved though the commit's record condition failed")
	}
	if _, err := s.Commit(ctx, CommitRequest{Branch: "main", Expected: h, Operations: []Operation{put(key("ns"), ns())},
		Record: &Record{Key: "queue/1", Value: []byte("done"), If: &RecordCondition{Exists: true, Value: []byte("running")}}}); err != nil {
		t.Fatalf("commit with a record condition that holds: %v", err)
	}
	wantRecordValue(t, s, "queue/1", "done")
}

// TestConcurrentConditionalRecordsInCommits: many commits race to claim
// one record with create-if-absent, beside plain commits, on one branch,
// so group-commit rounds mix them. Exactly one claim wins; every loser
// fails with ErrRecordConflict and writes nothing; plain commits all land.
func TestConcurrentConditionalRecordsInCommits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTestStore(t, Options{})
	mustCommit(t, s, "main", put(key("db"), ns()))
	const writers = 16
	var wg sync.WaitGroup
	var won, lost, plain atomic.Int64
	errs := make(chan error, 2*writers)
	for i := 0; i < writers; i++ {
		for _, claim := range []bool{true, false} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("t%d-%v", i, claim)
				req := CommitRequest{Branch: "main", Expected: s.refs.get("main").Head,
					Operations: []Operation{put(key("db", name), table(name))}, Committer: "tester"}
				if claim {
					req.Record = &Record{Key: "claim", Value: []byte(name), If: &RecordCondition{}}
				}
				_, err := s.Commit(ctx, req)
				switch {
				case err == nil && claim:
					won.Add(1)
				case err == nil:
					plain.Add(1)
				case claim && errors.Is(err, ErrRecordConflict):
					lost.Add(1)
					if _, err := s.GetContent(ctx, s.refs.get("main").Head, key("db", name)); !errors.Is(err, ErrContentNotFound) {
						errs <- fmt.Errorf("losing claim %s was committed: %v", name, err)
					}
				default:
					errs <- fmt.Errorf("%s: %w", name, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if won.Load() != 1 || lost.Load() != writers-1 || plain.Load() != writers {
		t.Fatalf("claims won %d, lost %d, plain commits %d; want 1, %d, %d", won.Load(), lost.Load(), plain.Load(), writers-1, writers)
	}
	r, err := s.GetRecord(ctx, "claim")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetContent(ctx, s.refs.get("main").Head, key("db", string(r.Value))); err != nil {
		t.Fatalf("the winning claim %s has no commit: %v", r.Value, err)
	}
}

// TestCheckRunsOutsideCommitter: a merge's check runs on the caller's
// goroutine (it can itself commit to the target, which would deadlock on
// the committer), and when the target changes the merged keys between
// check and commit, the merge is computed again and checked again on the
// new changes, which are the ones written. A move that leaves the merged
// keys alone needs no second check; a target that keeps moving ends in a
// conflict after a bounded number of attempts.
func TestCheckRunsOutsideCommitter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	type call struct{ before, after string }
	loc := func(c *Content) string {
		if c == nil {
			return "-"
		}
		return c.MetadataLocation
	}
	seenA := func(changes []CheckedChange) call {
		for _, c := range changes {
			if c.Key.String() == "db.a" {
				return call{loc(c.Before), loc(c.After)}
			}
		}
		return call{}
	}

	t.Run("changed keys are checked again", func(t *testing.T) {
		f := newMergeFixture(t, Options{})
		var calls []call
		res, err := f.merge(ctx, func(r *MergeRequest) {
			r.DefaultMode = MergeForce
			r.Check = func(_ context.Context, changes []CheckedChange) error {
				calls = append(calls, seenA(changes))
				if len(calls) == 1 {
					a3 := table("a3")
					a3.ID = f.aID
					mustCommit(t, f.s, "main", put(key("db", "a"), a3))
				}
				return nil
			}
		})
		if err != nil || !res.WasApplied {
			t.Fatalf("merge: %+v, %v", res, err)
		}
		want := []call{{"a1", "a2"}, {"a3", "a2"}}
		if fmt.Sprint(calls) != fmt.Sprint(want) {
			t.Fatalf("checks saw db.a as %v, want %v", calls, want)
		}
		c, err := f.s.ReadCommit(ctx, res.ResultantHash)
		if err != nil || len(c.Parents) != 2 {
			t.Fatalf("merge commit: %+v, %v", c, err)
		}
		prev, err := f.s.GetContent(ctx, c.Parents[0], key("db", "a"))
		if err != nil || prev.MetadataLocation != "a3" {
			t.Fatalf("merge commit's first parent holds db.a = %+v, %v; want the a3 the second check saw", prev, err)
		}
	})

	t.Run("unrelated moves need no second check", func(t *testing.T) {
		f := newMergeFixture(t, Options{})
		calls := 0
		res, err := f.merge(ctx, func(r *MergeRequest) {
			r.Check = func(context.Context, []CheckedChange) error {
				calls++
				mustCommit(t, f.s, "main", put(key("db", fmt.Sprint("other", calls)), table("o")))
				return nil
			}
		})
		if err != nil || !res.WasApplied || calls != 1 {
			t.Fatalf("merge: %+v, %v, %d checks; want applied after one check", res, err, calls)
		}
	})

	t.Run("a target that keeps moving is a conflict", func(t *testing.T) {
		f := newMergeFixture(t, Options{})
		calls := 0
		before := head(t, f.s, "main")
		_, err := f.merge(ctx, func(r *MergeRequest) {
			r.DefaultMode = MergeForce
			r.Record = &Record{Key: "q", Value: []byte("x")}
			r.Check = func(context.Context, []CheckedChange) error {
				calls++
				a := table(fmt.Sprint("a-main-", calls))
				a.ID = f.aID
				mustCommit(t, f.s, "main", put(key("db", "a"), a))
				return nil
			}
		})
		if !errors.Is(err, ErrReferenceConflict) || calls != maxPlanAttempts {
			t.Fatalf("merge on a moving target: %v after %d checks; want a conflict after %d", err, calls, maxPlanAttempts)
		}
		if got, _, err := f.s.Log(ctx, head(t, f.s, "main"), LogOptions{Until: before}); err != nil || len(got)-1 != maxPlanAttempts {
			t.Fatalf("main has %d new commits (%v), want only the %d the check made", len(got)-1, err, maxPlanAttempts)
		}
		wantNoRecord(t, f.s, "q")
	})

	t.Run("transplant", func(t *testing.T) {
		f := newMergeFixture(t, Options{})
		devLog, _, err := f.s.Log(ctx, f.devHead, LogOptions{Until: f.base})
		if err != nil {
			t.Fatal(err)
		}
		var calls []call
		res, err := f.s.Transplant(ctx, TransplantRequest{Target: "main", ExpectedTarget: head(t, f.s, "main"),
			Commits: []Hash{devLog[1].Hash, devLog[0].Hash}, DefaultMode: MergeForce, Committer: "tester",
			Check: func(_ context.Context, changes []CheckedChange) error {
				calls = append(calls, seenA(changes))
				if len(calls) == 1 {
					a3 := table("a3")
					a3.ID = f.aID
					mustCommit(t, f.s, "main", put(key("db", "a"), a3))
				}
				return nil
			}})
		if err != nil || !res.WasApplied {
			t.Fatalf("transplant: %+v, %v", res, err)
		}
		if want := []call{{"a1", "a2"}, {"a3", "a2"}}; fmt.Sprint(calls) != fmt.Sprint(want) {
			t.Fatalf("checks saw db.a as %v, want %v", calls, want)
		}
	})
}

// TestMergeResolvedContent: a merge resolves a key changed on both sides
// with content the caller computed, only while the target holds what the
// caller resolved against, as a commit with two parents.
func TestMergeResolvedContent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newMergeFixture(t, Options{})
	s := f.s
	a3 := table("a3")
	a3.ID = f.aID
	mustCommit(t, s, "main", put(key("db", "a"), a3))
	mainA, err := s.GetContent(ctx, head(t, s, "main"), key("db", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.merge(ctx, nil); !errors.Is(err, ErrReferenceConflict) {
		t.Fatalf("merge without a resolution: %v, want a conflict on db.a", err)
	}
	gone, err := s.GetContent(ctx, head(t, s, "main"), key("db", "gone"))
	if err != nil {
		t.Fatal(err)
	}
	resolved := &Content{Type: IcebergTable, MetadataLocation: "a-resolved", SnapshotID: 7}
	mode := KeyMergeMode{Key: key("db", "a"), Behavior: MergeNormal, ExpectedTarget: mainA, Resolved: resolved}

	invalid := []struct {
		name string
		mode KeyMergeMode
	}{
		{"without expected target", KeyMergeMode{Key: key("db", "a"), Behavior: MergeNormal, Resolved: resolved}},
		{"with FORCE", KeyMergeMode{Key: key("db", "a"), Behavior: MergeForce, ExpectedTarget: mainA, Resolved: resolved}},
		{"with another content id", KeyMergeMode{Key: key("db", "a"), Behavior: MergeNormal, ExpectedTarget: mainA,
			Resolved: &Content{Type: IcebergTable, ID: "other", MetadataLocation: "x"}}},
		{"for a key the source deletes", KeyMergeMode{Key: key("db", "gone"), Behavior: MergeNormal, ExpectedTarget: gone,
			Resolved: &Content{Type: IcebergTable, MetadataLocation: "x"}}},
	}
	for _, tc := range invalid {
		modes := []KeyMergeMode{tc.mode}
		if tc.mode.Key.String() != "db.a" {
			modes = append(modes, mode)
		}
		if _, err := f.merge(ctx, func(r *MergeRequest) { r.KeyModes = modes }); !errors.Is(err, ErrInvalid) {
			t.Errorf("resolved content %s: %v, want ErrInvalid", tc.name, err)
		}
	}
	if _, err := s.Transplant(ctx, TransplantRequest{Target: "main", ExpectedTarget: head(t, s, "main"), Commits: []Hash{f.devHead},
		KeyModes: []KeyMergeMode{mode}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("transplant with resolved content for a key it does not put: %v, want ErrInvalid", err)
	}

	// The target moves on db.a after the caller resolved: a conflict,
	// nothing written.
	stale := *mainA
	stale.MetadataLocation = "a-older"
	staleMode := mode
	staleMode.ExpectedTarget = &stale
	before := head(t, s, "main")
	res, err := f.merge(ctx, func(r *MergeRequest) { r.KeyModes = []KeyMergeMode{staleMode} })
	if !errors.Is(err, ErrReferenceConflict) || res == nil || res.WasApplied || head(t, s, "main") != before {
		t.Fatalf("merge resolved against a stale target value: %+v, %v", res, err)
	}
	if d := detailFor(res, "db.a"); d == nil || d.Conflict == nil {
		t.Fatalf("stale resolution: no conflict reported for db.a: %+v", res.Details)
	}

	// Resolving to the target's own value keeps it: nothing to write
	// for db.a, the rest merges.
	keep := mode
	keep.Resolved = mainA.Clone()
	res, err = f.merge(ctx, func(r *MergeRequest) { r.KeyModes, r.DryRun = []KeyMergeMode{keep}, true })
	if err != nil || !res.WasSuccessful {
		t.Fatalf("resolving db.a to the target's value: %+v, %v", res, err)
	}

	var checked []CheckedChange
	res, err = f.merge(ctx, func(r *MergeRequest) {
		r.KeyModes = []KeyMergeMode{mode}
		r.Check = func(_ context.Context, cs []CheckedChange) error { checked = cs; return nil }
	})
	if err != nil || !res.WasApplied {
		t.Fatalf("merge with resolved content: %+v, %v", res, err)
	}
	c, err := s.ReadCommit(ctx, res.ResultantHash)
	if err != nil || len(c.Parents) != 2 || c.Parents[1] != f.devHead {
		t.Fatalf("merge commit %+v, %v; want two parents, the second the source", c, err)
	}
	got, err := s.GetContent(ctx, res.ResultantHash, key("db", "a"))
	if err != nil || got.MetadataLocation != "a-resolved" || got.SnapshotID != 7 || got.ID != f.aID {
		t.Fatalf("db.a after the merge: %+v, %v; want the resolved content under its id", got, err)
	}
	if n, err := s.GetContent(ctx, res.ResultantHash, key("db", "new")); err != nil || n.MetadataLocation != "n1" {
		t.Fatalf("db.new after the merge: %+v, %v", n, err)
	}
	var sawA bool
	for _, ch := range checked {
		if ch.Key.String() == "db.a" {
			sawA = ch.Before.MetadataLocation == "a3" && ch.After.MetadataLocation == "a-resolved"
		}
	}
	if !sawA {
		t.Fatalf("the check did not see db.a go from a3 to the resolved content: %+v", checked)
	}
}

// TestTransplantResolvedContent: a transplant resolves a key changed on
// both sides with content the caller computed (the merge engine's
// cherry-pick of a transplanted table), in the replay of the commit that
// changes it, only while the target holds what the caller resolved
// against; resolved content for a key no commit puts is refused.
func TestTransplantResolvedContent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newMergeFixture(t, Options{})
	s := f.s
	a3 := table("a3")
	a3.ID = f.aID
	mustCommit(t, s, "main", put(key("db", "a"), a3))
	mainA, err := s.GetContent(ctx, head(t, s, "main"), key("db", "a"))
	if err != nil {
		t.Fatal(err)
	}
	dev, err := s.ReadCommit(ctx, f.devHead)
	if err != nil {
		t.Fatal(err)
	}
	putA := dev.Parent() // puts db.a and db.new
	transplant := func(modes ...KeyMergeMode) (*MergeResult, error) {
		return s.Transplant(ctx, TransplantRequest{Target: "main", ExpectedTarget: head(t, s, "main"), Commits: []Hash{putA}, KeyModes: modes, Committer: "tester"})
	}
	if _, err := transplant(); !errors.Is(err, ErrReferenceConflict) {
		t.Fatalf("transplant without a resolution: %v, want a conflict on db.a", err)
	}
	resolved := &Content{Type: IcebergTable, MetadataLocation: "a-picked", SnapshotID: 9}
	stale := *mainA
	stale.MetadataLocation = "a-older"
	before := head(t, s, "main")
	if res, err := transplant(KeyMergeMode{Key: key("db", "a"), Behavior: MergeNormal, ExpectedTarget: &stale, Resolved: resolved}); !errors.Is(err, ErrReferenceConflict) || head(t, s, "main") != before {
		t.Fatalf("transplant resolved against a stale target value: %+v, %v", res, err)
	}
	res, err := transplant(KeyMergeMode{Key: key("db", "a"), Behavior: MergeNormal, ExpectedTarget: mainA, Resolved: resolved})
	if err != nil || !res.WasApplied || len(res.Commits) != 1 || len(res.Commits[0].Parents) != 1 {
		t.Fatalf("transplant with resolved content: %+v, %v", res, err)
	}
	got, err := s.GetContent(ctx, res.ResultantHash, key("db", "a"))
	if err != nil || got.MetadataLocation != "a-picked" || got.ID != f.aID {
		t.Fatalf("db.a after the transplant: %+v, %v; want the resolved content under its id", got, err)
	}
	if n, err := s.GetContent(ctx, res.ResultantHash, key("db", "new")); err != nil || n.MetadataLocation != "n1" {
		t.Fatalf("db.new after the transplant: %+v, %v", n, err)
	}
	// f.devHead only deletes db.gone: resolved content for db.a is unused.
	if _, err := s.Transplant(ctx, TransplantRequest{Target: "main", ExpectedTarget: head(t, s, "main"), Commits: []Hash{f.devHead},
		KeyModes: []KeyMergeMode{{Key: key("db", "a"), Behavior: MergeNormal, ExpectedTarget: got, Resolved: resolved}}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("transplant with resolved content for a key it does not put: %v, want ErrInvalid", err)
	}
}

func detailFor(res *MergeResult, k string) *KeyDetail {
	for i := range res.Details {
		if res.Details[i].Key.String() == k {
			return &res.Details[i]
		}
	}
	return nil
}

// readFaultBackend fails reads of one object on chosen calls.
type readFaultBackend struct {
	backend.Backend
	mu     sync.Mutex
	target backend.ObjectID
	reads  int // reads of target since armed
	failAt int // 0: never
}

var errInjected = errors.New("injected read failure")

func (b *readFaultBackend) GetObject(ctx context.Context, id backend.ObjectID) ([]byte, error) {
	b.mu.Lock()
	if id == b.target && b.failAt > 0 {
		b.reads++
		if b.reads == b.failAt {
			b.mu.Unlock()
			return nil, errInjected
		}
	}
	b.mu.Unlock()
	return b.Backend.GetObject(ctx, id)
}

func (b *readFaultBackend) arm(target Hash, failAt int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.target, b.reads, b.failAt = backend.ObjectID(target), 0, failAt
}

// TestMergeParentReadFailureFailsMerge: whichever read of the merge source
// fails, the merge fails and main stays put; it never lands with a
// generation number computed without its source. A cache of one byte
// sends every read to the backend.
func TestMergeParentReadFailureFailsMerge(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pb, err := pebblebackend.Open(t.TempDir(), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fb := &readFaultBackend{Backend: pb}
	s, err := Open(ctx, fb, Options{CacheBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	base := mustCommit(t, s, "main", put(key("db"), ns()))
	if _, err := s.CreateRef(ctx, CreateRefRequest{Name: "dev", Type: Branch, Target: base.Commit.Hash}); err != nil {
		t.Fatal(err)
	}
	var from *Commit
	for i := 0; i < 4; i++ { // dev's generation numbers run ahead of main's
		from = mustCommit(t, s, "dev", put(key("db", fmt.Sprint("t", i)), table("x"))).Commit
	}
	before := head(t, s, "main")
	merge := func() (*MergeResult, error) {
		return s.Merge(ctx, MergeRequest{Target: "main", ExpectedTarget: before, From: from.Hash, Committer: "tester"})
	}

	// Count the reads of the source a merge makes.
	fb.arm(from.Hash, 1<<30)
	res, err := merge()
	if err != nil {
		t.Fatal(err)
	}
	reads := fb.reads
	fb.arm(from.Hash, 0)
	c, err := s.ReadCommit(ctx, res.ResultantHash)
	if err != nil || c.Seq != from.Seq+1 {
		t.Fatalf("merge commit %+v, %v; want seq %d", c, err, from.Seq+1)
	}
	if _, err := s.AssignRef(ctx, AssignRefRequest{Name: "main", Expected: res.ResultantHash, Target: before}); err != nil {
		t.Fatal(err)
	}
	if reads == 0 {
		t.Fatal("the merge never read its source from the backend: the test tests nothing")
	}
	for k := 1; k <= reads; k++ {
		fb.arm(from.Hash, k)
		res, err := merge()
		fb.arm(from.Hash, 0)
		if !errors.Is(err, errInjected) {
			if res != nil && res.WasApplied {
				c, _ := s.ReadCommit(ctx, res.ResultantHash)
				t.Fatalf("read %d of %d of the source failed, yet the merge landed (seq %d, source's %d)", k, reads, c.Seq, from.Seq)
			}
			t.Fatalf("read %d of %d of the source failed: merge error %v, want the injected one", k, reads, err)
		}
		if head(t, s, "main") != before {
			t.Fatalf("read %d of the source failed, yet main moved", k)
		}
	}
}

// TestMergesWhileBranchIsBusy: merges land while another writer keeps
// committing to the target on other keys, and what each merge's last check
// saw is exactly what its commit changed, measured against the commit's
// first parent.
func TestMergesWhileBranchIsBusy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTestStore(t, Options{})
	base := mustCommit(t, s, "main", put(key("db"), ns()))
	const merges = 6
	for i := 0; i < merges; i++ {
		name := fmt.Sprint("dev", i)
		if _, err := s.CreateRef(ctx, CreateRefRequest{Name: name, Type: Branch, Target: base.Commit.Hash}); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, s, name, put(key("db", name), table(name)))
	}
	stop := make(chan struct{})
	var busy sync.WaitGroup
	busy.Add(1)
	go func() {
		defer busy.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, err := s.Commit(ctx, CommitRequest{Branch: "main", Expected: base.Commit.Hash,
				Operations: []Operation{put(key("db", fmt.Sprint("busy", i)), table("b"))}, Committer: "busy"})
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < merges; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprint("dev", i)
			var last []CheckedChange
			res, err := s.Merge(ctx, MergeRequest{Target: "main", ExpectedTarget: base.Commit.Hash, From: s.refs.get(name).Head, Committer: "m",
				Check: func(_ context.Context, cs []CheckedChange) error { last = cs; return nil }})
			if err != nil || !res.WasApplied || len(res.Commits) != 1 {
				t.Errorf("merge of %s: %+v, %v", name, res, err)
				return
			}
			c := res.Commits[0]
			if len(last) != len(c.Operations) {
				t.Errorf("merge of %s: checked %d changes, wrote %d", name, len(last), len(c.Operations))
				return
			}
			for j, op := range c.Operations {
				before, err := s.GetContent(ctx, c.Parents[0], op.Key)
				if errors.Is(err, ErrContentNotFound) {
					before, err = nil, nil
				}
				if err != nil || !last[j].Key.Equal(op.Key) || last[j].Kind != op.Kind || !before.Equal(last[j].Before) {
					t.Errorf("merge of %s: checked %+v, wrote %+v onto %+v (%v)", name, last[j], op, before, err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	busy.Wait()
}

// TestPutRecordsIsAllOrNothing: several records in one write land
// together; when one's condition fails, none does. (The backends' own
// atomicity of a batch with several records and checks is
// backendtest's.)
func TestPutRecordsIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTestStore(t, Options{})
	if err := s.PutRecords(ctx, []Record{{Key: "q/1", Value: []byte("queued")}, {Key: "q/2", Value: []byte("queued")}}); err != nil {
		t.Fatal(err)
	}
	take := func(k string) Record {
		return Record{Key: k, Value: []byte("validating"), If: &RecordCondition{Exists: true, Value: []byte("queued")}}
	}
	// q/3 is absent: its condition fails, so q/1 and q/2 stay queued.
	err := s.PutRecords(ctx, []Record{take("q/1"), take("q/2"), take("q/3")})
	if !errors.Is(err, ErrRecordConflict) || !strings.Contains(err.Error(), `"q/3"`) {
		t.Fatalf("a write with a failing condition: %v, want ErrRecordConflict naming q/3", err)
	}
	wantRecordValue(t, s, "q/1", "queued")
	wantRecordValue(t, s, "q/2", "queued")
	if err := s.PutRecords(ctx, []Record{take("q/1"), take("q/2")}); err != nil {
		t.Fatal(err)
	}
	wantRecordValue(t, s, "q/1", "validating")
	wantRecordValue(t, s, "q/2", "validating")
	if err := s.PutRecords(ctx, []Record{{Key: "q/4", Value: []byte("a")}, {Key: "q/4", Value: []byte("b")}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("one key twice in one write: %v, want ErrInvalid", err)
	}
	if _, err := s.GetRecord(ctx, "q/4"); !errors.Is(err, ErrRecordNotFound) {
		t.Fatalf("q/4 after the refused write: %v, want not found", err)
	}
	if err := s.PutRecords(ctx, nil); err != nil {
		t.Fatalf("an empty write: %v", err)
	}
}
