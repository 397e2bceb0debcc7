package mergequeue_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/merge/mergequeue"
)

// TestStateChangesAreEvents: every change of a request's state is a
// queue.changed event on its target, in the order the changes were
// written, with who made it and why: submitted, cancelled, taken, and
// merged, written with the landing itself, right after the target's
// move.
func TestStateChangesAreEvents(t *testing.T) {
	f := newFaultLake(t)
	other, _, err := f.srv.Queue.Submit(t.Context(), mergequeue.SubmitRequest{Source: "ingest/a", Target: "main", Principal: "bob", IdempotencyKey: "k2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.srv.Queue.Cancel(t.Context(), other.ID, "carol", "not needed"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.srv.Queue.Process(t.Context(), "main"); err != nil {
		t.Fatal(err)
	}
	feed := changefeed.New(f.srv.Store, changefeed.Options{})
	page, err := feed.Read(t.Context(), changefeed.Query{Types: []changefeed.Type{changefeed.QueueChanged}, Limit: changefeed.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var moved bool
	all, err := feed.Read(t.Context(), changefeed.Query{Types: []changefeed.Type{changefeed.QueueChanged, changefeed.BranchMoved}, Refs: []string{"main"}, Limit: changefeed.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range all.Events {
		if ev.Type == changefeed.BranchMoved {
			moved = true
		} else if ev.Queue.To == mergequeue.StateMerged && (!moved || ev.Commit == "") {
			t.Fatalf("the merged event comes before the landing's move, or names no commit: %+v", ev)
		}
	}
	for _, ev := range page.Events {
		q := ev.Queue
		req := "r1"
		if q.Request == other.ID {
			req = "r2"
		}
		got = append(got, strings.Join([]string{ev.Ref, req, q.From, q.To, ev.Principal}, " "))
		if q.Source != "ingest/a" || (q.To == mergequeue.StateMerged) != (q.Commit != "") {
			t.Fatalf("event %s: %+v", ev.ID, q)
		}
	}
	want := []string{
		"main r1  queued etl",
		"main r2  queued bob",
		"main r2 queued cancelled carol",
		"main r1 queued validating floe-queue",
		"main r1 validating merged floe-queue",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("queue events:\n%s\nwant (first):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestConcurrentSubmits: pipelines submitting at once each get their own
// request, and one idempotency key submitted many times at once makes one
// request, which every submit answers with. (Submits create their records
// outside the queue's lock, so these race in the store.)
func TestConcurrentSubmits(t *testing.T) {
	f := newFaultLake(t)
	const n = 12
	var wg sync.WaitGroup
	keyed := make([]*mergequeue.Request, n)
	created := make([]bool, n)
	plain := make([]*mergequeue.Request, n)
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Go(func() {
			r, c, err := f.srv.Queue.Submit(t.Context(), mergequeue.SubmitRequest{Source: "ingest/a", Target: "main", Principal: "bob", IdempotencyKey: "nightly"})
			keyed[i], created[i] = r, c
			errs <- err
		})
		wg.Go(func() {
			r, _, err := f.srv.Queue.Submit(t.Context(), mergequeue.SubmitRequest{Source: "ingest/a", Target: "main", Principal: "etl"})
			plain[i] = r
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	made := 0
	for i, r := range keyed {
		if r.ID != keyed[0].ID {
			t.Fatalf("submit %d of one idempotency key got request %s, another got %s", i, r.ID, keyed[0].ID)
		}
		if created[i] {
			made++
		}
	}
	if made != 1 {
		t.Fatalf("%d submits of one idempotency key created a request, want 1", made)
	}
	ids, seqs := map[string]bool{f.id: true, keyed[0].ID: true}, map[uint64]string{}
	for _, r := range plain {
		if ids[r.ID] {
			t.Fatalf("request %s answered to two submits", r.ID)
		}
		ids[r.ID] = true
	}
	for id := range ids {
		r, err := f.srv.Queue.Get(id)
		if err != nil {
			t.Fatalf("request %s: %v", id, err)
		}
		if r.State != mergequeue.StateQueued {
			t.Fatalf("request %s is %s, want queued", id, r.State)
		}
		if other, dup := seqs[r.Seq]; dup {
			t.Fatalf("requests %s and %s share arrival seq %d", id, other, r.Seq)
		}
		seqs[r.Seq] = id
	}
	// Each is in the store as memory holds it: a restarted queue finds it.
	for id := range ids {
		if st, err := mergequeue.StoredState(t.Context(), f.srv.Store, id); err != nil || st != mergequeue.StateQueued {
			t.Fatalf("request %s in the store: %q, %v; want queued", id, st, err)
		}
	}
}
