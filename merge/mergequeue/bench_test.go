package mergequeue_test

// BenchmarkSeedDay replays seed 000's "A Day in the Merge Queue", scaled
// to one machine, through real Iceberg commits (iceberg-go through a real
// floe server): on one fact table partitioned by day, 28 ingestion
// branches append to today's partition, 8 transformation branches run a
// MERGE INTO on a past day each (copy-on-write, as Spark's default: one
// row updated, one inserted, the day's file rewritten; half of them then
// DELETE a row, a second rewrite), with no operation record, while a
// compaction on main rewrites older days, 3 feature branches (one
// changing the schema) and 1 backfill touching six months publish into
// main. It runs the day twice: through the queue (every writer submits
// at once, the worker lands them), and as naive direct merges into main
// through the Nessie API by the 40 writers at once, each retrying on 409
// up to naiveRetries times. Reported per mode: publishes per second,
// p50/p99 wait (submit to landed), client retries, failures, refusals,
// writes lost (rows of a publish that succeeded, or of main before the
// day, missing from main, or an update not applied), rows a published
// DELETE or MERGE INTO removed that are still there, and duplicated rows.
// Every mergeable branch must land (the schema change waits for review in
// the queue) and no row may be lost, duplicated or left behind: the
// benchmark fails otherwise. The naive run reports the queue's
// throughput of the same run over its own (queue-x-naive).
//
//	go test -run '^$' -bench SeedDay -benchtime 1x ./merge/mergequeue/

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/conformance/testkit/lakescenario"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/versionstore"
)

const naiveRetries = 10

func BenchmarkSeedDay(b *testing.B) {
	throughput := map[string]float64{}
	for _, mode := range []string{"queue", "naive"} {
		b.Run(mode, func(b *testing.B) {
			var res dayResult
			for b.Loop() {
				b.StopTimer()
				d := newDay(b)
				b.StartTimer()
				cpu := processCPU()
				if mode == "queue" {
					res = d.throughQueue(b)
				} else {
					res = d.naive(b)
				}
				res.cpu = processCPU() - cpu
				b.StopTimer()
				d.check(b, &res)
				b.StartTimer()
			}
			b.ReportMetric(res.throughput(), "publishes/s")
			b.ReportMetric(res.cpuPerPublish(), "cpu-ms/publish")
			b.ReportMetric(res.percentile(0.5), "p50-wait-s")
			b.ReportMetric(res.percentile(0.99), "p99-wait-s")
			b.ReportMetric(float64(res.retries), "retries")
			b.ReportMetric(float64(res.failures), "failures")
			b.ReportMetric(float64(res.refusals), "refusals")
			b.ReportMetric(float64(res.lost), "lost-rows")
			b.ReportMetric(float64(res.dupes), "duplicate-rows")
			b.ReportMetric(float64(res.leftover), "undeleted-rows")
			b.ReportMetric(float64(res.review), "in-review")
			throughput[mode] = res.throughput()
			if q, n := throughput["queue"], throughput["naive"]; mode == "naive" && q > 0 && n > 0 {
				b.ReportMetric(q/n, "queue-x-naive")
			}
			b.Logf("%s: %d published in %.2fs (%.1f/s, %.1f cpu-ms each), wait p50 %.2fs p99 %.2fs, %d retries, %d failures, %d refusals, %d in review, %d rows lost, %d duplicated, %d not deleted",
				mode, len(res.waits), res.elapsed.Seconds(), res.throughput(), res.cpuPerPublish(), res.percentile(0.5), res.percentile(0.99),
				res.retries, res.failures, res.refusals, res.review, res.lost, res.dupes, res.leftover)
			// Correctness, whatever the timings: every branch is mergeable,
			// so none may be refused; no row may be lost, duplicated or
			// survive a published delete. Through the queue the schema
			// change waits for review (the default rules) and everything
			// else lands; a direct merge lands it, as the merge engine
			// merges a compatible change made on one side.
			if res.refusals > 0 {
				b.Errorf("%s: %d mergeable branch(es) refused", mode, res.refusals)
			}
			if res.lost > 0 || res.dupes > 0 || res.leftover > 0 {
				b.Errorf("%s: main's rows are wrong: %d lost, %d duplicated, %d not deleted", mode, res.lost, res.dupes, res.leftover)
			}
			if mode == "queue" {
				if res.structuralOnMain {
					b.Errorf("%s: the schema change reached main without review", mode)
				}
				if res.failures > 0 || res.review != 1 || len(res.waits) != dayBranches-1 {
					b.Errorf("%s: %d of %d landed, %d failed, %d in review; want all but the schema change landed, it in review",
						mode, len(res.waits), dayBranches, res.failures, res.review)
				}
			}
		})
	}
}

// dayBranches is how many branches newDay makes: 28 ingestion shards, 8
// transformations, 3 feature branches, 1 backfill.
const dayBranches = 28 + 8 + 3 + 1

// writer is one branch of the day and the rows it publishes.
type writer struct {
	branch string
	ids    []int64 // rows it adds or updates: on main once each, when published
	// updated are the rows it updated, by id, and their new ts; gone the
	// rows it deleted.
	updated map[int64]time.Time
	gone    []int64
}

type day struct {
	srv     *testserver.Server
	cats    *lakescenario.Catalogs
	nextID  int64
	writers []*writer
	// initial are the rows on main before the day, by day.
	initial map[string][]int64
}

type dayResult struct {
	elapsed             time.Duration
	cpu                 time.Duration // the process's CPU time (user and system) over the run
	waits               []float64
	published           map[string]bool // branch → landed
	retries, failures   int
	review, lost, dupes int
	// refusals are merges refused as such (409 with floe's refusal) or,
	// through the queue, requests that failed; leftover are rows a
	// published writer deleted that main still holds.
	refusals, leftover int
	// structuralOnMain: the schema change reached main.
	structuralOnMain bool
}

func (r *dayResult) throughput() float64 { return float64(len(r.waits)) / r.elapsed.Seconds() }

// cpuPerPublish is the process's CPU time per landed publish, in
// milliseconds: server, worker and the harness's clients together. On a
// shared two-core machine it tells whether a mode is bound by CPU (its
// throughput follows this figure) or by waits.
func (r *dayResult) cpuPerPublish() float64 {
	if len(r.waits) == 0 {
		return 0
	}
	return float64(r.cpu.Microseconds()) / 1000 / float64(len(r.waits))
}

// processCPU is the CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r *dayResult) percentile(p float64) float64 {
	if len(r.waits) == 0 {
		return 0
	}
	s := slices.Clone(r.waits)
	sort.Float64s(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

var today = time.Date(2026, 8, 20, 0, 0, 0, 0, time.UTC)

func dayOf(offset int) time.Time { return today.AddDate(0, 0, -offset) }

func newDay(b *testing.B) *day {
	d := &day{initial: map[string][]int64{}}
	d.srv = testserver.Start(b, testserver.Options{})
	d.cats = lakescenario.NewCatalogs(d.srv.URL)
	ctx := b.Context()
	cat := d.catalog(b, "main")
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("sales"), nil); err != nil {
		b.Fatal(err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "day", Transform: iceberg.DayTransform{}})
	if _, err := cat.CreateTable(ctx, ident("sales.orders"), testSchema, catalog.WithPartitionSpec(&spec)); err != nil {
		b.Fatal(err)
	}
	// History: one file per day for the twelve days before today, and
	// today's first file.
	for off := 12; off >= 0; off-- {
		ids := d.appendRows(b, "main", dayOf(off), 3, nil)
		d.initial[dayOf(off).Format(time.DateOnly)] = ids
	}
	main, _ := d.srv.Store.GetRef("main")
	branch := func(name string) *writer {
		if _, err := d.srv.Store.CreateRef(ctx, versionstore.CreateRefRequest{Name: name, Type: versionstore.Branch, Target: main.Head}); err != nil {
			b.Fatal(err)
		}
		w := &writer{branch: name}
		d.writers = append(d.writers, w)
		return w
	}
	for i := range 28 {
		w := branch(fmt.Sprintf("ingest/shard-%02d", i))
		w.ids = d.appendRows(b, w.branch, today, 3, nil)
	}
	for k := range 8 {
		w := branch(fmt.Sprintf("transform/agg-%d", k))
		dd := dayOf(k + 1)
		old := d.initial[dd.Format(time.DateOnly)]
		d.mergeInto(b, w, dd, old[0])
		if k%2 == 0 {
			d.deleteRow(b, w, old[1])
		}
	}
	for _, off := range []int{20, 21} {
		w := branch(fmt.Sprintf("feature/alex-%d", off))
		w.ids = d.appendRows(b, w.branch, dayOf(off), 2, nil)
	}
	w := branch("feature/sam-new-column")
	d.alter(b, w.branch)
	bf := branch("backfill/2026-h1")
	for m := range 6 {
		bf.ids = append(bf.ids, d.appendRows(b, bf.branch, dayOf(30*(m+1)), 2, nil)...)
	}
	// The nightly compaction on main rewrites older days after the
	// branches were made: main changed the table too, so every merge is
	// a three-way merge of files, and the transformations' rewrites are
	// replayed by their file changes. (A compaction of the days they
	// rewrote is a file conflict on this v2 table: both sides removed the
	// same files. On a v3 table with floe.merge.row-level=rows it merges
	// by row id, reading the rows in question: merge/mergeengine/testdata/row_merge
	// and conformance/spark/test_etl_merges.py cover that case.)
	d.compact(b, "main", 9, 12)
	return d
}

func (d *day) catalog(b *testing.B, branch string) *rest.Catalog {
	return d.cats.On(b, branch)
}

func (d *day) load(b *testing.B, branch string) *table.Table {
	tbl, err := d.catalog(b, branch).LoadTable(b.Context(), ident("sales.orders"))
	if err != nil {
		b.Fatal(err)
	}
	return tbl
}

func (d *day) rows(b *testing.B, tbl *table.Table, at time.Time, n int) (arrow.Table, []int64) {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		b.Fatal(err)
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	var ids []int64
	for range n {
		d.nextID++
		ids = append(ids, d.nextID)
		bld.Field(0).(*array.Int64Builder).Append(d.nextID)
		bld.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(at.Add(12 * time.Hour).UnixMicro()))
		for i := 2; i < sc.NumFields(); i++ {
			bld.Field(i).AppendNull()
		}
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec}), ids
}

func (d *day) appendRows(b *testing.B, branch string, at time.Time, n int, props iceberg.Properties) []int64 {
	tbl := d.load(b, branch)
	rows, ids := d.rows(b, tbl, at, n)
	defer rows.Release()
	if _, err := tbl.AppendTable(b.Context(), rows, 1024, props); err != nil {
		b.Fatal(err)
	}
	return ids
}

func dayRange(at time.Time) iceberg.BooleanExpression {
	ts := iceberg.Reference("ts")
	return iceberg.NewAnd(iceberg.GreaterThanEqual(ts, iceberg.Timestamp(at.UnixMicro())),
		iceberg.LessThan(ts, iceberg.Timestamp(at.Add(24*time.Hour).UnixMicro())))
}

// mergeInto writes what a copy-on-write MERGE INTO on day at writes
// (`MERGE INTO orders USING agg ON id WHEN MATCHED THEN UPDATE SET ts
// WHEN NOT MATCHED THEN INSERT`, matching row id and one new row): one
// overwrite snapshot that removes the day's data file and adds the file
// rewritten without the matched row, and the updated and inserted rows.
// No operation is recorded: the merge engine merges it by its file
// changes.
func (d *day) mergeInto(b *testing.B, w *writer, at time.Time, id int64) {
	tbl := d.load(b, w.branch)
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		b.Fatal(err)
	}
	d.nextID++
	inserted, updatedTS := d.nextID, at.Add(18*time.Hour)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	bld.Field(0).(*array.Int64Builder).AppendValues([]int64{id, inserted}, nil)
	bld.Field(1).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{
		arrow.Timestamp(updatedTS.UnixMicro()), arrow.Timestamp(at.Add(12 * time.Hour).UnixMicro())}, nil)
	rec := bld.NewRecordBatch()
	defer rec.Release()
	rows := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer rows.Release()
	matched := iceberg.NewAnd(dayRange(at), iceberg.EqualTo(iceberg.Reference("id"), id))
	tx := tbl.NewTransaction()
	if err := tx.OverwriteTable(b.Context(), rows, 1024, nil, table.WithOverwriteFilter(matched)); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Commit(b.Context()); err != nil {
		b.Fatal(err)
	}
	w.ids = append(w.ids, id, inserted)
	if w.updated == nil {
		w.updated = map[int64]time.Time{}
	}
	w.updated[id] = updatedTS
}

// deleteRow writes what a copy-on-write `DELETE FROM orders WHERE id = ?`
// writes: its file rewritten without the row. No operation is recorded.
func (d *day) deleteRow(b *testing.B, w *writer, id int64) {
	tx := d.load(b, w.branch).NewTransaction()
	if err := tx.Delete(b.Context(), iceberg.EqualTo(iceberg.Reference("id"), id), nil); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Commit(b.Context()); err != nil {
		b.Fatal(err)
	}
	w.gone = append(w.gone, id)
}

func (d *day) alter(b *testing.B, branch string) {
	tx := d.load(b, branch).NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"status"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Commit(b.Context()); err != nil {
		b.Fatal(err)
	}
}

// compact rewrites the files of days from..to (offsets) on branch, as a
// compaction job does (a "replace" snapshot, same rows).
func (d *day) compact(b *testing.B, branch string, from, to int) {
	ctx := b.Context()
	tbl := d.load(b, branch)
	filter := dayRange(dayOf(from))
	for off := from + 1; off <= to; off++ {
		filter = iceberg.NewOr(filter, dayRange(dayOf(off)))
	}
	scan := tbl.Scan(table.WithRowFilter(filter))
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		b.Fatal(err)
	}
	rows, err := scan.ToArrowTable(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Release()
	spec := tbl.Spec()
	scratch, err := d.catalog(b, branch).CreateTable(ctx, ident("sales.compaction_scratch"), tbl.Schema(), catalog.WithPartitionSpec(&spec))
	if err != nil {
		b.Fatal(err)
	}
	if scratch, err = scratch.AppendTable(ctx, rows, 1024, nil); err != nil {
		b.Fatal(err)
	}
	stasks, err := scratch.Scan().PlanFiles(ctx)
	if err != nil {
		b.Fatal(err)
	}
	tx := tbl.NewTransaction()
	rw := tx.NewRewrite(nil)
	for _, task := range tasks {
		rw.DeleteFile(task.File)
	}
	for _, task := range stasks {
		rw = rw.AddDataFile(task.File)
	}
	if err := rw.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	if err := d.catalog(b, branch).DropTable(ctx, ident("sales.compaction_scratch")); err != nil {
		b.Fatal(err)
	}
}

// throughQueue submits every writer at once and waits until each request
// ended (or waits for review).
func (d *day) throughQueue(b *testing.B) dayResult {
	ctx := b.Context()
	res := dayResult{published: map[string]bool{}}
	start := time.Now()
	ids := make([]string, len(d.writers))
	var wg sync.WaitGroup
	for i, w := range d.writers {
		wg.Go(func() {
			r, _, err := d.srv.Queue.Submit(ctx, mergequeue.SubmitRequest{Source: w.branch, Target: "main", Principal: "pipeline"})
			if err != nil {
				b.Error(err)
				return
			}
			ids[i] = r.ID
		})
	}
	wg.Wait()
	// Poll only the requests not yet settled: the harness shares the
	// machine's two cores with the worker it measures.
	pending := slices.Clone(ids)
	for len(pending) > 0 {
		pending = slices.DeleteFunc(pending, func(id string) bool {
			r, err := d.srv.Queue.Get(id)
			return err == nil && (mergequeue.Final(r.State) || r.State == mergequeue.StateReview)
		})
		if len(pending) > 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	res.elapsed = time.Since(start)
	// The seed's table: the queue's report of the day.
	for _, c := range d.srv.Queue.Report(time.Time{}).Classes {
		b.Logf("queue report: %-9s %2d requests, classification %v (%d batched, %d in review), median wait %.2fs, median merge %.2fs, %d failures %v",
			c.Class, c.Count, c.Classification, c.Batched, c.Review, c.MedianWaitSeconds, c.MedianMergeSeconds, c.Failures, c.FailureReasons)
	}
	for i, id := range ids {
		r, _ := d.srv.Queue.Get(id)
		switch r.State {
		case mergequeue.StateMerged:
			res.published[d.writers[i].branch] = true
			res.waits = append(res.waits, r.EndedAt.Sub(r.EnqueuedAt).Seconds())
		case mergequeue.StateReview:
			res.review++
		default:
			res.failures++
			if strings.Contains(r.Reason, "refused") {
				res.refusals++
			}
			b.Logf("queue: %s %s: %s", d.writers[i].branch, r.State, r.Reason)
		}
	}
	return res
}

// naive has every writer merge into main directly through the Nessie
// API, at once, each retrying on a conflict.
func (d *day) naive(b *testing.B) dayResult {
	res := dayResult{published: map[string]bool{}}
	var mu sync.Mutex
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range d.writers {
		wg.Go(func() {
			src, err := d.srv.Store.GetRef(w.branch)
			if err != nil {
				b.Error(err)
				return
			}
			began := time.Now()
			for attempt := 0; ; attempt++ {
				status, msg := d.nessieMerge(b.Context(), w.branch, src.Head)
				mu.Lock()
				switch {
				case status == http.StatusOK:
					res.published[w.branch] = true
					res.waits = append(res.waits, time.Since(began).Seconds())
					mu.Unlock()
					return
				case status == http.StatusConflict && attempt < naiveRetries && !strings.Contains(msg, "floe: refused"):
					res.retries++
					mu.Unlock()
					time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
					continue
				default:
					res.failures++
					if strings.Contains(msg, "floe: refused") {
						res.refusals++
					}
					mu.Unlock()
					b.Logf("naive: %s: %d %s", w.branch, status, msg)
					return
				}
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// nessieMerge merges branch at hash into main's current head.
func (d *day) nessieMerge(ctx context.Context, branch string, hash versionstore.Hash) (int, string) {
	main, err := d.srv.Store.GetRef("main")
	if err != nil {
		return 0, err.Error()
	}
	body, _ := json.Marshal(map[string]any{"fromRefName": branch, "fromHash": hash.String()})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/api/v2/trees/main@%s/history/merge", d.srv.URL, main.Head), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(data))
}

// check reads main back: every row of a publish that succeeded must be
// there, once, with its update applied, and every row it deleted gone;
// every row main held before the day that no published writer deleted
// must be there too. It records whether the schema change landed.
func (d *day) check(b *testing.B, res *dayResult) {
	tbl := d.load(b, "main")
	at, err := tbl.Scan().ToArrowTable(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defer at.Release()
	seen := map[int64]int{}
	tsOf := map[int64]arrow.Timestamp{}
	rd := array.NewTableReader(at, 1024)
	defer rd.Release()
	for rd.Next() {
		ids := rd.RecordBatch().Column(0).(*array.Int64)
		ts := rd.RecordBatch().Column(1).(*array.Timestamp)
		for i := range ids.Len() {
			seen[ids.Value(i)]++
			tsOf[ids.Value(i)] = ts.Value(i)
		}
	}
	deleted := map[int64]bool{}
	for _, w := range d.writers {
		if !res.published[w.branch] {
			continue
		}
		for _, id := range w.ids {
			if seen[id] == 0 {
				res.lost++
			}
		}
		for id, ts := range w.updated {
			if seen[id] > 0 && tsOf[id] != arrow.Timestamp(ts.UnixMicro()) {
				b.Logf("%s: row %d has its old value on main: the update was lost", w.branch, id)
				res.lost++
			}
		}
		for _, id := range w.gone {
			deleted[id] = true
			if seen[id] > 0 {
				b.Logf("%s: row %d it deleted is still on main", w.branch, id)
				res.leftover++
			}
		}
	}
	for _, ids := range d.initial {
		for _, id := range ids {
			if !deleted[id] && seen[id] == 0 {
				b.Logf("row %d of main before the day is gone", id)
				res.lost++
			}
		}
	}
	for _, n := range seen {
		if n > 1 {
			res.dupes += n - 1
		}
	}
	res.structuralOnMain = len(tbl.Schema().Fields()) != len(testSchema.Fields())
}
