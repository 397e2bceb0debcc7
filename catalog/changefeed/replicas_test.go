package changefeed_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/catalog/changefeed/feedtest"
	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pgbackend"
)

// postgres is started by the first test that needs it.
var postgres pgtest.Lazy

func TestMain(m *testing.M) { os.Exit(pgtest.LazyMain(m, &postgres)) }

// TestReplicasShareOneFeed runs two replicas over one PostgreSQL
// database, both committing to a shared branch and to one branch each,
// while a consumer follows the feed switching replica at every page. The
// consumer must end with exactly the feed either replica reads afterwards
// (so no entry became visible below a cursor it had passed), and that
// feed holds every acknowledged commit once.
func TestReplicasShareOneFeed(t *testing.T) {
	t.Parallel()
	c := postgres.Need(t)
	ctx := t.Context()
	dsn, err := c.Schema(ctx, pgtest.SchemaName(t.TempDir())) // a schema per run: -count>1 works
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
	main, err := stores[0].GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range stores {
		if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: fmt.Sprint("r", i), Type: versionstore.Branch, Target: main.Head, Principal: "replica"}); err != nil {
			t.Fatal(err)
		}
	}
	feeds := [2]*changefeed.Feed{
		changefeed.New(stores[0], changefeed.Options{PollInterval: 5 * time.Millisecond}),
		changefeed.New(stores[1], changefeed.Options{PollInterval: 5 * time.Millisecond}),
	}

	var mu sync.Mutex
	acked := map[string]string{}
	writers := sync.WaitGroup{}
	for w := range 4 {
		writers.Go(func() {
			s := stores[w%2]
			for i := range 40 {
				branch := "main"
				if i%2 == 1 {
					branch = fmt.Sprint("r", w%2)
				}
				r, err := s.GetRef(branch)
				if err != nil {
					t.Error(err)
					return
				}
				if ctx.Err() != nil {
					return // the test ended (failed) while writing
				}
				res, err := s.Commit(ctx, versionstore.CommitRequest{Branch: branch, Expected: r.Head, Committer: fmt.Sprint("w", w),
					Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{fmt.Sprintf("w%d_%d", w, i)}, Content: &versionstore.Content{Type: versionstore.Namespace}}}})
				if err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				mu.Lock()
				acked[res.Commit.Hash.String()] = branch
				mu.Unlock()
			}
		})
	}
	// A failing test stops writing before it completes: no writer may
	// report to it afterwards.
	t.Cleanup(writers.Wait)
	writing := make(chan struct{})
	go func() { writers.Wait(); close(writing) }()

	var followed []changefeed.Event
	after := changefeed.Start
	for page := 0; ; page++ {
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		p, err := feeds[page%2].Wait(wctx, changefeed.Query{After: after, Limit: 7})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		followed = append(followed, p.Events...)
		after = p.Next
		if len(p.Events) == 0 {
			select {
			case <-writing:
			default:
				continue
			}
			if last, _ := stores[0].LastRefLogSeq(ctx); after.Seq >= last {
				break
			}
		}
	}
	for i := range feeds {
		full := feedtest.ReadAll(t, feeds[i], changefeed.Start)
		if len(full) != len(followed) {
			t.Fatalf("replica %d reads %d events; the consumer followed %d", i, len(full), len(followed))
		}
		for j := range full {
			if full[j].ID != followed[j].ID || full[j].Commit != followed[j].Commit || full[j].Type != followed[j].Type {
				t.Fatalf("event %d: replica %d reads %s %s %s; the consumer saw %s %s %s", j, i,
					full[j].ID, full[j].Type, full[j].Commit, followed[j].ID, followed[j].Type, followed[j].Commit)
			}
		}
	}
	seen := map[string]int{}
	for _, ev := range followed {
		if ev.Type == changefeed.CommitMade && acked[ev.Commit] == ev.Ref {
			seen[ev.Commit]++
		}
	}
	for h, b := range acked {
		if seen[h] != 1 {
			t.Errorf("commit %s on %s seen %d times", h, b, seen[h])
		}
	}
	t.Logf("%d commits from two replicas, %d events followed", len(acked), len(followed))
}
