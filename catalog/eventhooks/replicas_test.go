package eventhooks_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/catalog/changefeed/feedtest"
	"github.com/floe-catalog/floe/catalog/eventhooks"
	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/lease"
	"github.com/floe-catalog/floe/versionstore/pgbackend"
)

// postgres is started by the first test that needs it.
var postgres pgtest.Lazy

func TestMain(m *testing.M) { os.Exit(pgtest.LazyMain(m, &postgres)) }

// replicaHeader tells the receiver which replica sent a request.
const replicaHeader = "X-Test-Replica"

type taggedTransport struct{ replica string }

func (t taggedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(replicaHeader, t.replica)
	return http.DefaultTransport.RoundTrip(r)
}

// TestReplicasDeliverOnce: two replicas over one PostgreSQL database both
// commit, and both run the same subscription under the lease
// "eventhooks", as floe serve does. One delivers; when it stops, the
// other takes over from the durable cursor. The receiver gets every event
// of the shared feed in order (repeats only of earlier ones), and the
// replicas never deliver at the same time: the deliveries are one
// replica's, then the other's.
func TestReplicasDeliverOnce(t *testing.T) {
	t.Parallel()
	c := postgres.Need(t)
	ctx := t.Context()
	dsn, err := c.Schema(ctx, pgtest.SchemaName(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	var stores [2]*versionstore.Store
	for i := range stores {
		be, err := pgbackend.Open(ctx, dsn, pgbackend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if stores[i], err = versionstore.Open(ctx, be, versionstore.Options{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	rcv := newReceiver(t)
	var mu sync.Mutex
	var senders []string
	rcv.setStatus(func(int) int { return http.StatusOK })
	rcvServe := rcv.srv.Config.Handler
	rcv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		senders = append(senders, r.Header.Get(replicaHeader))
		mu.Unlock()
		rcvServe.ServeHTTP(w, r)
	})

	var stops [2]context.CancelFunc
	var dones [2]chan struct{}
	for i, s := range stores {
		feed := changefeed.New(s, changefeed.Options{PollInterval: 5 * time.Millisecond})
		svc, err := eventhooks.New(eventhooks.Options{Store: s, Feed: feed, Poll: 100 * time.Millisecond, SaveEvery: 50 * time.Millisecond,
			Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
			HTTPClient: &http.Client{Transport: taggedTransport{fmt.Sprint(i)}}, Subscriptions: []eventhooks.Subscription{subscription("shared", rcv.srv.URL)}})
		if err != nil {
			t.Fatal(err)
		}
		lctx, stop := context.WithCancel(context.Background())
		stops[i], dones[i] = stop, make(chan struct{})
		go func() {
			defer close(dones[i])
			lease.New(s, nil).Lead(lctx, "eventhooks", fmt.Sprint("replica-", i), time.Second, nil, svc.Run)
		}()
		t.Cleanup(func() { stop(); <-dones[i] })
	}
	write := func(round int) {
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				for j := range 40 {
					commit(t, s, "main", fmt.Sprintf("r%d_%d_%d", round, i, j))
				}
			})
		}
		wg.Wait()
	}
	write(0)
	feed := changefeed.New(stores[0], changefeed.Options{})
	waitFor(t, time.Minute, "the first round delivered", func() bool { return distinct(rcv.deliveries()) >= len(feedtest.ReadAll(t, feed, changefeed.Start)) })
	mu.Lock()
	leader := senders[0]
	mu.Unlock()
	var l int
	fmt.Sscan(leader, &l)
	stops[l]() // the leader stops; the other takes over within the lease's TTL
	<-dones[l]
	write(1)
	full := feedtest.ReadAll(t, feed, changefeed.Start)
	waitFor(t, time.Minute, "every event delivered", func() bool { return distinct(rcv.deliveries()) >= len(full) })
	repeats := checkInOrder(t, full, rcv.deliveries())
	mu.Lock()
	defer mu.Unlock()
	switches := 0
	for i := 1; i < len(senders); i++ {
		if senders[i] != senders[i-1] {
			switches++
		}
	}
	if switches != 1 || senders[len(senders)-1] == leader {
		t.Fatalf("deliveries came from replicas %v (leader %s); want the leader's, then the other's", compress(senders), leader)
	}
	t.Logf("%d events, %d deliveries (%d repeats), replica %s then the other", len(full), len(rcv.deliveries()), repeats, leader)
}

// checkInOrder fails t unless every delivery is either the next event of
// full not yet delivered or a repeat of an earlier one, and every event
// was delivered; it returns the repeats.
func checkInOrder(t *testing.T, full []changefeed.Event, got []delivery) int {
	t.Helper()
	index := map[string]int{}
	for i, ev := range full {
		index[ev.ID.String()] = i
	}
	next, repeats := 0, 0
	for i, d := range got {
		at, ok := index[d.ce.ID]
		switch {
		case !ok:
			t.Fatalf("delivery %d is event %s, which the feed does not have", i, d.ce.ID)
		case at == next:
			next++
		case at < next:
			repeats++
		default:
			t.Fatalf("delivery %d is event %s, but event %s before it was never delivered", i, d.ce.ID, full[next].ID)
		}
	}
	if next != len(full) {
		t.Fatalf("%d of the feed's %d events were delivered", next, len(full))
	}
	return repeats
}

func compress(ss []string) []string {
	var out []string
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, fmt.Sprintf("%s×", s))
		}
		out[len(out)-1] += "."
	}
	return out
}

func distinct(ds []delivery) int {
	seen := map[string]bool{}
	for _, d := range ds {
		seen[d.ce.ID] = true
	}
	return len(seen)
}
