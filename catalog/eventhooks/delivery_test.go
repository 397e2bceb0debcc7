package eventhooks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/catalog/changefeed/feedtest"
	"github.com/floe-catalog/floe/catalog/eventhooks"
	"github.com/floe-catalog/floe/policy"
)

// TestDeliversEveryEventInOrderSigned: commits on three branches from
// concurrent writers reach a loopback receiver as signed CloudEvents,
// every event of the feed exactly once (nothing failed, so nothing is
// repeated), in the feed's order.
func TestDeliversEveryEventInOrderSigned(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	feed := changefeed.New(s, changefeed.Options{PollInterval: 5 * time.Millisecond})
	rcv := newReceiver(t)
	svc, err := eventhooks.New(eventhooks.Options{Store: s, Feed: feed, Source: "https://floe.test/lake", Poll: 200 * time.Millisecond,
		Subscriptions: []eventhooks.Subscription{subscription("all", rcv.srv.URL)}})
	if err != nil {
		t.Fatal(err)
	}
	runService(t, svc)
	createBranch(t, s, "etl/a")
	createBranch(t, s, "etl/b")
	var wg sync.WaitGroup
	for w, b := range []string{"main", "etl/a", "etl/b"} {
		wg.Go(func() {
			for i := range 30 {
				commit(t, s, b, fmt.Sprintf("w%d_%d", w, i))
			}
		})
	}
	wg.Wait()
	want := feedtest.ReadAll(t, feed, changefeed.Start)
	waitFor(t, 30*time.Second, "every event delivered", func() bool { return len(rcv.deliveries()) >= len(want) })
	got := rcv.deliveries()
	if len(got) != len(want) {
		t.Fatalf("delivered %d events, the feed has %d", len(got), len(want))
	}
	for i, d := range got {
		ev := want[i]
		ce := d.ce
		if ce.SpecVersion != "1.0" || ce.ID != ev.ID.String() || ce.Source != "https://floe.test/lake" ||
			ce.Type != eventhooks.TypePrefix+string(ev.Type) || !ce.Time.Equal(ev.Time) || ce.FloeRef != ev.Ref ||
			ce.DataContentType != "application/json" || ce.Data == nil || ce.Data.ID != ev.ID || ce.Data.Commit != ev.Commit {
			t.Fatalf("delivery %d is %+v; want the envelope of %+v", i, ce, ev)
		}
		wantSubject := ev.Ref
		if ev.Content != nil {
			wantSubject += ":" + strings.Join(ev.Content.Key, ".")
		}
		if ce.Subject != wantSubject || d.sub != "all" || d.attempt != "1" {
			t.Fatalf("delivery %d: subject %q, subscription %q, attempt %q", i, ce.Subject, d.sub, d.attempt)
		}
	}
	if rcv.badSig != 0 {
		t.Fatalf("%d requests were badly signed", rcv.badSig)
	}
	// The durable cursor reaches the last event.
	waitFor(t, 5*time.Second, "the cursor written", func() bool {
		st, err := svc.Status(t.Context(), "all")
		return err == nil && st.State != nil && !st.State.Cursor.Before(want[len(want)-1].ID)
	})
}

// TestSignatureRejected: a receiver that holds another secret refuses
// every delivery; they are retried, never accepted.
func TestSignatureRejected(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	feed := changefeed.New(s, changefeed.Options{PollInterval: 5 * time.Millisecond})
	rcv := newReceiver(t)
	rcv.setSecret("another secret")
	sub := subscription("wrongkey", rcv.srv.URL)
	sub.MaxAttempts = 2
	svc, err := eventhooks.New(eventhooks.Options{Store: s, Feed: feed, Poll: 50 * time.Millisecond, Subscriptions: []eventhooks.Subscription{sub}})
	if err != nil {
		t.Fatal(err)
	}
	runService(t, svc)
	commit(t, s, "main", "x")
	waitFor(t, 10*time.Second, "dead letter", func() bool {
		st, err := svc.Status(t.Context(), sub.Name)
		return err == nil && st.State != nil && st.State.Status == eventhooks.StatusDeadLetter
	})
	if len(rcv.deliveries()) != 0 || rcv.badSig != 2 {
		t.Fatalf("accepted %d, refused %d as badly signed; want 0 and 2", len(rcv.deliveries()), rcv.badSig)
	}
}

// refDecider is a policy that lets principal svc-<x> read every ref but
// those starting with "secret/"; its errors are counted.
type refDecider struct {
	mu    sync.Mutex
	asked int
}

func (d *refDecider) Decide(_ context.Context, in policy.Input) (policy.Decision, error) {
	d.mu.Lock()
	d.asked++
	d.mu.Unlock()
	if in.Action != policy.ActionRead || !strings.HasPrefix(in.Principal.ID, "svc-") {
		return policy.Decision{}, errors.New("unexpected question")
	}
	return policy.Decision{Allow: !strings.HasPrefix(in.Ref.Name, "secret/")}, nil
}

// TestFiltersAndPolicy: a subscription filtered by ref prefix, type and
// namespace receives exactly the events the feed has that match, minus
// those its principal may not read.
func TestFiltersAndPolicy(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	feed := changefeed.New(s, changefeed.Options{PollInterval: 5 * time.Millisecond})
	rcv := newReceiver(t)
	sub := subscription("filtered", rcv.srv.URL)
	sub.Filter = eventhooks.Filter{Refs: []string{"etl/*", "secret/*"}, Types: []changefeed.Type{changefeed.NamespaceCreated}, Namespaces: [][]string{{"keep"}}}
	dec := &refDecider{}
	svc, err := eventhooks.New(eventhooks.Options{Store: s, Feed: feed, Decider: dec, Poll: 100 * time.Millisecond, Subscriptions: []eventhooks.Subscription{sub}})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, "main", "keep")
	commit(t, s, "main", "drop")
	for _, b := range []string{"etl/a", "secret/x", "other"} {
		createBranch(t, s, b)
	}
	for i := range 3 {
		for _, b := range []string{"main", "etl/a", "secret/x", "other"} {
			commit(t, s, b, "keep", fmt.Sprint(b, i))
			commit(t, s, b, "drop", fmt.Sprint(b, i))
		}
	}
	runService(t, svc)
	var want []string
	for _, ev := range feedtest.ReadAll(t, feed, changefeed.Start) {
		if strings.HasPrefix(ev.Ref, "etl/") && ev.Type == changefeed.NamespaceCreated && ev.Content.Key[0] == "keep" {
			want = append(want, ev.ID.String())
		}
	}
	if len(want) != 3 {
		t.Fatalf("want is %v; the test expects 3 events", want)
	}
	waitFor(t, 10*time.Second, "the cursor at the feed's end", func() bool {
		st, err := svc.Status(t.Context(), sub.Name)
		head, _ := feed.Head(t.Context())
		return err == nil && st.State != nil && st.State.Cursor == head
	})
	var got []string
	for _, d := range rcv.deliveries() {
		got = append(got, d.ce.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("delivered %v; want %v", got, want)
	}
	if dec.asked == 0 {
		t.Fatal("the policy was never asked")
	}
}

// TestBackoffDeadLetterResume: a receiver that fails gets each event
// retried with growing delays; after MaxAttempts the subscription is
// dead-lettered, which metrics and the status show; resumed once the
// receiver heals, it delivers the event and everything after it, in
// order. A second dead letter is resumed by skipping the event.
func TestBackoffDeadLetterResume(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir())
	feed := changefeed.New(s, changefeed.Options{PollInterval: 5 * time.Millisecond})
	rcv := newReceiver(t)
	var mu sync.Mutex
	failing := true
	rcv.setStatus(func(int) int {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	reg := prometheus.NewRegistry()
	sub := subscription("flaky", rcv.srv.URL)
	sub.MaxAttempts, sub.Backoff, sub.MaxBackoff = 4, 40*time.Millisecond, time.Second
	svc, err := eventhooks.New(eventhooks.Options{Store: s, Feed: feed, Metrics: reg, Poll: 50 * time.Millisecond, Subscriptions: []eventhooks.Subscription{sub}})
	if err != nil {
		t.Fatal(err)
	}
	runService(t, svc)
	commit(t, s, "main", "a")
	commit(t, s, "main", "b")
	waitFor(t, 20*time.Second, "dead letter", func() bool {
		st, err := svc.Status(t.Context(), sub.Name)
		return err == nil && st.State != nil && st.State.Status == eventhooks.StatusDeadLetter
	})
	st, _ := svc.Status(t.Context(), sub.Name)
	all := feedtest.ReadAll(t, feed, changefeed.Start)
	if st.State.Pending != all[0].ID || st.State.Attempts != 4 || !strings.Contains(st.State.LastError, "503") || st.State.Cursor != changefeed.Start {
		t.Fatalf("state %+v; want the first event %s pending after 4 attempts, cursor at the start", st.State, all[0].ID)
	}
	if v := metric(t, reg, "floe_event_webhook_dead_letter", map[string]string{"subscription": sub.Name}); v != 1 {
		t.Fatalf("dead-letter gauge %v", v)
	}
	if v := metric(t, reg, "floe_event_webhook_attempts_total", map[string]string{"subscription": sub.Name, "outcome": "failed"}); v != 4 {
		t.Fatalf("failed attempts %v; want 4", v)
	}
	// The delays grew: each drawn from the upper half of 40, 80, 160 ms.
	rcv.mu.Lock()
	at := slices.Clone(rcv.attempts)
	rcv.mu.Unlock()
	for i, min := range []time.Duration{20, 40, 80} {
		if gap := at[i+1].Sub(at[i]); gap < min*time.Millisecond {
			t.Errorf("delay before attempt %d: %s; want at least %dms", i+2, gap, min)
		}
	}
	// Dead-lettered, nothing more is tried.
	time.Sleep(300 * time.Millisecond)
	if n := len(rcv.attempts); n != 4 {
		t.Fatalf("%d attempts while dead-lettered", n)
	}
	if _, err := svc.Resume(t.Context(), "nope", false, "ops"); !errors.Is(err, eventhooks.ErrUnknownSubscription) {
		t.Fatalf("resume of an unknown subscription: %v", err)
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	if _, err := svc.Resume(t.Context(), sub.Name, false, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Resume(t.Context(), sub.Name, false, "ops"); !errors.Is(err, eventhooks.ErrNotDeadLettered) {
		t.Fatalf("second resume: %v", err)
	}
	waitFor(t, 10*time.Second, "delivery of every event", func() bool { return len(rcv.deliveries()) == len(all) })
	for i, d := range rcv.deliveries() {
		if d.ce.ID != all[i].ID.String() {
			t.Fatalf("delivery %d is %s; want %s", i, d.ce.ID, all[i].ID)
		}
	}
	waitFor(t, 5*time.Second, "the gauge back to 0", func() bool {
		return metric(t, reg, "floe_event_webhook_dead_letter", map[string]string{"subscription": sub.Name}) == 0
	})

	// Dead-lettered again, and skipped.
	mu.Lock()
	failing = true
	mu.Unlock()
	commit(t, s, "main", "c")
	waitFor(t, 20*time.Second, "the second dead letter", func() bool {
		st, err := svc.Status(t.Context(), sub.Name)
		return err == nil && st.State.Status == eventhooks.StatusDeadLetter
	})
	mu.Lock()
	failing = false
	mu.Unlock()
	st, err = svc.Resume(t.Context(), sub.Name, true, "ops")
	if err != nil {
		t.Fatal(err)
	}
	skipped := st.State.Cursor
	commit(t, s, "main", "d")
	rest := feedtest.ReadAll(t, feed, skipped)
	waitFor(t, 10*time.Second, "delivery after the skipped event", func() bool { return len(rcv.deliveries()) == len(all)+len(rest) })
	for i, d := range rcv.deliveries()[len(all):] {
		if d.ce.ID != rest[i].ID.String() {
			t.Fatalf("after the skip, delivery %d is %s; want %s", i, d.ce.ID, rest[i].ID)
		}
	}
}

// metric is the value of the counter or gauge name whose labels include
// want.
func metric(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue metrics
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// TestRetriesSurviveRestart: the attempts at a failing event are written
// with the cursor, so a restarted deliverer goes on counting them (and
// keeps the backoff) instead of starting over.
func TestRetriesSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir)
	rcv := newReceiver(t)
	rcv.setStatus(func(int) int { return http.StatusBadGateway })
	sub := subscription("restarted", rcv.srv.URL)
	sub.MaxAttempts, sub.Backoff, sub.MaxBackoff = 5, 50*time.Millisecond, 50*time.Millisecond
	start := func() (*eventhooks.Service, func()) {
		feed := changefeed.New(s, changefeed.Options{PollInterval: 5 * time.Millisecond})
		svc, err := eventhooks.New(eventhooks.Options{Store: s, Feed: feed, Poll: 50 * time.Millisecond, Subscriptions: []eventhooks.Subscription{sub}})
		if err != nil {
			t.Fatal(err)
		}
		return svc, runService(t, svc)
	}
	commit(t, s, "main", "a")
	svc, stop := start()
	waitFor(t, 10*time.Second, "two failed attempts written", func() bool {
		st, err := svc.Status(t.Context(), sub.Name)
		return err == nil && st.State != nil && st.State.Attempts >= 2
	})
	stop()
	st, _ := svc.Status(t.Context(), sub.Name)
	before := st.State.Attempts
	rcv.mu.Lock()
	sent := rcv.requests
	rcv.mu.Unlock()
	// An attempt the stop interrupted is not counted.
	if sent != before && sent != before+1 {
		t.Fatalf("%d requests sent, %d attempts written", sent, before)
	}
	svc, _ = start()
	waitFor(t, 10*time.Second, "dead letter", func() bool {
		st, err := svc.Status(t.Context(), sub.Name)
		return err == nil && st.State.Status == eventhooks.StatusDeadLetter
	})
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.requests != sub.MaxAttempts+sent-before {
		t.Fatalf("%d attempts in all across the restart; want %d (%d interrupted by the stop)", rcv.requests, sub.MaxAttempts+sent-before, sent-before)
	}
}
