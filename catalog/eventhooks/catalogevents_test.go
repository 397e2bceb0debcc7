package eventhooks_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/catalog/eventhooks"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/feedevent"
)

// eventsDecider lets svc-admin read everything and svc-reader every
// reference, but not the events on no reference; it records the actions
// asked.
type eventsDecider struct {
	mu      sync.Mutex
	actions []policy.Action
}

func (d *eventsDecider) Decide(_ context.Context, in policy.Input) (policy.Decision, error) {
	d.mu.Lock()
	d.actions = append(d.actions, in.Action)
	d.mu.Unlock()
	if in.Action == policy.ActionEventsRead {
		return policy.Decision{Allow: in.Principal.ID == "svc-admin" && in.Ref == policy.Ref{}}, nil
	}
	return policy.Decision{Allow: in.Action == policy.ActionRead}, nil
}

// TestEventsOnNoReference: a GC run and a policy activation are on no
// reference; a subscription receives them only when its principal may
// read the catalog's own events (policy.ActionEventsRead), and a queue
// event on its target like any other event of that branch.
func TestEventsOnNoReference(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	feed := changefeed.New(s, changefeed.Options{PollInterval: 5 * time.Millisecond})
	rcv := newReceiver(t)
	admin, reader := subscription("admin", rcv.srv.URL), subscription("reader", rcv.srv.URL)
	admin.Principal, reader.Principal = "svc-admin", "svc-reader"
	for _, sub := range []*eventhooks.Subscription{&admin, &reader} {
		sub.Filter.Types = []changefeed.Type{changefeed.GCCompleted, changefeed.PolicyActivated, changefeed.QueueChanged}
	}
	dec := &eventsDecider{}
	svc, err := eventhooks.New(eventhooks.Options{Store: s, Feed: feed, Decider: dec, Poll: 100 * time.Millisecond,
		Subscriptions: []eventhooks.Subscription{admin, reader}})
	if err != nil {
		t.Fatal(err)
	}
	gcRun, err := feedevent.GCEvent("ops", feedevent.GCRun{ID: "g1", Outcome: "ok", Deleted: 3})
	if err != nil {
		t.Fatal(err)
	}
	activated, err := feedevent.PolicyEvent(feedevent.PolicyActivation{Source: "bundle", Revision: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	queued, err := feedevent.QueueEvent("main", "alice", feedevent.QueueChange{Request: "q1", Source: "etl", To: "queued"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvents(t.Context(), []versionstore.LogEvent{gcRun, activated, queued}); err != nil {
		t.Fatal(err)
	}
	runService(t, svc)
	head, err := feed.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"admin", "reader"} {
		waitFor(t, 10*time.Second, name+"'s cursor at the feed's end", func() bool {
			st, err := svc.Status(t.Context(), name)
			return err == nil && st.State != nil && st.State.Cursor == head
		})
	}
	got := map[string][]string{}
	for _, d := range rcv.deliveries() {
		got[d.sub] = append(got[d.sub], d.ce.Type)
	}
	if want := []string{"io.github.floe-catalog.gc.completed", "io.github.floe-catalog.policy.activated", "io.github.floe-catalog.queue.changed"}; !slices.Equal(got["admin"], want) {
		t.Fatalf("admin received %v, want %v", got["admin"], want)
	}
	if want := []string{"io.github.floe-catalog.queue.changed"}; !slices.Equal(got["reader"], want) {
		t.Fatalf("reader received %v, want %v", got["reader"], want)
	}
	dec.mu.Lock()
	defer dec.mu.Unlock()
	if !slices.Contains(dec.actions, policy.ActionEventsRead) {
		t.Fatalf("the policy was never asked %s: %v", policy.ActionEventsRead, dec.actions)
	}
}
