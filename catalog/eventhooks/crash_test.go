package eventhooks_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/catalog/changefeed/feedtest"
	"github.com/floe-catalog/floe/catalog/eventhooks"
	"github.com/floe-catalog/floe/conformance/testkit/crashchild"
	"github.com/floe-catalog/floe/versionstore"
)

// TestCrashDelivery kills a real process with SIGKILL, five times on one
// data directory, while it commits and merges on three branches and
// delivers the feed to a receiver in this process (which answers slowly
// now and then, so deliveries are in flight when the kill comes). Then
// one more deliverer runs here until the subscription's cursor reaches
// the end. The receiver must have got:
//
//   - every event of the recovered feed, none missing, in the feed's
//     order (so in order per branch): each delivery is either the next
//     event not yet delivered or a repeat of an earlier one (what a kill
//     makes the deliverer send again after its last durable cursor);
//   - every acknowledged commit's event, on its branch.
//
// The child is this test binary re-executed with crashChildEnv set.
func TestCrashDelivery(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills processes")
	}
	dir := t.TempDir()
	rcv := newReceiver(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	var delayMu sync.Mutex
	rcv.setStatus(func(int) int {
		delayMu.Lock()
		d := time.Duration(rng.IntN(3)) * time.Millisecond
		delayMu.Unlock()
		time.Sleep(d) // the receiver's lock is held: deliveries queue up behind it
		return http.StatusOK
	})
	acked := map[string]string{} // commit -> branch
	const cycles = 5
	for cycle := range cycles {
		delayMu.Lock()
		life := time.Duration(400+rng.IntN(900)) * time.Millisecond
		delayMu.Unlock()
		for _, l := range runCrashChild(t, dir, rcv.srv.URL, cycle, life) {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "ACK" {
				acked[f[1]] = f[2]
			}
		}
		t.Logf("cycle %d: %d commits acknowledged, %d deliveries so far", cycle, len(acked), len(rcv.deliveries()))
	}

	s := openStore(t, dir)
	feed := changefeed.New(s, changefeed.Options{PollInterval: 5 * time.Millisecond})
	svc, err := eventhooks.New(eventhooks.Options{Store: s, Feed: feed, Poll: 100 * time.Millisecond,
		Subscriptions: []eventhooks.Subscription{crashSubscription(rcv.srv.URL)}})
	if err != nil {
		t.Fatal(err)
	}
	stop := runService(t, svc)
	head, err := feed.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the cursor at the feed's end", func() bool {
		st, err := svc.Status(t.Context(), "crash")
		return err == nil && st.State != nil && !st.State.Cursor.Before(head)
	})
	stop()

	full := feedtest.ReadAll(t, feed, changefeed.Start)
	index := map[string]int{}
	for i, ev := range full {
		index[ev.ID.String()] = i
	}
	next, repeats := 0, 0
	for i, d := range rcv.deliveries() {
		at, ok := index[d.ce.ID]
		switch {
		case !ok:
			t.Fatalf("delivery %d is event %s, which the recovered feed does not have", i, d.ce.ID)
		case at == next:
			if d.ce.FloeCommit != full[at].Commit || d.ce.Type != eventhooks.TypePrefix+string(full[at].Type) {
				t.Fatalf("delivery %d, event %s: %s %s; the recovered feed has %s %s", i, d.ce.ID, d.ce.Type, d.ce.FloeCommit, full[at].Type, full[at].Commit)
			}
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
	onBranch := map[string]string{}
	for _, ev := range full {
		if ev.Type == changefeed.CommitMade || ev.Type == changefeed.MergeMade {
			onBranch[ev.Commit] = ev.Ref
		}
	}
	for c, b := range acked {
		if onBranch[c] != b {
			t.Errorf("acknowledged commit %s on %s: delivered on %q", c, b, onBranch[c])
		}
	}
	if rcv.badSig != 0 {
		t.Fatalf("%d deliveries badly signed", rcv.badSig)
	}
	t.Logf("%d events delivered in order across %d kills, %d repeats; %d acknowledged commits", len(full), cycles, repeats, len(acked))
}

func crashSubscription(url string) eventhooks.Subscription {
	sub := subscription("crash", url)
	sub.Backoff, sub.MaxBackoff, sub.MaxAttempts = 10*time.Millisecond, 100*time.Millisecond, 1000
	return sub
}

const crashChildEnv = "FLOE_EVENTHOOKS_CRASH_CHILD"

// runCrashChild runs one child on dir until it is killed after life, and
// returns the complete lines it printed.
func runCrashChild(t *testing.T, dir, url string, cycle int, life time.Duration) []string {
	t.Helper()
	return crashchild.Run(t, "TestCrashChild", fmt.Sprintf("%s=%s|%s|%d", crashChildEnv, dir, url, cycle), life)
}

// TestCrashChild is the child of TestCrashDelivery; it does nothing
// unless run by it.
func TestCrashChild(t *testing.T) {
	t.Parallel()
	spec := os.Getenv(crashChildEnv)
	if spec == "" {
		t.Skip("run by TestCrashDelivery")
	}
	parts := strings.Split(spec, "|")
	dir, url, cycle := parts[0], parts[1], parts[2]
	ctx := context.Background()
	s := openStore(t, dir)
	var mu sync.Mutex
	print := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	branches := []string{"main", "b1", "b2"}
	for _, b := range branches[1:] {
		if _, err := s.GetRef(b); err != nil {
			createBranch(t, s, b)
		}
	}
	feed := changefeed.New(s, changefeed.Options{PollInterval: 5 * time.Millisecond})
	svc, err := eventhooks.New(eventhooks.Options{Store: s, Feed: feed, Poll: 100 * time.Millisecond, SaveEvery: 50 * time.Millisecond,
		Subscriptions: []eventhooks.Subscription{crashSubscription(url)}})
	if err != nil {
		t.Fatal(err)
	}
	go svc.Run(ctx)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for i := 0; ; i++ {
				b := branches[rng.IntN(len(branches))]
				r, err := s.GetRef(b)
				if err != nil {
					t.Error(err)
					return
				}
				if rng.IntN(8) == 0 {
					src := branches[rng.IntN(len(branches))]
					sr, _ := s.GetRef(src)
					if src == b {
						continue
					}
					res, err := s.Merge(ctx, versionstore.MergeRequest{Target: b, ExpectedTarget: r.Head, From: sr.Head, Committer: "crash"})
					if err == nil && res.WasApplied {
						print("ACK %s %s", res.ResultantHash, b)
					}
					continue
				}
				key := versionstore.ContentKey{fmt.Sprintf("c%s_w%d_%d", cycle, w, i)}
				res, err := s.Commit(ctx, versionstore.CommitRequest{Branch: b, Expected: r.Head, Committer: "crash",
					Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: key, Content: &versionstore.Content{Type: versionstore.Namespace}}}})
				if err == nil {
					print("ACK %s %s", res.Commit.Hash, b)
				}
				time.Sleep(time.Duration(1+rng.IntN(4)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
}
