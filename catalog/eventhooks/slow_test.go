package eventhooks_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/catalog/eventhooks"
	"github.com/floe-catalog/floe/versionstore"
)

// TestSlowWebhookDoesNotSlowCommits: ten subscriptions whose receiver
// holds every request for 30 s; commits made meanwhile take what commits
// take without subscribers, all of them completing while the deliveries
// are still stalled. Delivery reads the log after the fact; nothing on
// the commit path waits for it.
func TestSlowWebhookDoesNotSlowCommits(t *testing.T) {
	s := openStore(t, t.TempDir())
	feed := changefeed.New(s, changefeed.Options{PollInterval: 5 * time.Millisecond})
	rcv := newReceiver(t)
	stall := make(chan struct{})
	rcv.setStall(stall)
	t.Cleanup(func() { close(stall) })
	var subs []eventhooks.Subscription
	for i := range 10 {
		sub := subscription(fmt.Sprint("slow", i), rcv.srv.URL)
		sub.Timeout = 30 * time.Second
		subs = append(subs, sub)
	}
	svc, err := eventhooks.New(eventhooks.Options{Store: s, Feed: feed, Poll: 100 * time.Millisecond, Subscriptions: subs})
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	baseline := commitLatencies(t, s, "base", n)
	runService(t, svc)
	commit(t, s, "main", "first")
	waitFor(t, 10*time.Second, "every subscription stalled on a delivery", func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		return rcv.entered >= len(subs)
	})
	start := time.Now()
	stalled := commitLatencies(t, s, "stalled", n)
	elapsed := time.Since(start)
	rcv.mu.Lock()
	answered := rcv.requests
	rcv.mu.Unlock()
	if answered != 0 {
		t.Fatalf("the receiver answered %d requests; the test needs them all stalled", answered)
	}
	b50, b99 := pct(baseline, 50), pct(baseline, 99)
	s50, s99 := pct(stalled, 50), pct(stalled, 99)
	t.Logf("commit latency without subscribers p50 %s p99 %s; with 10 stalled subscribers p50 %s p99 %s; %d commits in %s",
		b50, b99, s50, s99, n, elapsed)
	if elapsed > 15*time.Second || s99 > 2*time.Second {
		t.Fatalf("commits waited for the stalled deliveries: %d commits took %s, p99 %s", n, elapsed, s99)
	}
	if s50 > 10*b50+20*time.Millisecond {
		t.Errorf("median commit latency %s with stalled subscribers against %s without", s50, b50)
	}
}

func commitLatencies(t *testing.T, s *versionstore.Store, prefix string, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range n {
		start := time.Now()
		commit(t, s, "main", fmt.Sprint(prefix, i))
		out[i] = time.Since(start)
	}
	return out
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
