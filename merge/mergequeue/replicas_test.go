package mergequeue_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/merge/mergeengine"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/lease"
	"github.com/floe-catalog/floe/versionstore/pgbackend"
)

// postgres is started by the first test that needs it.
var postgres pgtest.Lazy

func TestMain(m *testing.M) { os.Exit(pgtest.LazyMain(m, &postgres)) }

func needPostgres(t *testing.T) *pgtest.Cluster {
	t.Helper()
	return postgres.Need(t)
}

// storeMerger merges at key level with the store itself: these tests are
// about who commits, not about Iceberg tables.
type storeMerger struct{ s *versionstore.Store }

func (m storeMerger) MergeTables(ctx context.Context, req versionstore.MergeRequest) (*mergeengine.Result, error) {
	res, err := m.s.Merge(ctx, req)
	if res == nil {
		return nil, err
	}
	return &mergeengine.Result{MergeResult: res}, err
}

// replica is one floe replica's store and queue over the shared database.
type replica struct {
	store  *versionstore.Store
	queue  *mergequeue.Queue
	stop   context.CancelFunc
	done   chan struct{}
	landed atomic.Int32 // landing writes that succeeded
}

// fleet is n replicas over one database, each running its queue, with
// landing writes counted.
type fleet struct {
	t        *testing.T
	replicas []*replica
	inflight atomic.Int32 // landing writes under way, over all replicas
	overlap  atomic.Bool  // two were under way at once
	// stall, if set, is called before a landing write of replica i.
	stall func(i int)
	// refused collects landing writes that failed, by replica.
	mu      sync.Mutex
	refused map[int][]error
}

func newFleet(t *testing.T, n int, ttl time.Duration) *fleet {
	c := needPostgres(t)
	dsn, err := c.Schema(t.Context(), pgtest.SchemaName(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{t: t, refused: map[int][]error{}}
	for i := range n {
		be, err := pgbackend.Open(t.Context(), dsn, pgbackend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := versionstore.Open(t.Context(), be, versionstore.Options{})
		if err != nil {
			t.Fatal(errors.Join(err, be.Close()))
		}
		t.Cleanup(func() { s.Close() })
		q, err := mergequeue.New(t.Context(), mergequeue.Options{Store: s, Merger: storeMerger{s}, Rules: mergequeue.DefaultRules(),
			Leases: lease.New(s, nil), Holder: fmt.Sprintf("replica-%d", i), LeaseTTL: ttl, Poll: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		r := &replica{store: s, queue: q, done: make(chan struct{})}
		mergequeue.SetLandHooks(q, func(string) {
			if f.inflight.Add(1) > 1 {
				f.overlap.Store(true)
			}
			if f.stall != nil {
				f.stall(i)
			}
		}, func(_ string, err error) {
			f.inflight.Add(-1)
			if err == nil {
				r.landed.Add(1)
				return
			}
			f.mu.Lock()
			f.refused[i] = append(f.refused[i], err)
			f.mu.Unlock()
		})
		f.replicas = append(f.replicas, r)
	}
	return f
}

// start runs the queues of the replicas given, or of every replica.
func (f *fleet) start(which ...int) {
	if len(which) == 0 {
		for i := range f.replicas {
			which = append(which, i)
		}
	}
	for _, i := range which {
		r := f.replicas[i]
		ctx, stop := context.WithCancel(context.Background())
		r.stop = stop
		go func() {
			defer close(r.done)
			r.queue.Run(ctx)
		}()
		f.t.Cleanup(func() { stop(); <-r.done })
	}
}

// submit makes branch feature/<name> with one new key and submits its
// merge into main through replica i.
func (f *fleet) submit(i int, name string) string {
	f.t.Helper()
	ctx := f.t.Context()
	s := f.replicas[i].store
	main, err := s.GetRef("main")
	if err != nil {
		f.t.Fatal(err)
	}
	br := "feature/" + name
	if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: br, Type: versionstore.Branch, Target: main.Head, Principal: "test"}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := s.Commit(ctx, versionstore.CommitRequest{Branch: br, Expected: main.Head, Committer: "test", Meta: versionstore.CommitMeta{Message: name},
		Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns", name}, Content: &versionstore.Content{Type: versionstore.Namespace}}}}); err != nil {
		f.t.Fatal(err)
	}
	r, _, err := f.replicas[i].queue.Submit(ctx, mergequeue.SubmitRequest{Source: br, Target: "main", Principal: "test"})
	if err != nil {
		f.t.Fatalf("submit %s to replica %d: %v", name, i, err)
	}
	return r.ID
}

// waitMerged waits until every request of ids is merged in the store.
func (f *fleet) waitMerged(ids []string) {
	f.t.Helper()
	s := f.replicas[0].store
	deadline := time.Now().Add(2 * time.Minute)
	for _, id := range ids {
		for {
			st, err := mergequeue.StoredState(f.t.Context(), s, id)
			if err != nil {
				f.t.Fatal(err)
			}
			if st == mergequeue.StateMerged {
				break
			}
			if mergequeue.Final(st) || time.Now().After(deadline) {
				f.t.Fatalf("request %s is %s, want merged", id, st)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// landedOnce checks that main's history holds one merge commit for each
// request of ids, and none for any other.
func (f *fleet) landedOnce(ids []string) {
	f.t.Helper()
	s := f.replicas[0].store
	main, err := s.GetRef("main")
	if err != nil {
		f.t.Fatal(err)
	}
	seen := map[string]int{}
	for h := main.Head; h != versionstore.NoAncestor; {
		c, err := s.ReadCommit(f.t.Context(), h)
		if err != nil {
			f.t.Fatal(err)
		}
		if id := c.Properties[mergequeue.PropRequest]; id != "" {
			seen[id]++
			if c.Properties[mergequeue.PropLeaseEpoch] == "" {
				f.t.Errorf("merge commit of %s carries no lease epoch", id)
			}
		}
		h = c.Parent()
	}
	for _, id := range ids {
		if seen[id] != 1 {
			f.t.Errorf("request %s landed %d times on main, want once", id, seen[id])
		}
		delete(seen, id)
	}
	if len(seen) > 0 {
		f.t.Errorf("main holds merges of unknown requests: %v", seen)
	}
}

func (f *fleet) landings() []int32 {
	out := make([]int32, len(f.replicas))
	for i, r := range f.replicas {
		out[i] = r.landed.Load()
	}
	return out
}

func initMain(t *testing.T, s *versionstore.Store) {
	t.Helper()
	if _, err := s.Commit(t.Context(), versionstore.CommitRequest{Branch: "main", Expected: versionstore.NoAncestor, Committer: "test",
		Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns"}, Content: &versionstore.Content{Type: versionstore.Namespace}}}}); err != nil {
		t.Fatal(err)
	}
}

// TestReplicasOneCommitter: requests submitted to three replicas over one
// database all land exactly once, and only one replica commits: the
// holder of main's lease.
func TestReplicasOneCommitter(t *testing.T) {
	f := newFleet(t, 3, 30*time.Second)
	initMain(t, f.replicas[0].store)
	f.start()
	var ids []string
	for i := range 12 {
		ids = append(ids, f.submit(i%3, fmt.Sprintf("b%02d", i)))
	}
	f.waitMerged(ids)
	f.landedOnce(ids)
	if f.overlap.Load() {
		t.Error("two landing writes were under way at once")
	}
	committers := 0
	for _, n := range f.landings() {
		if n > 0 {
			committers++
		}
	}
	if committers != 1 {
		t.Errorf("landing writes per replica %v: want one committer", f.landings())
	}
	for i, errs := range f.refused {
		t.Errorf("replica %d: landing writes failed: %v", i, errs)
	}
}

// TestReplicasFencedLateWrite: main's committer stalls just before its
// landing write, its lease expires and is taken by another holder; the
// target and the requests' records are as the stalled write expects, so
// only the fence can refuse it: it must, and write nothing. The next
// committer lands the requests once.
func TestReplicasFencedLateWrite(t *testing.T) {
	const ttl = 2 * time.Second
	f := newFleet(t, 2, ttl)
	s := f.replicas[1].store
	initMain(t, s)
	stalled := make(chan int, 1)
	wake := make(chan struct{})
	wakeUp := sync.OnceFunc(func() { close(wake) })
	var once sync.Once
	f.stall = func(i int) {
		once.Do(func() {
			stalled <- i
			<-wake
		})
	}
	f.start(0)
	t.Cleanup(wakeUp) // before the replicas stop, should the test fail first
	ids := []string{f.submit(1, "a00"), f.submit(1, "a01")}
	<-stalled
	usurper := lease.New(s, nil)
	var held *lease.Lease
	for {
		l, err := usurper.Acquire(t.Context(), mergequeue.LeaseName("main"), "usurper", time.Minute)
		if err == nil {
			held = l
			break
		}
		if !errors.Is(err, lease.ErrHeld) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	main, err := s.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	wakeUp()
	var refused error
	for deadline := time.Now().Add(time.Minute); refused == nil; time.Sleep(10 * time.Millisecond) {
		f.mu.Lock()
		if errs := f.refused[0]; len(errs) > 0 {
			refused = errs[0]
		}
		f.mu.Unlock()
		if f.replicas[0].landed.Load() > 0 {
			t.Fatal("the deposed committer's late landing write landed")
		}
		if time.Now().After(deadline) {
			t.Fatal("the stalled landing write never returned")
		}
	}
	if !errors.Is(refused, versionstore.ErrRecordConflict) {
		t.Fatalf("the deposed committer's landing write: %v, want ErrRecordConflict", refused)
	}
	if after, err := s.GetRef("main"); err != nil || after.Head != main.Head {
		t.Fatalf("main after the refused write: %v, %v; want it at %s", after, err, main.Head)
	}
	for _, id := range ids {
		if st, err := mergequeue.StoredState(t.Context(), s, id); err != nil || st == mergequeue.StateMerged {
			t.Errorf("request %s after the refused write: %s, %v", id, st, err)
		}
	}
	// The deposed replica stops (else it may legitimately lead again
	// once the usurper lets go); the next committer.
	f.replicas[0].stop()
	<-f.replicas[0].done
	f.start(1)
	if err := usurper.Release(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	f.waitMerged(ids)
	f.landedOnce(ids)
	if n := f.replicas[0].landed.Load(); n != 0 {
		t.Errorf("the deposed committer landed %d writes", n)
	}
}

// TestReplicasFailoverAndFence: main's committer stalls inside its
// landing write (as a paused process: it renews nothing meanwhile).
// Another replica takes over once the lease expired, queues the stalled
// batch again and lands every request exactly once; when the stalled
// committer wakes, its late landing write is refused by the fence and
// writes nothing.
func TestReplicasFailoverAndFence(t *testing.T) {
	const ttl = 2 * time.Second
	f := newFleet(t, 3, ttl)
	initMain(t, f.replicas[0].store)
	stalled := make(chan int, 1)
	wake := make(chan struct{})
	wakeUp := sync.OnceFunc(func() { close(wake) })
	var once sync.Once
	f.stall = func(i int) {
		first := false
		once.Do(func() { first = true })
		if first {
			stalled <- i
			<-wake
		}
	}
	// Submitted before the queues run: a submit to the replica that
	// stalls in its landing write would wait for it.
	var ids []string
	for i := range 3 {
		ids = append(ids, f.submit(i, fmt.Sprintf("a%02d", i)))
	}
	f.start()
	t.Cleanup(wakeUp) // before the replicas stop, should the test fail first
	leader := <-stalled
	stalledAt := time.Now()
	// The stalled replica is paused whole (its queue's state is locked
	// by the landing): submit to the others.
	for i := range 6 {
		ids = append(ids, f.submit((leader+1+i%2)%3, fmt.Sprintf("b%02d", i)))
	}
	f.waitMerged(ids)
	t.Logf("replica %d stalled; every request landed %v later, landings per replica %v", leader, time.Since(stalledAt), f.landings())
	if f.replicas[leader].landed.Load() != 0 {
		t.Errorf("the stalled replica landed %d writes", f.replicas[leader].landed.Load())
	}
	main, err := f.replicas[0].store.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	wakeUp()
	// The stalled write returns refused.
	deadline := time.Now().Add(time.Minute)
	for {
		f.mu.Lock()
		errs := f.refused[leader]
		f.mu.Unlock()
		if len(errs) > 0 {
			if !errors.Is(errs[0], versionstore.ErrRecordConflict) {
				t.Errorf("the deposed committer's landing write: %v, want ErrRecordConflict", errs[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stalled landing write never returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	after, err := f.replicas[0].store.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	if after.Head != main.Head {
		t.Errorf("main moved from %s to %s after the deposed committer's write", main.Head, after.Head)
	}
	for _, id := range ids {
		if st, err := mergequeue.StoredState(t.Context(), f.replicas[0].store, id); err != nil || st != mergequeue.StateMerged {
			t.Errorf("request %s: %s, %v after the deposed write; want merged", id, st, err)
		}
	}
	f.landedOnce(ids)
}

// TestReplicasLeaderDies: main's committer dies without releasing its
// lease (its queue stops, the lease is abandoned); another replica takes
// over after the lease expired and the requests submitted meanwhile land
// exactly once.
func TestReplicasLeaderDies(t *testing.T) {
	const ttl = 2 * time.Second
	f := newFleet(t, 3, ttl)
	initMain(t, f.replicas[0].store)
	for _, r := range f.replicas {
		mergequeue.SetCrashed(r.queue)
	}
	f.start()
	ids := []string{f.submit(0, "a00"), f.submit(1, "a01")}
	f.waitMerged(ids)
	leader := -1
	for i, n := range f.landings() {
		if n > 0 {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("nobody landed")
	}
	f.replicas[leader].stop()
	<-f.replicas[leader].done
	diedAt := time.Now()
	var later []string
	for i := range 4 {
		r := (leader + 1 + i%2) % 3
		later = append(later, f.submit(r, fmt.Sprintf("b%02d", i)))
	}
	f.waitMerged(later)
	t.Logf("replica %d died; the rest landed %v later (bound: ttl %v + %v)", leader, time.Since(diedAt), ttl, ttl/3)
	f.landedOnce(append(ids, later...))
	if f.overlap.Load() {
		t.Error("two landing writes were under way at once")
	}
}
