package mergequeue_test

// BenchmarkSeedDay replays seed 000's "A Day in the Merge Queue", scaled
// to one machine, through real Iceberg commits (iceberg-go through a real
// floe server): on one fact table partitioned by day, 28 ingestion
// branches append to today's partition, 8 transformation branches
// overwrite a past day each (recording the operation) that a compaction
// on main rewrote meanwhile, 3 feature branches (one changing the
// schema) and 1 backfill touching six months publish into main. It runs
// the day twice: through the queue (every writer submits at once, the
// worker lands them), and as naive direct merges into main through the
// Nessie API by the 40 writers at once, each retrying on 409 up to
// naiveRetries times. Reported per mode: publishes per second, p50/p99
// wait (submit to landed), client retries, failures, writes lost (rows of
// a publish that succeeded missing from main) and duplicated rows.
//
//	go test -run '^$' -bench SeedDay -benchtime 1x ./mergequeue/

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
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/classify"
	"github.com/floe-catalog/floe/mergequeue"
	"github.com/floe-catalog/floe/testkit/testserver"
	"github.com/floe-catalog/floe/versionstore"
)

const naiveRetries = 10

func BenchmarkSeedDay(b *testing.B) {
	for _, mode := range []string{"queue", "naive"} {
		b.Run(mode, func(b *testing.B) {
			var res dayResult
			for b.Loop() {
				b.StopTimer()
				d := newDay(b)
				b.StartTimer()
				if mode == "queue" {
					res = d.throughQueue(b)
				} else {
					res = d.naive(b)
				}
				b.StopTimer()
				d.check(b, &res)
				b.StartTimer()
			}
			b.ReportMetric(res.throughput(), "publishes/s")
			b.ReportMetric(res.percentile(0.5), "p50-wait-s")
			b.ReportMetric(res.percentile(0.99), "p99-wait-s")
			b.ReportMetric(float64(res.retries), "retries")
			b.ReportMetric(float64(res.failures), "failures")
			b.ReportMetric(float64(res.lost), "lost-rows")
			b.ReportMetric(float64(res.dupes), "duplicate-rows")
			b.ReportMetric(float64(res.review), "in-review")
			// Through the queue the schema change waits for review (the
			// default rules); a direct merge lands it, as the merge engine
			// merges a compatible change made on one side.
			if res.structuralOnMain && mode == "queue" {
				b.Errorf("%s: the schema change reached main without review", mode)
			}
			b.Logf("%s: %d published in %.2fs (%.1f/s), wait p50 %.2fs p99 %.2fs, %d retries, %d failures, %d in review, %d rows lost, %d duplicated",
				mode, len(res.waits), res.elapsed.Seconds(), res.throughput(), res.percentile(0.5), res.percentile(0.99),
				res.retries, res.failures, res.review, res.lost, res.dupes)
		})
	}
}

// writer is one branch of the day and the rows it publishes.
type writer struct {
	branch string
	ids    []int64 // rows it adds
	// replaces is the day an overwrite replaces ("" for appends).
	replaces string
}

type day struct {
	srv     *testserver.Server
	cats    map[string]*rest.Catalog
	nextID  int64
	writers []*writer
	// initial are the rows on main before the day, by day.
	initial map[string][]int64
}

type dayResult struct {
	elapsed             time.Duration
	waits               []float64
	published           map[string]bool // branch → landed
	retries, failures   int
	review, lost, dupes int
	// structuralOnMain: the schema change reached main.
	structuralOnMain bool
}

func (r *dayResult) throughput() float64 { return float64(len(r.waits)) / r.elapsed.Seconds() }

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
	d := &day{cats: map[string]*rest.Catalog{}, initial: map[string][]int64{}}
	d.srv = testserver.Start(b, testserver.Options{})
	ctx := b.Context()
	cat := d.catalog(b, "main")
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("sales"), nil); err != nil {
		b.Fatal(err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "day", Transform: iceberg.DayTransform{}})
	if _, err := cat.CreateTable(ctx, ident("sales.orders"), testSchema, catalog.WithPartitionSpec(&spec)); err != nil {
		b.Fatal(err)
	}
	// History: one file per day for the eight days before today, and
	// today's first file.
	for off := 8; off >= 0; off-- {
		ids := d.appendRows(b, "main", dayOf(off), 2, nil)
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
		w.replaces = dd.Format(time.DateOnly)
		w.ids = d.overwrite(b, w.branch, dd, 2)
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
	// The nightly compaction on main rewrites the days the transforms
	// overwrite, after they branched: they classify as file conflicts,
	// rebased by replaying their recorded overwrites.
	d.compact(b, "main", 1, 8)
	return d
}

func (d *day) catalog(b *testing.B, branch string) *rest.Catalog {
	if c, ok := d.cats[branch]; ok {
		return c
	}
	wh := "lake"
	if branch != "main" {
		wh += "@" + branch
	}
	cat, err := rest.NewCatalog(b.Context(), "floe", d.srv.URL, rest.WithWarehouseLocation(wh))
	if err != nil {
		b.Fatal(err)
	}
	d.cats[branch] = cat
	return cat
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

// overwrite replaces a day's rows with n new ones, recording the
// operation (pinned inputs) so the merge engine can replay it.
func (d *day) overwrite(b *testing.B, branch string, at time.Time, n int) []int64 {
	tbl := d.load(b, branch)
	rows, ids := d.rows(b, tbl, at, n)
	defer rows.Release()
	props := iceberg.Properties{classify.OpKind: classify.OpKindOverwritePartitions,
		classify.OpPartitions: "day=" + at.Format(time.DateOnly), classify.OpSourceSnapshotIDs: "none"}
	tx := tbl.NewTransaction()
	if err := tx.OverwriteTable(b.Context(), rows, 1024, props, table.WithOverwriteFilter(dayRange(at))); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Commit(b.Context()); err != nil {
		b.Fatal(err)
	}
	return ids
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
	for {
		done := 0
		for _, id := range ids {
			if r, err := d.srv.Queue.Get(id); err == nil && (mergequeue.Final(r.State) || r.State == mergequeue.StateReview) {
				done++
			}
		}
		if done == len(ids) {
			break
		}
		time.Sleep(5 * time.Millisecond)
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
				case status == http.StatusConflict && attempt < naiveRetries:
					res.retries++
					mu.Unlock()
					time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
					continue
				default:
					res.failures++
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
// there, once; the structural branch must not have landed.
func (d *day) check(b *testing.B, res *dayResult) {
	tbl := d.load(b, "main")
	at, err := tbl.Scan().ToArrowTable(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defer at.Release()
	seen := map[int64]int{}
	rd := array.NewTableReader(at, 1024)
	defer rd.Release()
	for rd.Next() {
		ids := rd.RecordBatch().Column(0).(*array.Int64)
		for i := range ids.Len() {
			seen[ids.Value(i)]++
		}
	}
	for _, w := range d.writers {
		if !res.published[w.branch] {
			continue
		}
		for _, id := range w.ids {
			if seen[id] == 0 {
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
