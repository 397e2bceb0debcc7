package gc_test

import (
	"os"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/floe-catalog/floe/conformance/testkit/rowlake"
	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// commitMetadata writes a new metadata file for a table on branch ref,
// changed by edit, and commits it to the store, as a Nessie client that
// writes its own metadata does.
func (l *lake) commitMetadata(ref, name string, edit func(*table.MetadataBuilder) error) {
	l.t.Helper()
	ctx := l.t.Context()
	tbl := l.Load(ref, name)
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		l.t.Fatal(err)
	}
	if err := edit(b); err != nil {
		l.t.Fatal(err)
	}
	meta, err := b.Build()
	if err != nil {
		l.t.Fatal(err)
	}
	w := l.whs[0]
	loc, err := w.NewTableMetadataLocation(meta, tbl.MetadataLocation())
	if err != nil {
		l.t.Fatal(err)
	}
	f, err := w.WriteTableMetadata(ctx, loc, meta)
	if err != nil {
		l.t.Fatal(err)
	}
	head, _ := l.srv.Store.GetRef(ref)
	k := versionstore.ContentKey(strings.Split(name, "."))
	cur, err := l.srv.Store.GetContent(ctx, head.Head, k)
	if err != nil {
		l.t.Fatal(err)
	}
	if _, err := l.srv.Store.Commit(ctx, versionstore.CommitRequest{Branch: ref, Expected: head.Head,
		Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: k, Content: icebergtable.TableContent(cur.ID, f)}}}); err != nil {
		l.t.Fatal(err)
	}
}

// Statistics and partition statistics files, and views' metadata files,
// are live like the rest.
func TestStatisticsAndViewsAreLive(t *testing.T) {
	l := newLake(t)
	l.Create("main", "ns.a")
	l.AppendRows("main", "ns.a", 3)
	dir := l.tableDir("main", "ns.a") + "/metadata"
	stats, pstats := dir+"/stats.puffin", dir+"/partition-stats.parquet"
	for _, p := range []string{stats, pstats} {
		if err := os.WriteFile(p, []byte("puffin"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	snap := l.Load("main", "ns.a").CurrentSnapshot().SnapshotID
	l.commitMetadata("main", "ns.a", func(b *table.MetadataBuilder) error {
		if err := b.SetStatistics(table.StatisticsFile{SnapshotID: snap, StatisticsPath: "file://" + stats, FileSizeInBytes: 6,
			BlobMetadata: []table.BlobMetadata{}}); err != nil {
			return err
		}
		return b.SetPartitionStatistics(table.PartitionStatisticsFile{SnapshotID: snap, StatisticsPath: "file://" + pstats, FileSizeInBytes: 6})
	})
	version, err := view.NewVersionFromSQL(1, 0, "select id from ns.a", []string{"ns"})
	if err != nil {
		t.Fatal(err)
	}
	l.branch("dev", "main", versionstore.Branch)
	if _, err := l.Catalog("dev").CreateView(t.Context(), rowlake.Ident("ns.v"), version, rowlake.Schema); err != nil {
		t.Fatalf("create view on dev: %v", err)
	}
	orphan := dir + "/orphan.puffin" // named by nothing
	if err := os.WriteFile(orphan, []byte("puffin"), 0o600); err != nil {
		t.Fatal(err)
	}
	l.age(old)

	rep, err := l.collector(gc.Options{}).Run(t.Context(), gc.RunOptions{Explain: []string{stats, pstats}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rep.Explained {
		if e.Verdict != gc.VerdictLive {
			t.Errorf("%s: %s", e.Location, e.Reason)
		}
	}
	for _, p := range []string{stats, pstats} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) || rep.Deleted != 1 {
		t.Errorf("the orphan puffin file: %v, %d deleted; want it gone, alone", err, rep.Deleted)
	}
	if _, err := l.Catalog("dev").LoadView(t.Context(), rowlake.Ident("ns.v")); err != nil {
		t.Fatalf("load the view after gc: %v", err)
	}
	l.ScanAll()
}
