package eventhooks_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/catalog/eventhooks"
)

// BenchmarkCommitLatency measures what webhook subscriptions cost the
// commits they report: one writer commits (a new namespace each time:
// a commit event and a namespace.created event) on a Pebble store that
// fsyncs, as floe serve's does, while
//
//   - subscribers=0: nothing is subscribed (the floor);
//   - subscribers=10: ten subscriptions deliver every event to a loopback
//     receiver that answers 204 at once (twenty requests per commit);
//   - subscribers=10-stalled: ten subscriptions whose receiver never
//     answers (each delivery hangs for its one-minute timeout);
//   - .../200-per-s: the same with commits paced at 200 a second rather
//     than back to back (ns/op then counts the pauses; the percentiles
//     do not).
//
// The receiver runs in a process of its own, as a subscriber does. ns/op
// is the mean commit latency; p50-ms and p99-ms its percentiles.
// For the delivering case, catchup-ms is how long after the last commit
// every subscription's durable cursor reached the end of the feed.
func BenchmarkCommitLatency(b *testing.B) {
	for _, tc := range []struct {
		name    string
		subs    int
		stalled bool
		pace    time.Duration
	}{
		{"subscribers=0", 0, false, 0}, {"subscribers=10", 10, false, 0}, {"subscribers=10-stalled", 10, true, 0},
		{"subscribers=0/200-per-s", 0, false, 5 * time.Millisecond}, {"subscribers=10/200-per-s", 10, false, 5 * time.Millisecond},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := openStore(b, b.TempDir())
			feed := changefeed.New(s, changefeed.Options{})
			url := receiverProcess(b, tc.stalled)
			var subs []eventhooks.Subscription
			for i := range tc.subs {
				sub := subscription(fmt.Sprint("bench", i), url)
				sub.FromStart, sub.Timeout = false, time.Minute
				subs = append(subs, sub)
			}
			var svc *eventhooks.Service
			if len(subs) > 0 {
				var err error
				svc, err = eventhooks.New(eventhooks.Options{Store: s, Feed: feed, Subscriptions: subs})
				if err != nil {
					b.Fatal(err)
				}
				stop := runService(b, svc)
				defer stop()
			}
			commit(b, s, "main", "warmup")
			var lat []time.Duration
			i := 0
			next := time.Now()
			for b.Loop() {
				if tc.pace > 0 {
					next = next.Add(tc.pace)
					time.Sleep(time.Until(next))
				}
				start := time.Now()
				commit(b, s, "main", fmt.Sprint("n", i))
				lat = append(lat, time.Since(start))
				i++
			}
			b.ReportMetric(float64(pct(lat, 50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(pct(lat, 99).Microseconds())/1000, "p99-ms")
			if svc == nil || tc.stalled {
				return
			}
			end := time.Now()
			head, err := feed.Head(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			waitFor(b, 5*time.Minute, "every cursor at the end", func() bool {
				for _, sub := range subs {
					st, err := svc.Status(b.Context(), sub.Name)
					if err != nil || st.State == nil || st.State.Cursor.Before(head) {
						return false
					}
				}
				return true
			})
			b.ReportMetric(float64(time.Since(end).Milliseconds()), "catchup-ms")
		})
	}
}

const receiverChildEnv = "FLOE_EVENTHOOKS_RECEIVER_CHILD"

// receiverProcess starts a webhook receiver in a process of its own, as
// a subscriber is in production (so that its work is not scheduled among
// floe's goroutines), and returns its URL. It answers 204 at once, or,
// stalled, never.
func receiverProcess(b *testing.B, stalled bool) string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestReceiverChild$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%t", receiverChildEnv, stalled))
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(line)
}

// TestReceiverChild is the receiver of receiverProcess; it does nothing
// unless run by it.
func TestReceiverChild(t *testing.T) {
	t.Parallel()
	spec := os.Getenv(receiverChildEnv)
	if spec == "" {
		t.Skip("run by BenchmarkCommitLatency")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("http://%s/\n", ln.Addr())
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if spec == "true" {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
}
