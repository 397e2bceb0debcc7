package mergequeue_test

import (
	"strings"
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
