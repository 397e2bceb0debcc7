package mergeengine_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/conformance/testkit/lakescenario"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/mergeengine"
	"github.com/floe-catalog/floe/merge/tablemerge"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// BenchmarkMergeNoConflict merges a branch that updated 100 random tables
// of a 10,000-key catalog into a target that moved on meanwhile (one
// other table), as versionstore's BenchmarkMerge1M does, through the
// store's Merge ("store") and through the engine ("engine"): a merge
// without conflicts is the store's merge, so the two should cost the
// same (allocations tell it best on a shared machine, where the durable
// write's time is noisy). The tables are version-store values only; no Iceberg file is read,
// because nothing conflicts. Preparing the source branch is not timed.
func BenchmarkMergeNoConflict(b *testing.B) {
	const namespaces, tablesPerNS = 10, 1000
	ctx := b.Context()
	be, err := pebblebackend.Open(b.TempDir(), pebblebackend.Options{})
	if err != nil {
		b.Fatal(err)
	}
	st, err := versionstore.Open(ctx, be, versionstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	key := func(ns, t int) versionstore.ContentKey {
		return versionstore.ContentKey{fmt.Sprintf("ns%04d", ns), fmt.Sprintf("table-%08d", t)}
	}
	value := func(k versionstore.ContentKey, version int) *versionstore.Content {
		return &versionstore.Content{Type: versionstore.IcebergTable,
			MetadataLocation: fmt.Sprintf("s3://warehouse/%s/%s/metadata/%05d.metadata.json", k[0], k[1], version),
			SnapshotID:       int64(version)}
	}
	commit := func(branch string, ops []versionstore.Operation) versionstore.Hash {
		r, err := st.GetRef(branch)
		if err != nil {
			b.Fatal(err)
		}
		res, err := st.Commit(ctx, versionstore.CommitRequest{Branch: branch, Expected: r.Head, Operations: ops, Meta: versionstore.CommitMeta{Message: "bench"}, Committer: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		return res.Commit.Hash
	}
	for i := range namespaces {
		ops := []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{fmt.Sprintf("ns%04d", i)}, Content: &versionstore.Content{Type: versionstore.Namespace}}}
		for j := range tablesPerNS {
			k := key(i, j)
			ops = append(ops, versionstore.Operation{Kind: versionstore.OpPut, Key: k, Content: value(k, 0)})
		}
		commit(versionstore.DefaultBranch, ops)
	}
	eng, err := mergeengine.New(mergeengine.Options{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	branches, version := 0, 1
	rng := rand.New(rand.NewPCG(5, 6))
	for _, via := range []struct {
		name  string
		merge func(context.Context, versionstore.MergeRequest) (*versionstore.MergeResult, error)
	}{{"store", st.Merge}, {"engine", eng.Merge}} {
		b.Run(via.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				tgt, _ := st.GetRef(versionstore.DefaultBranch)
				branches++
				source := fmt.Sprintf("bench/source-%d", branches)
				if _, err := st.CreateRef(ctx, versionstore.CreateRefRequest{Name: source, Type: versionstore.Branch, Target: tgt.Head, Principal: "bench"}); err != nil {
					b.Fatal(err)
				}
				seen := map[int]bool{}
				var keys []versionstore.ContentKey
				for len(keys) < 100 {
					n := rng.IntN(namespaces * tablesPerNS)
					if !seen[n] {
						seen[n] = true
						keys = append(keys, key(n/tablesPerNS, n%tablesPerNS))
					}
				}
				cur, err := st.GetContents(ctx, tgt.Head, keys)
				if err != nil {
					b.Fatal(err)
				}
				var ops []versionstore.Operation
				for _, k := range keys {
					v := value(k, version)
					v.ID = cur[string(k.Encode())].ID
					ops = append(ops, versionstore.Operation{Kind: versionstore.OpPut, Key: k, Content: v})
				}
				src := commit(source, ops)
				other := versionstore.ContentKey{"ns0000", fmt.Sprintf("other-%s-%08d", via.name, version)}
				moved := commit(versionstore.DefaultBranch, []versionstore.Operation{{Kind: versionstore.OpPut, Key: other, Content: value(other, 0)}})
				version++
				b.StartTimer()
				res, err := via.merge(ctx, versionstore.MergeRequest{
					Target: versionstore.DefaultBranch, ExpectedTarget: moved, From: src, FromRef: source, Committer: "bench",
					Check: func(context.Context, []versionstore.CheckedChange) error { return nil },
				})
				if err != nil {
					b.Fatal(err)
				}
				if !res.WasApplied || len(res.Details) != 100 {
					b.Fatalf("merge applied=%v with %d keys, want 100", res.WasApplied, len(res.Details))
				}
			}
		})
	}
}

// The row-level merges below run on real tables: iceberg-go writes them
// through a real floe server (conformance/testkit/testserver, a temporary directory),
// and the merge is the engine's, called in the benchmark's process over
// the server's store and warehouse with a metadata cache of its own,
// empty at each merge, so every manifest list, manifest and Puffin file
// the merge needs is read from disk. Per merge they report
// bytes-read/op, every byte the process read through read system calls
// while the merge ran (/proc/self/io rchar: the warehouse's files and
// the store's), and data-bytes, the size of the data files the merge's
// rows lie in: what a merge that read rows would read at least. Each
// merge goes into a new branch made at the same target head, and the
// merged table is read back with iceberg-go's scanner and compared row by
// row with what both sides did: a wrong row fails the benchmark.
//
//	go test -run '^$' -bench 'MergeRewritten|MergeDeletionVectors' -benchtime 1x ./merge/mergeengine/

// BenchmarkMergeRewrittenFiles merges a branch that ran a copy-on-write
// UPDATE of one row in each of the 1,000 data files of one partition (the
// 1,000 files removed, their rewrites and the updated rows added, one
// snapshot, no operation record) into a target that appended to another
// partition meanwhile: a three-way merge of files, the source's snapshot
// replayed by its file changes.
func BenchmarkMergeRewrittenFiles(b *testing.B) {
	const files, rowsPerFile = 1000, 100
	lk := newRowBench(b, iceberg.Properties{})
	ids := lk.appendFiles(b, "main", "a", files, rowsPerFile)
	lk.branch(b, "etl")
	// UPDATE ... SET v = -id WHERE id IN (the first row of each file).
	var updated []int64
	for f := range files {
		updated = append(updated, ids[f*rowsPerFile])
	}
	lk.updateRows(b, "etl", "a", updated)
	lk.appendFiles(b, "main", "b", 1, rowsPerFile)
	removed, _ := lk.sourceFiles(b)
	if len(removed) != files {
		b.Fatalf("the source's update removed %d data files, want %d", len(removed), files)
	}
	lk.run(b, removed)
}

// BenchmarkMergeDeletionVectors merges deletion vectors of the same data
// files written on both sides: on a v3 table in merge-on-read, the branch
// deletes one row of each of 100 data files, the target another row of
// each, so each of the 100 files has a vector on both sides. The merge
// reads the 200 vectors (Puffin blobs, no data file) and writes 100
// vectors of their unions.
func BenchmarkMergeDeletionVectors(b *testing.B) {
	const files, rowsPerFile = 100, 1000
	lk := newRowBench(b, iceberg.Properties{"format-version": "3", "write.delete.mode": "merge-on-read"})
	ids := lk.appendFiles(b, "main", "a", files, rowsPerFile)
	lk.branch(b, "etl")
	var mine, theirs []int64
	for f := range files {
		mine = append(mine, ids[f*rowsPerFile])
		theirs = append(theirs, ids[f*rowsPerFile+1])
	}
	lk.deleteRows(b, "etl", mine)
	lk.deleteRows(b, "main", theirs)
	_, vectors := lk.sourceFiles(b)
	if vectors != files {
		b.Fatalf("the source's delete wrote %d deletion vectors, want %d", vectors, files)
	}
	// The rows the vectors point into: the data files of the partition.
	data := lk.dataFiles(b, "main")
	if len(data) != files {
		b.Fatalf("main has %d data files, want %d", len(data), files)
	}
	lk.run(b, data)
}

// rowBench is one table on a real server, its branches, and the rows each
// branch must read (id → v).
type rowBench struct {
	srv    *testserver.Server
	cats   *lakescenario.Catalogs
	nextID int64
	rows   map[string]map[int64]int64
	// base are the rows when etl was made.
	base map[int64]int64
}

var rowBenchSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "part", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 3, Name: "v", Type: iceberg.PrimitiveTypes.Int64, Required: true},
)

var rowBenchTable = catalog.ToIdentifier("bench", "facts")

// newRowBench starts a server with the table bench.facts, partitioned by
// part, with props. Every batch an append writes becomes a data file of
// its own (a target file size of one byte).
func newRowBench(b *testing.B, props iceberg.Properties) *rowBench {
	lk := &rowBench{srv: testserver.Start(b, testserver.Options{}), rows: map[string]map[int64]int64{"main": {}}}
	lk.cats = lakescenario.NewCatalogs(lk.srv.URL)
	ctx := b.Context()
	cat := lk.catalog(b, "main")
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("bench"), nil); err != nil {
		b.Fatal(err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "part", Transform: iceberg.IdentityTransform{}})
	props = maps.Clone(props)
	props["write.target-file-size-bytes"] = "1"
	if _, err := cat.CreateTable(ctx, rowBenchTable, rowBenchSchema, catalog.WithPartitionSpec(&spec), catalog.WithProperties(props)); err != nil {
		b.Fatal(err)
	}
	return lk
}

func (lk *rowBench) catalog(b *testing.B, branch string) *rest.Catalog {
	return lk.cats.On(b, branch)
}

func (lk *rowBench) load(b *testing.B, branch string) *table.Table {
	tbl, err := lk.catalog(b, branch).LoadTable(b.Context(), rowBenchTable)
	if err != nil {
		b.Fatal(err)
	}
	return tbl
}

func (lk *rowBench) branch(b *testing.B, name string) {
	head, err := lk.srv.Store.GetRef("main")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := lk.srv.Store.CreateRef(b.Context(), versionstore.CreateRefRequest{Name: name, Type: versionstore.Branch, Target: head.Head}); err != nil {
		b.Fatal(err)
	}
	lk.rows[name] = maps.Clone(lk.rows["main"])
	lk.base = maps.Clone(lk.rows["main"])
}

// arrowRows is rows (id, part, v) in the table's Arrow schema.
func arrowRows(b *testing.B, tbl *table.Table, ids []int64, part string, v func(int64) int64) arrow.Table {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		b.Fatal(err)
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	for _, id := range ids {
		bld.Field(0).(*array.Int64Builder).Append(id)
		bld.Field(1).(*array.StringBuilder).Append(part)
		bld.Field(2).(*array.Int64Builder).Append(v(id))
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

// appendFiles appends files data files of rowsPerFile new rows each (v =
// id) to partition part on branch, in one snapshot, and returns the ids
// in file order.
func (lk *rowBench) appendFiles(b *testing.B, branch, part string, files, rowsPerFile int) []int64 {
	tbl := lk.load(b, branch)
	var ids []int64
	for range files * rowsPerFile {
		lk.nextID++
		ids = append(ids, lk.nextID)
		lk.rows[branch][lk.nextID] = lk.nextID
	}
	rows := arrowRows(b, tbl, ids, part, func(id int64) int64 { return id })
	defer rows.Release()
	if _, err := tbl.AppendTable(b.Context(), rows, int64(rowsPerFile), nil); err != nil {
		b.Fatal(err)
	}
	if got := len(lk.dataFiles(b, branch)); got < files {
		b.Fatalf("append of %d files to %s wrote %d data files in all", files, branch, got)
	}
	return ids
}

// updateRows is a copy-on-write `UPDATE facts SET v = -id WHERE id IN
// (ids)`: one overwrite snapshot that removes the files holding the rows
// and adds them rewritten without them, and the updated rows.
func (lk *rowBench) updateRows(b *testing.B, branch, part string, ids []int64) {
	tbl := lk.load(b, branch)
	rows := arrowRows(b, tbl, ids, part, func(id int64) int64 { return -id })
	defer rows.Release()
	tx := tbl.NewTransaction()
	if err := tx.OverwriteTable(b.Context(), rows, 1<<20, nil, table.WithOverwriteFilter(iceberg.IsIn(iceberg.Reference("id"), ids...))); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Commit(b.Context()); err != nil {
		b.Fatal(err)
	}
	for _, id := range ids {
		lk.rows[branch][id] = -id
	}
}

// deleteRows is `DELETE FROM facts WHERE id IN (ids)` as the table's
// write.delete.mode says.
func (lk *rowBench) deleteRows(b *testing.B, branch string, ids []int64) {
	tx := lk.load(b, branch).NewTransaction()
	if err := tx.Delete(b.Context(), iceberg.IsIn(iceberg.Reference("id"), ids...), nil); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Commit(b.Context()); err != nil {
		b.Fatal(err)
	}
	for _, id := range ids {
		delete(lk.rows[branch], id)
	}
}

// dataFiles are the live data files of the table on branch.
func (lk *rowBench) dataFiles(b *testing.B, branch string) []iceberg.DataFile {
	tasks, err := lk.load(b, branch).Scan().PlanFiles(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	var out []iceberg.DataFile
	for _, t := range tasks {
		out = append(out, t.File)
	}
	return out
}

// sourceFiles are the data files etl's snapshots since main removed, and
// how many deletion vectors they added.
func (lk *rowBench) sourceFiles(b *testing.B) (removed []iceberg.DataFile, vectors int) {
	ctx := b.Context()
	tbl := lk.load(b, "etl")
	fs, err := tbl.FS(ctx)
	if err != nil {
		b.Fatal(err)
	}
	base := lk.load(b, "main")
	onMain := map[int64]bool{}
	for _, s := range base.Metadata().Snapshots() {
		onMain[s.SnapshotID] = true
	}
	for _, s := range tbl.Metadata().Snapshots() {
		if onMain[s.SnapshotID] {
			continue
		}
		mfs, err := s.Manifests(fs)
		if err != nil {
			b.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.SnapshotID() != s.SnapshotID {
				continue
			}
			entries, err := mf.FetchEntries(fs, false)
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range entries {
				df := e.DataFile()
				switch {
				case e.Status() == iceberg.EntryStatusDELETED && df.ContentType() == iceberg.EntryContentData:
					removed = append(removed, df)
				case e.Status() == iceberg.EntryStatusADDED && df.FileFormat() == iceberg.PuffinFile:
					vectors++
				}
			}
		}
	}
	return removed, vectors
}

// run merges etl into a new branch at main's head per iteration, timed
// with the bytes it reads, and checks each merged table's rows: main's
// and etl's changes since the branch point, both applied. data are the
// data files the merged rows lie in (reported as data-bytes).
func (lk *rowBench) run(b *testing.B, data []iceberg.DataFile) {
	ctx := b.Context()
	target, err := lk.srv.Store.GetRef("main")
	if err != nil {
		b.Fatal(err)
	}
	source, err := lk.srv.Store.GetRef("etl")
	if err != nil {
		b.Fatal(err)
	}
	// Both sides' changes since the branch point, applied to its rows.
	want := map[int64]int64{}
	for _, side := range []string{"main", "etl"} {
		for id, v := range lk.rows[side] {
			if _, inBase := lk.base[id]; !inBase {
				want[id] = v
			}
		}
	}
	for id, v := range lk.base {
		m, onMain := lk.rows["main"][id]
		e, onETL := lk.rows["etl"][id]
		switch {
		case !onMain || !onETL:
		case e != v:
			want[id] = e
		default:
			want[id] = m
		}
	}
	var dataBytes int64
	for _, df := range data {
		dataBytes += df.FileSizeBytes()
	}
	var read int64
	n := 0
	for b.Loop() {
		b.StopTimer()
		n++
		name := fmt.Sprintf("merged/%d", n)
		if _, err := lk.srv.Store.CreateRef(ctx, versionstore.CreateRefRequest{Name: name, Type: versionstore.Branch, Target: target.Head}); err != nil {
			b.Fatal(err)
		}
		wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: lk.srv.Warehouse,
			Cache: icebergtable.NewMetadataCache(icebergtable.DefaultMetadataCacheBytes)})
		if err != nil {
			b.Fatal(err)
		}
		eng, err := mergeengine.New(mergeengine.Options{Store: lk.srv.Store, Warehouses: []*icebergtable.Warehouse{wh}})
		if err != nil {
			b.Fatal(err)
		}
		before := readChars(b)
		b.StartTimer()
		res, err := eng.MergeTables(ctx, versionstore.MergeRequest{Target: name, ExpectedTarget: target.Head, From: source.Head, FromRef: "etl",
			Meta: versionstore.CommitMeta{Message: "merge etl"}, Committer: "bench"})
		b.StopTimer()
		read += readChars(b) - before
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Tables) != 1 || !res.Tables[0].Merged || len(res.Tables[0].Picked) == 0 {
			b.Fatalf("merge: %+v, want the table merged by the engine", res.Tables)
		}
		for _, s := range res.Tables[0].Picked {
			if s.Summary == nil || s.Summary.Properties[tablemerge.SummaryReplayed] != tablemerge.ReplayedFiles {
				b.Fatalf("snapshot %d was not replayed by its file changes: %v", s.SnapshotID, s.Summary)
			}
		}
		lk.checkRows(b, name, want)
		b.StartTimer()
	}
	b.ReportMetric(float64(read)/float64(n), "bytes-read/op")
	b.ReportMetric(float64(dataBytes), "data-bytes")
}

// checkRows reads the table on branch and fails unless it holds exactly
// want (id → v), each row once.
func (lk *rowBench) checkRows(b *testing.B, branch string, want map[int64]int64) {
	at, err := lk.load(b, branch).Scan().ToArrowTable(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defer at.Release()
	got := map[int64]int64{}
	var problems []string
	rd := array.NewTableReader(at, 4096)
	defer rd.Release()
	for rd.Next() {
		ids := rd.RecordBatch().Column(0).(*array.Int64)
		vs := rd.RecordBatch().Column(2).(*array.Int64)
		for i := range ids.Len() {
			id := ids.Value(i)
			if _, dup := got[id]; dup && len(problems) < 10 {
				problems = append(problems, fmt.Sprintf("row %d twice", id))
			}
			got[id] = vs.Value(i)
		}
	}
	for id, v := range want {
		g, ok := got[id]
		if (!ok || g != v) && len(problems) < 10 {
			problems = append(problems, fmt.Sprintf("row %d: got v=%d (present %v), want %d", id, g, ok, v))
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok && len(problems) < 10 {
			problems = append(problems, fmt.Sprintf("row %d should be gone", id))
		}
	}
	if len(problems) > 0 || len(got) != len(want) {
		b.Fatalf("%s holds %d rows, want %d: %s", branch, len(got), len(want), strings.Join(problems, "; "))
	}
}

// readChars is the bytes this process has read through read system calls
// (/proc/self/io rchar).
func readChars(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skipf("bytes read are counted through /proc/self/io: %v", err)
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("/proc/self/io has no rchar")
	return 0
}
