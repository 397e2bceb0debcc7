package classify_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/conformance/testkit/lakescenario"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/versionstore"
)

// BenchmarkClassify classifies a table to which each of two branches
// added 100 append snapshots since the merge base (one data file each,
// the branches in different partitions): 3 metadata files, 200 manifest
// lists and 200 manifests per call. "cold" reads every metadata file from
// storage; "cached" shares a metadata cache across calls, as the server
// does. Manifests are never cached.
func BenchmarkClassify(b *testing.B) {
	const perSide = 100
	srv := testserver.Start(b, testserver.Options{})
	ctx := b.Context()
	open := func(wh string) *rest.Catalog {
		cat, err := rest.NewCatalog(ctx, "floe", srv.URL, rest.WithWarehouseLocation(wh))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cat.Close() })
		return cat
	}
	mainCat := open("lake")
	if err := mainCat.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		b.Fatal(err)
	}
	id := catalog.ToIdentifier("ns", "t")
	spec := lakescenario.DaySpec()
	tbl, err := mainCat.CreateTable(ctx, id, lakescenario.Schema, catalog.WithPartitionSpec(&spec))
	if err != nil {
		b.Fatal(err)
	}
	day := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	var next int64
	appendOne := func(tbl *table.Table, day time.Time) *table.Table {
		sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
		if err != nil {
			b.Fatal(err)
		}
		bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer bld.Release()
		next++
		bld.Field(0).(*array.Int64Builder).Append(next)
		bld.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(day.UnixMicro()))
		bld.Field(2).(*array.Int32Builder).Append(int32(next))
		rec := bld.NewRecordBatch()
		defer rec.Release()
		at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
		defer at.Release()
		out, err := tbl.AppendTable(ctx, at, 1024, nil)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	appendOne(tbl, day)
	head, err := srv.Store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := srv.Store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "dev", Type: versionstore.Branch, Target: head.Head}); err != nil {
		b.Fatal(err)
	}
	devTbl, err := open("lake@dev").LoadTable(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	mainTbl, err := mainCat.LoadTable(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	for i := range perSide {
		devTbl = appendOne(devTbl, day.AddDate(0, 0, 1+i%10))
		mainTbl = appendOne(mainTbl, day.AddDate(0, 0, 20+i%10))
	}
	dev, _ := srv.Store.GetRef("dev")
	main, _ := srv.Store.GetRef(versionstore.DefaultBranch)
	base, err := srv.Store.MergeBase(ctx, dev.Head, main.Head)
	if err != nil {
		b.Fatal(err)
	}
	key := versionstore.ContentKey{"ns", "t"}
	contentAt := func(h versionstore.Hash) *versionstore.Content {
		c, err := srv.Store.GetContent(ctx, h, key)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	bc, sc, tc := contentAt(base), contentAt(dev.Head), contentAt(main.Head)

	for _, cached := range []bool{false, true} {
		name := "cold"
		cfg := icebergtable.Config{Name: "lake", Location: srv.Warehouse}
		if cached {
			name = "cached"
			cfg.Cache = icebergtable.NewMetadataCache(icebergtable.DefaultMetadataCacheBytes)
		}
		wh, err := icebergtable.OpenWarehouse(cfg)
		if err != nil {
			b.Fatal(err)
		}
		c := classify.New(wh)
		b.Run(fmt.Sprintf("snapshots=%dx2/metadata=%s", perSide, name), func(b *testing.B) {
			for b.Loop() {
				res, err := c.Classify(ctx, bc, sc, tc)
				if err != nil {
					b.Fatal(err)
				}
				if res.Class != classify.Disjoint || len(res.Source.Snapshots) != perSide || res.Target.DataFiles.AddedCount != perSide {
					b.Fatalf("classified %s with %d/%d snapshots: %s", res.Class, len(res.Source.Snapshots), len(res.Target.Snapshots), res.Reason)
				}
			}
		})
	}
}
