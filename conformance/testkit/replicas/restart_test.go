package replicas

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icetable "github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
)

// configPrefix asks a replica for the path prefix of the "lake" warehouse.
func configPrefix(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/v1/config?warehouse=lake")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cfg struct {
		Overrides map[string]string `json:"overrides"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.Overrides["prefix"]
}

func status(url string) int {
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDatabaseRestart stops the database under three replicas: requests
// that need it fail with 503 (never a 500, never a partial write), and once
// it is back every replica recovers by itself, with every acknowledged
// append still there.
func TestDatabaseRestart(t *testing.T) {
	c := pgtest.Need(t, cluster)
	l := newLake(t, 3)
	ctx := t.Context()
	cat := l.catalog(0)
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("db"), nil); err != nil {
		t.Fatal(err)
	}
	if err := l.createTable(cat, "db", "events"); err != nil {
		t.Fatal(err)
	}
	id := catalog.ToIdentifier("db", "events")
	if _, err := appendIDs(ctx, cat, id, seq(0, 5)); err != nil {
		t.Fatal(err)
	}
	prefix := configPrefix(t, l.replicas[0].URL)
	path := "/v1/" + prefix + "/namespaces/db/tables/events"
	cat1, cat2 := l.catalog(1), l.catalog(2) // their config needs the database

	// Writers on every replica keep appending through the outage.
	w := startWriters([]*rest.Catalog{l.catalog(0), l.catalog(1), l.catalog(2)}, id, 1000)
	w.waitAcks(t, 6)

	if err := c.StopServer("fast"); err != nil {
		t.Fatal(err)
	}
	running := false
	t.Cleanup(func() {
		if !running {
			_ = c.StartServer()
		}
	})
	for i, r := range l.replicas {
		if got := status(r.URL + path); got != http.StatusServiceUnavailable {
			t.Errorf("replica %d: load table with the database down: status %d, want 503", i, got)
		}
	}
	// A commit while the database is down fails, and is not half done.
	_, downErr := appendIDs(ctx, cat1, id, seq(50, 5))
	if downErr == nil {
		t.Fatal("an append succeeded with the database down")
	}
	t.Logf("append with the database down: %v", downErr)

	if err := c.StartServer(); err != nil {
		t.Fatal(err)
	}
	running = true
	for i, r := range l.replicas {
		deadline := time.Now().Add(time.Minute)
		for status(r.URL+path) != http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d did not recover within a minute of the database's restart", i)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if _, err := appendIDs(ctx, cat2, id, seq(100, 5)); err != nil {
		t.Fatalf("append after the restart: %v", err)
	}
	w.waitAcks(t, w.acks()+6) // the writers commit again
	acked, tried := w.stop()
	t.Logf("writers: %d appends acknowledged, %d attempted", len(acked)/2, len(tried)/2)

	for r := range l.replicas {
		checkAppends(t, l.catalog(r), id, append(append(seq(0, 5), seq(100, 5)...), acked...), tried, func(v int64) bool {
			return v < 5 || (v >= 100 && v < 105)
		})
	}
}

// checkAppends scans a table written by writers (and by known appends,
// whose ids known reports): every acknowledged id is there exactly once,
// and anything else there was at least attempted (a commit whose answer
// was lost may have landed), whole: both ids of its pair.
func checkAppends(t *testing.T, cat *rest.Catalog, id icetable.Identifier, acked []int64, tried map[int64]bool, known func(int64) bool) {
	t.Helper()
	got := scanIDs(t, cat, id)
	if len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Fatalf("duplicate ids in %v", got)
	}
	for _, v := range acked {
		if _, ok := slices.BinarySearch(got, v); !ok {
			t.Fatalf("acknowledged id %d is missing", v)
		}
	}
	for _, v := range got {
		switch {
		case known(v):
		case !tried[v]:
			t.Fatalf("id %d was never written", v)
		default:
			if _, ok := slices.BinarySearch(got, v^1); !ok {
				t.Fatalf("id %d is there without its pair %d: a torn append", v, v^1)
			}
		}
	}
}

// writers append pairs of fresh ids (2k, 2k+1 from a base) to one table
// through every replica until stopped, recording what was acknowledged.
type writers struct {
	mu     sync.Mutex
	acked  []int64
	tried  map[int64]bool
	stopCh chan struct{}
	wg     sync.WaitGroup
}

func startWriters(cats []*rest.Catalog, id icetable.Identifier, base int64) *writers {
	w := &writers{tried: map[int64]bool{}, stopCh: make(chan struct{})}
	var next atomic.Int64
	next.Store(base / 2)
	for _, cat := range cats {
		w.wg.Go(func() {
			for {
				select {
				case <-w.stopCh:
					return
				default:
				}
				k := next.Add(1)
				ids := []int64{2 * k, 2*k + 1}
				w.mu.Lock()
				w.tried[ids[0]], w.tried[ids[1]] = true, true
				w.mu.Unlock()
				if _, err := appendIDs(context.Background(), cat, id, ids); err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				w.mu.Lock()
				w.acked = append(w.acked, ids...)
				w.mu.Unlock()
			}
		})
	}
	return w
}

func (w *writers) acks() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked) / 2
}

func (w *writers) waitAcks(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for w.acks() < n {
		if time.Now().After(deadline) {
			t.Fatalf("writers made %d appends, want %d", w.acks(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *writers) stop() ([]int64, map[int64]bool) {
	close(w.stopCh)
	w.wg.Wait()
	return w.acked, w.tried
}
