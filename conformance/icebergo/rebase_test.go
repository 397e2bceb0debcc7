package icebergo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Zero-retry appends: floe rebases a stale pure append onto the table's
// new head instead of answering 409. iceberg-go retries nothing by default
// (commit.retry.num-retries is 0), so these tests see every 409 the
// server sends.

// TestZeroRetryAppends has 32 iceberg-go writers, with the library's
// defaults, load one table and then append to it at once: all but one
// commit on a stale main, and each must still succeed on its first and
// only attempt. A scan then returns every row exactly once, and each
// snapshot's summary counts what it and its new ancestors hold.
func TestZeroRetryAppends(t *testing.T) {
	t.Parallel()
	if table.CommitNumRetriesDefault != 0 {
		t.Fatalf("iceberg-go retries commits %d times by default; this test needs a client that does not", table.CommitNumRetriesDefault)
	}
	for _, fv := range []string{"2", "3"} {
		t.Run("v"+fv, func(t *testing.T) { testZeroRetryAppends(t, fv, true, nil) })
	}
	// On a table without a snapshot every writer asserts that main does
	// not exist yet.
	t.Run("v2/empty", func(t *testing.T) { testZeroRetryAppends(t, "2", false, nil) })
	// Writers that merge manifests on append (Iceberg Java's default):
	// each commit's manifest carries the seed's file as an EXISTING entry
	// and its list drops the seed's manifest.
	t.Run("v2/merge-append", func(t *testing.T) {
		testZeroRetryAppends(t, "2", true, iceberg.Properties{
			table.ManifestMergeEnabledKey: "true", table.ManifestMinMergeCountKey: "2",
		})
	})
}

func testZeroRetryAppends(t *testing.T, formatVersion string, seeded bool, props iceberg.Properties) {
	f := startFloe(t)
	ctx := t.Context()
	setup := f.catalog(t, "lake")
	if err := setup.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	ident := catalog.ToIdentifier("ns", "hot")
	tableProps := iceberg.Properties{table.PropertyFormatVersion: formatVersion}
	for k, v := range props {
		tableProps[k] = v
	}
	created := createTable(t, setup, ident, catalog.WithProperties(tableProps))
	first := 1 // the first row's id
	if seeded {
		appendRows(t, created, []row{{0, "eu", 0}})
		first = 0
	}

	const writers = 32
	tables := make([]*table.Table, writers)
	for i := range tables {
		tbl, err := f.catalog(t, "lake").LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		tables[i] = tbl // every writer read the same main
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, writers)
	for i, tbl := range tables {
		wg.Go(func() {
			at := arrowTable(t, tbl, []row{{int64(i + 1), "eu", float64(i + 1)}})
			defer at.Release()
			<-start
			if _, err := tbl.AppendTable(ctx, at, 1024, nil); err != nil {
				errs <- fmt.Errorf("writer %d: %w", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	tbl, err := setup.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	rows := writers + 1 - first
	var want []row
	for i := first; i <= writers; i++ {
		want = append(want, row{int64(i), "eu", float64(i)})
	}
	rowsEqual(t, scanRows(t, tbl, ""), want)
	checkSummaryChain(t, tbl.Metadata(), rows)
	if v := strconv.Itoa(tbl.Metadata().Version()); v != formatVersion {
		t.Fatalf("format version %s, want %s", v, formatVersion)
	}
	if formatVersion == "3" && tbl.Metadata().NextRowID() != int64(rows) {
		t.Errorf("next-row-id %d, want %d", tbl.Metadata().NextRowID(), rows)
	}

	m := f.metrics(t)
	if got := m[`floe_iceberg_commits_total{operation="append",outcome="rebased"}`]; got < 1 {
		t.Errorf("no rebased append counted: %v", m)
	}
	if ok, rb := m[`floe_iceberg_commits_total{operation="append",outcome="ok"}`], m[`floe_iceberg_commits_total{operation="append",outcome="rebased"}`]; int(ok+rb) != rows {
		t.Errorf("appends ok %v + rebased %v, want %d", ok, rb, rows)
	}
	for k, v := range m {
		if strings.Contains(k, `outcome="conflict"`) && v != 0 {
			t.Errorf("%s = %v, want no conflicts", k, v)
		}
	}
}

// checkSummaryChain walks main from its head to the first snapshot: there
// are n, each an append of one record whose total-records is its depth,
// and the rebased ones name themselves as their source.
func checkSummaryChain(t *testing.T, meta table.Metadata, n int) {
	t.Helper()
	s := meta.CurrentSnapshot()
	depth := 0
	for ; s != nil; depth++ {
		p := s.Summary.Properties
		if s.Summary.Operation != table.OpAppend || p["added-records"] != "1" || p["added-data-files"] != "1" {
			t.Errorf("snapshot %d summary %v", s.SnapshotID, s.Summary)
		}
		if got, want := p["total-records"], strconv.Itoa(n-depth); got != want {
			t.Errorf("snapshot %d total-records %s, want %s", s.SnapshotID, got, want)
		}
		if got, want := p["total-data-files"], strconv.Itoa(n-depth); got != want {
			t.Errorf("snapshot %d total-data-files %s, want %s", s.SnapshotID, got, want)
		}
		if src, ok := p["floe.merge.source-snapshot-id"]; ok && src != strconv.FormatInt(s.SnapshotID, 10) {
			t.Errorf("rebased snapshot %d names source %s", s.SnapshotID, src)
		}
		if s.ParentSnapshotID == nil {
			s = nil
		} else {
			s = meta.SnapshotByID(*s.ParentSnapshotID)
		}
	}
	if depth != n {
		t.Errorf("main has %d snapshots in its history, want %d", depth, n)
	}
}

// TestRebaseLimits: only pure appends are rebased. An overwrite or a
// delete made on a main that an append has since moved still fails, as
// under serializable isolation it must; and a table that opts out gets
// 409 for a stale append too.
func TestRebaseLimits(t *testing.T) {
	t.Parallel()
	f := startFloe(t)
	ctx := t.Context()
	cat := f.catalog(t, "lake")
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	serializable := iceberg.Properties{
		"write.delete.isolation-level": "serializable", "write.update.isolation-level": "serializable",
		"write.merge.isolation-level": "serializable",
	}

	t.Run("overwrite", func(t *testing.T) {
		tbl := createTable(t, cat, catalog.ToIdentifier("ns", "ow"), catalog.WithProperties(serializable))
		tbl = appendRows(t, tbl, []row{{1, "eu", 1}})
		appendRows(t, tbl, []row{{2, "eu", 2}}) // tbl is stale now
		at := arrowTable(t, tbl, []row{{3, "eu", 3}})
		defer at.Release()
		if _, err := tbl.OverwriteTable(ctx, at, 1024, nil); !errors.Is(err, table.ErrCommitFailed) {
			t.Fatalf("overwrite on a stale main: %v, want commit failed", err)
		}
		tx := tbl.NewTransaction()
		if err := tx.Delete(ctx, iceberg.EqualTo(iceberg.Reference("id"), int64(1)), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx); !errors.Is(err, table.ErrCommitFailed) {
			t.Fatalf("delete on a stale main: %v, want commit failed", err)
		}
		cur, err := cat.LoadTable(ctx, catalog.ToIdentifier("ns", "ow"))
		if err != nil {
			t.Fatal(err)
		}
		rowsEqual(t, scanRows(t, cur, ""), []row{{1, "eu", 1}, {2, "eu", 2}})
	})

	t.Run("opt-out", func(t *testing.T) {
		tbl := createTable(t, cat, catalog.ToIdentifier("ns", "optout"),
			catalog.WithProperties(iceberg.Properties{"floe.commit.rebase-appends": "false"}))
		stale := appendRows(t, tbl, []row{{1, "eu", 1}})
		appendRows(t, stale, []row{{2, "eu", 2}})
		at := arrowTable(t, stale, []row{{3, "eu", 3}})
		defer at.Release()
		if _, err := stale.AppendTable(ctx, at, 1024, nil); !errors.Is(err, table.ErrCommitFailed) {
			t.Fatalf("stale append to a table that opted out: %v, want commit failed", err)
		}
		// Opting back in makes the same stale append land.
		cur, err := cat.LoadTable(ctx, catalog.ToIdentifier("ns", "optout"))
		if err != nil {
			t.Fatal(err)
		}
		tx := cur.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{"floe.commit.rebase-appends": "true"}); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := stale.AppendTable(ctx, at, 1024, nil); err != nil {
			t.Fatalf("stale append after opting in: %v", err)
		}
		cur, err = cat.LoadTable(ctx, catalog.ToIdentifier("ns", "optout"))
		if err != nil {
			t.Fatal(err)
		}
		rowsEqual(t, scanRows(t, cur, ""), []row{{1, "eu", 1}, {2, "eu", 2}, {3, "eu", 3}})
	})

	t.Run("transaction", func(t *testing.T) {
		// Two stale appends in one transaction are both rebased; with one
		// table opted out, neither lands.
		a := appendRows(t, createTable(t, cat, catalog.ToIdentifier("ns", "ta")), []row{{1, "eu", 1}})
		b := appendRows(t, createTable(t, cat, catalog.ToIdentifier("ns", "tb")), []row{{1, "eu", 1}})
		appendRows(t, a, []row{{2, "eu", 2}})
		appendRows(t, b, []row{{2, "eu", 2}})
		commit := func(a, b *table.Table, id int64) error {
			mtx, err := catalog.NewMultiTableTransaction(cat)
			if err != nil {
				t.Fatal(err)
			}
			for _, tbl := range []*table.Table{a, b} {
				tx := tbl.NewTransaction()
				at := arrowTable(t, tbl, []row{{id, "eu", float64(id)}})
				err := tx.AppendTable(ctx, at, 1024, nil)
				at.Release()
				if err != nil {
					t.Fatal(err)
				}
				if err := mtx.AddTransaction(tx); err != nil {
					t.Fatal(err)
				}
			}
			return mtx.Commit(ctx)
		}
		if err := commit(a, b, 3); err != nil {
			t.Fatalf("transaction of two stale appends: %v", err)
		}
		want := []row{{1, "eu", 1}, {2, "eu", 2}, {3, "eu", 3}}
		for _, name := range []string{"ta", "tb"} {
			cur, err := cat.LoadTable(ctx, catalog.ToIdentifier("ns", name))
			if err != nil {
				t.Fatal(err)
			}
			rowsEqual(t, scanRows(t, cur, ""), want)
		}

		curB, err := cat.LoadTable(ctx, catalog.ToIdentifier("ns", "tb"))
		if err != nil {
			t.Fatal(err)
		}
		tx := curB.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{"floe.commit.rebase-appends": "false"}); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := commit(a, b, 4); !errors.Is(err, table.ErrCommitFailed) {
			t.Fatalf("transaction with an opted-out stale table: %v, want commit failed", err)
		}
		for _, name := range []string{"ta", "tb"} {
			cur, err := cat.LoadTable(ctx, catalog.ToIdentifier("ns", name))
			if err != nil {
				t.Fatal(err)
			}
			rowsEqual(t, scanRows(t, cur, ""), want)
		}
	})
}

// metrics scrapes the server's /metrics into series -> value.
func (f *floeServer) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(context.WithoutCancel(t.Context()), http.MethodGet, "http://"+f.addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}
