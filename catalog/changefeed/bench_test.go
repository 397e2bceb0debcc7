package changefeed_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// benchHistory is the history the read benchmarks follow: benchCommits
// table commits over four branches (one table update each, so each
// commit is a commit event and a table.updated event), written by eight
// writers so that group commit makes several trees intermediate, as in
// production.
const (
	benchCommits  = 20000
	benchBranches = 4
	benchTables   = 200
)

// historyStore opens a store holding benchHistory on Pebble without
// fsync (the writes are set-up, not what is measured).
func historyStore(b *testing.B) *versionstore.Store {
	be, err := pebblebackend.Open(b.TempDir(), pebblebackend.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	s, err := versionstore.Open(b.Context(), be, versionstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if err := writeHistory(b.Context(), s); err != nil {
		b.Fatal(err)
	}
	return s
}

func writeHistory(ctx context.Context, s *versionstore.Store) error {
	main, _ := s.GetRef("main")
	ns := versionstore.ContentKey{"db"}
	res, err := s.Commit(ctx, versionstore.CommitRequest{Branch: "main", Expected: main.Head, Committer: "bench",
		Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: ns, Content: &versionstore.Content{Type: versionstore.Namespace}}}})
	if err != nil {
		return err
	}
	ids := map[string]string{}
	var ops []versionstore.Operation
	for i := range benchTables {
		key := versionstore.ContentKey{"db", fmt.Sprint("t", i)}
		ops = append(ops, versionstore.Operation{Kind: versionstore.OpPut, Key: key,
			Content: &versionstore.Content{Type: versionstore.IcebergTable, MetadataLocation: fmt.Sprintf("s3://w/t%d/0.json", i), SnapshotID: 1}})
	}
	res, err = s.Commit(ctx, versionstore.CommitRequest{Branch: "main", Expected: res.Commit.Hash, Committer: "bench", Operations: ops})
	if err != nil {
		return err
	}
	for _, a := range res.Added {
		ids[a.Key.String()] = a.ID
	}
	for b := 1; b < benchBranches; b++ {
		if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: fmt.Sprint("etl/", b), Type: versionstore.Branch, Target: res.Commit.Hash, Principal: "bench"}); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			branch := "main"
			if b := w % benchBranches; b > 0 {
				branch = fmt.Sprint("etl/", b)
			}
			for i := w; i < benchCommits; i += 8 {
				t := (i/8)%(benchTables/8)*8 + w // each writer its own tables
				key := versionstore.ContentKey{"db", fmt.Sprint("t", t)}
				r, err := s.GetRef(branch)
				if err != nil {
					errs <- err
					return
				}
				_, err = s.Commit(ctx, versionstore.CommitRequest{Branch: branch, Expected: r.Head, Committer: "bench",
					Meta: versionstore.CommitMeta{Message: "append", Properties: map[string]string{"iceberg.operation": "append", "iceberg.table": key.String()}},
					Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: key, Content: &versionstore.Content{
						Type: versionstore.IcebergTable, ID: ids[key.String()], MetadataLocation: fmt.Sprintf("s3://w/t%d/%d.json", t, i), SnapshotID: int64(i + 2)}}}})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// BenchmarkFeedRead measures the events per second one consumer reads,
// in pages of MaxLimit. "cold" catches up on all of benchHistory from the
// beginning with a new feed, deriving every event (a consumer far behind,
// or the first after a restart); "head" reads the newest 1000 log entries
// that other consumers already read (consumers following the head share
// the recent entries' events). "log" is the floor: the reference log's
// entries read forwards, nothing derived.
func BenchmarkFeedRead(b *testing.B) {
	s := historyStore(b)
	b.Run("log", func(b *testing.B) {
		var n int
		for b.Loop() {
			n = 0
			var after uint64
			for {
				es, err := s.RefLogAfter(b.Context(), after, changefeed.MaxLimit)
				if err != nil {
					b.Fatal(err)
				}
				if len(es) == 0 {
					break
				}
				n += len(es)
				after = es[len(es)-1].Seq
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	})
	read := func(b *testing.B, f *changefeed.Feed, from changefeed.Cursor) int {
		n := 0
		after := from
		for {
			page, err := f.Read(b.Context(), changefeed.Query{After: after, Limit: changefeed.MaxLimit})
			if err != nil {
				b.Fatal(err)
			}
			if len(page.Events) == 0 {
				return n
			}
			n += len(page.Events)
			after = page.Next
		}
	}
	b.Run("cold", func(b *testing.B) {
		var n int
		for b.Loop() {
			n = read(b, changefeed.New(s, changefeed.Options{}), changefeed.Start)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(n), "events")
	})
	b.Run("head", func(b *testing.B) {
		f := changefeed.New(s, changefeed.Options{})
		last, err := s.LastRefLogSeq(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		from, err := changefeed.ParseCursor(fmt.Sprint(last - 1000))
		if err != nil {
			b.Fatal(err)
		}
		read(b, f, from) // other consumers derived these
		var n int
		for b.Loop() {
			n = read(b, f, from)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(n), "events")
	})
}
