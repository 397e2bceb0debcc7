package peerbench_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/peerbench"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
)

// startFloe serves floe over a Pebble store in a temporary directory on a
// loopback port, as `floe serve --dev` would (no token needed, no policy).
func startFloe(t *testing.T) *testserver.Server {
	t.Helper()
	return testserver.Start(t, testserver.Options{})
}

// TestWorkloadsAgainstFloe runs every workload of the benchmarks a few
// times against floe and checks what they wrote, so the client the peer
// benchmark relies on is tested by `go test ./...` without Nessie.
func TestWorkloadsAgainstFloe(t *testing.T) {
	ctx := t.Context()
	floe := startFloe(t)
	c, err := peerbench.NewClient(floe.URL, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Config(ctx); err != nil {
		t.Fatal(err)
	}

	ns := peerbench.UniqueName("ns_")
	head, err := peerbench.CreateNamespace(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ clients, n int }{{1, 5}, {4, 40}} {
		t.Run(fmt.Sprintf("commits/clients=%d", tc.clients), func(t *testing.T) {
			prefix := fmt.Sprintf("c%d", tc.clients)
			st, err := peerbench.Commits(ctx, c, head, floe.Warehouse, ns, prefix, tc.clients, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if st.Ops != tc.n || len(st.Latency) != tc.n || st.PerSecond() <= 0 {
				t.Fatalf("stats %d ops, %d latencies, %.1f/s; want %d ops", st.Ops, len(st.Latency), st.PerSecond(), tc.n)
			}
			if !slices.IsSorted(st.Latency) {
				t.Fatalf("latencies not sorted: %v", st.Latency)
			}
			// Every client's every key landed on main: the stale expected
			// hashes were rebased, not refused.
			found := 0
			for w := range tc.clients {
				for i := 0; ; i++ {
					got, err := c.Content(ctx, "main", ns, fmt.Sprintf("%s_%d_%d", prefix, w, i))
					if err != nil {
						break
					}
					if got.Type != "ICEBERG_TABLE" || got.ID == "" {
						t.Fatalf("content %+v", got)
					}
					found++
				}
			}
			if found != tc.n {
				t.Fatalf("found %d committed tables on main, want %d", found, tc.n)
			}
		})
	}

	t.Run("references", func(t *testing.T) {
		for range 2 { // the second call finds them all and creates none
			if err := peerbench.EnsureBranches(ctx, c, "b_", 12); err != nil {
				t.Fatal(err)
			}
		}
		refs, pages, err := c.References(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(refs) != 13 || pages != 1 {
			t.Fatalf("%d references in %d pages, want 13 (main and b_000..b_011) in 1", len(refs), pages)
		}
		main, err := c.Reference(ctx, "main")
		if err != nil || main.Hash == "" || main.Type != "BRANCH" {
			t.Fatalf("main = %+v, %v", main, err)
		}
		st, err := peerbench.Repeat(3, func() error { _, err := c.Reference(ctx, "b_011"); return err })
		if err != nil || st.Ops != 3 {
			t.Fatalf("repeat: %+v, %v", st, err)
		}
	})

	t.Run("errors carry the answer", func(t *testing.T) {
		main, err := c.Reference(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Commit(ctx, "main", main.Hash, "no namespace",
			peerbench.Put(peerbench.Table(floe.Warehouse+"/x/m.json", 1), "absent_ns", "t"))
		var se *peerbench.StatusError
		if !errors.As(err, &se) || se.Status != http.StatusConflict || !strings.Contains(se.Body, "NAMESPACE_ABSENT") {
			t.Fatalf("commit into a missing namespace: %v", err)
		}
		_, err = c.Content(ctx, "main", ns, "missing")
		if !errors.As(err, &se) || se.Status != http.StatusNotFound {
			t.Fatalf("missing content: %v", err)
		}
		if _, err := peerbench.Repeat(5, func() error { return errors.New("boom") }); err == nil || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("Repeat hides the op's error: %v", err)
		}
	})
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		lat  []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 99, 0},
		{ms(7), 50, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 99, 4 * time.Millisecond},
		{ms(hundred...), 50, 50 * time.Millisecond},
		{ms(hundred...), 99, 99 * time.Millisecond},
		{ms(hundred...), 100, 100 * time.Millisecond},
	} {
		st := peerbench.Stats{Ops: len(tc.lat), Latency: tc.lat, Elapsed: time.Second}
		if got := st.Percentile(tc.p); got != tc.want {
			t.Errorf("p%v of %d latencies = %v, want %v", tc.p, len(tc.lat), got, tc.want)
		}
		if got := st.PerSecond(); got != float64(len(tc.lat)) {
			t.Errorf("PerSecond = %v, want %d", got, len(tc.lat))
		}
	}
}
