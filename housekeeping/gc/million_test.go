package gc_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// TestMillionFiles measures a run over a warehouse of many data files
// (FLOE_GC_FILES of them, in manifests of 10,000; the data files are
// empty files on local disk, and 1% more are old orphans to delete). It
// logs the time and the peak memory of the run. Run it with
//
//	FLOE_GC_FILES=1000000 go test -run TestMillionFiles -v -timeout 30m ./housekeeping/gc/
func TestMillionFiles(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("FLOE_GC_FILES"))
	if n <= 0 {
		t.Skip("set FLOE_GC_FILES (e.g. 1000000) to run")
	}
	const perManifest = 10000
	l := newLake(t)
	l.Create("main", "big.t")
	tbl := l.Load("main", "big.t")
	loc := strings.TrimPrefix(tbl.Location(), "file://")
	ctx := t.Context()
	begin := time.Now()

	// Data files, written by a few goroutines.
	dataPath := func(i int) string { return fmt.Sprintf("%s/data/%04d/f-%07d.parquet", loc, i/perManifest, i) }
	orphans := n / 100
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n+orphans; i += 4 {
				p := dataPath(i)
				if i >= n {
					p = fmt.Sprintf("%s/data/orphans/o-%07d.parquet", loc, i)
				}
				if i%perManifest < 4 || i >= n && i < n+4 {
					_ = os.MkdirAll(filepath.Dir(p), 0o750)
				}
				if err := os.WriteFile(p, nil, 0o600); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	oldTime := time.Now().Add(-old)
	for i := n; i < n+orphans; i++ {
		p := fmt.Sprintf("%s/data/orphans/o-%07d.parquet", loc, i)
		if err := os.Chtimes(p, oldTime, oldTime); err != nil {
			t.Fatal(err)
		}
	}

	// Manifests listing them, one snapshot over all.
	snapID := int64(42)
	spec := tbl.Spec()
	var mfs []iceberg.ManifestFile
	for m := 0; m*perManifest < n; m++ {
		mloc := fmt.Sprintf("%s/metadata/m-%04d.avro", loc, m)
		f, err := os.Create(mloc)
		if err != nil {
			t.Fatal(err)
		}
		bw := bufio.NewWriter(f)
		mw, err := iceberg.NewManifestWriter(2, bw, spec, tbl.Schema(), snapID)
		if err != nil {
			t.Fatal(err)
		}
		for i := m * perManifest; i < min(n, (m+1)*perManifest); i++ {
			b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, "file://"+dataPath(i), iceberg.ParquetFile, nil, nil, nil, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := mw.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &snapID, nil, nil, b.Build())); err != nil {
				t.Fatal(err)
			}
		}
		if err := mw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		_ = f.Close()
		mf, err := mw.ToManifestFile("file://"+mloc, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		mfs = append(mfs, mf)
	}
	listLoc := loc + "/metadata/snap-42.avro"
	lf, err := os.Create(listLoc)
	if err != nil {
		t.Fatal(err)
	}
	seq := int64(1)
	if err := iceberg.WriteManifestList(2, lf, snapID, nil, &seq, 0, mfs); err != nil {
		t.Fatal(err)
	}
	_ = lf.Close()
	bld, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		t.Fatal(err)
	}
	if err := bld.AddSnapshot(&table.Snapshot{SnapshotID: snapID, SequenceNumber: 1, TimestampMs: time.Now().UnixMilli(),
		ManifestList: "file://" + listLoc, Summary: &table.Summary{Operation: table.OpAppend}}); err != nil {
		t.Fatal(err)
	}
	if err := bld.SetSnapshotRef("main", snapID, table.BranchRef); err != nil {
		t.Fatal(err)
	}
	meta, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	w := l.whs[0]
	metaLoc, err := w.NewTableMetadataLocation(meta, tbl.MetadataLocation())
	if err != nil {
		t.Fatal(err)
	}
	mf, err := w.WriteTableMetadata(ctx, metaLoc, meta)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := l.srv.Store.GetRef("main")
	k := versionstore.ContentKey{"big", "t"}
	cur, err := l.srv.Store.GetContent(ctx, head.Head, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.srv.Store.Commit(ctx, versionstore.CommitRequest{Branch: "main", Expected: head.Head,
		Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: k, Content: icebergtable.TableContent(cur.ID, mf)}}}); err != nil {
		t.Fatal(err)
	}
	t.Logf("warehouse of %d data files in %d manifests and %d orphans written in %s", n, len(mfs), orphans, time.Since(begin).Round(time.Second))

	// The run, with its peak memory sampled.
	runtime.GC()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // reset the peak RSS (Linux)
	base, _ := heapBytes()
	stop := make(chan struct{})
	var peak, peakLive uint64
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			h, live := heapBytes()
			peak, peakLive = max(peak, h), max(peakLive, live)
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	})
	start := time.Now()
	rep, err := l.collector(gc.Options{}).Run(ctx, gc.RunOptions{})
	elapsed := time.Since(start)
	close(stop)
	sampler.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != int64(orphans) || rep.Live < int64(n) {
		t.Fatalf("deleted %d, live %d; want %d and at least %d", rep.Deleted, rep.Live, orphans, n)
	}
	t.Logf("gc of %d files (%d live, %d deleted): %s (mark %.1fs); Go heap peak %d MiB, live heap peak %d MiB (%d MiB before the run); peak RSS of the test process %s; %d manifests read",
		rep.Listed, rep.Live, rep.Deleted, elapsed.Round(100*time.Millisecond), rep.MarkSeconds, peak>>20, peakLive>>20, base>>20, peakRSS(), rep.ManifestsRead)
}

// heapBytes returns the Go heap's objects (live and not yet collected)
// and the live heap as of the last collection.
func heapBytes() (objects, live uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// peakRSS is the process's VmHWM since the last reset.
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
