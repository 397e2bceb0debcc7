package gc_test

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/versionstore"
)

// s3EndpointEnv names the S3-compatible endpoint TestS3Warehouse runs
// against, e.g. moto: `moto_server -p 5000` and
// FLOE_TEST_S3_ENDPOINT=http://127.0.0.1:5000. The repository has no fake
// S3 library, and a hand-written one would test the fake's listing and
// dates rather than a store's; the test skips without it.
const s3EndpointEnv = "FLOE_TEST_S3_ENDPOINT"

// TestS3Warehouse runs gc end to end on an S3 warehouse: tables written
// with iceberg-go through floe on two branches (data files, a position
// delete file, a snapshot expired on one branch only), a branch dropped
// with its table, an old and a young stray object. A dry run deletes
// nothing; the run deletes exactly the dropped table's objects and the
// old stray, keeps the young one, and every table on every live branch
// scans in full afterwards.
//
// The store's object dates cannot be set, so "old" is relative: the
// collector's clock is fixed at cut + the grace period, where cut lies
// after every object but the young stray was written (S3 dates are in
// whole seconds: the young stray is written in a later second than cut).
func TestS3Warehouse(t *testing.T) {
	endpoint := os.Getenv(s3EndpointEnv)
	if endpoint == "" {
		t.Skipf("set %s to an S3-compatible endpoint (moto) to run", s3EndpointEnv)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	bucket := "floe-gc-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	createBucket(t, endpoint, bucket)
	opts := icebergtable.S3Options{Endpoint: endpoint, Region: "us-east-1", PathStyle: true,
		AccessKeyID: "test", SecretAccessKey: "test", ClientCredentials: true}
	root := "s3://" + bucket + "/wh"
	l := newLakeAt(t, testserver.Options{Iceberg: func(d *icebergrest.Deps) {
		d.Warehouses = []icebergrest.Warehouse{{Name: "lake", Location: root,
			IOProperties: opts.IOProperties(), ClientConfig: opts.ClientConfig()}}
	}}, &icebergtable.Config{Name: "lake", Location: root, IOProperties: opts.IOProperties()})

	l.Create("main", "ns.a")
	l.AppendRows("main", "ns.a", 10)
	l.DeleteID("main", "ns.a", 4)
	l.branch("dev", "main", versionstore.Branch)
	l.AppendRows("dev", "ns.a", 5)
	l.AppendRows("dev", "ns.a", 2)
	l.ExpireAllButLast("dev", "ns.a") // main still reaches the first snapshots
	l.Create("dev", "ns.b")
	l.AppendRows("dev", "ns.b", 3)
	l.branch("tmp", "dev", versionstore.Branch)
	l.Create("tmp", "ns.gone")
	l.AppendRows("tmp", "ns.gone", 6)
	goneLoc := l.Load("tmp", "ns.gone").Location()
	l.deleteRef("tmp")
	fsys, err := iceio.LoadFS(t.Context(), opts.IOProperties(), root)
	if err != nil {
		t.Fatal(err)
	}
	strayOld, strayYoung := root+"/ns/stray-old.parquet", root+"/ns/stray-young.parquet"
	if err := fsys.(iceio.WriteFileIO).WriteFile(strayOld, []byte("old")); err != nil {
		t.Fatal(err)
	}
	// cut: after every object above, in an earlier second than the young
	// stray.
	cut := time.Now()
	time.Sleep(time.Until(cut.Truncate(time.Second).Add(time.Second)))
	if err := fsys.(iceio.WriteFileIO).WriteFile(strayYoung, []byte("young")); err != nil {
		t.Fatal(err)
	}

	before := l.objects()
	gone := 0
	for loc := range before {
		if strings.HasPrefix(loc, goneLoc+"/") {
			gone++
		}
	}
	if gone < 4 || !before[strayOld] || !before[strayYoung] {
		t.Fatalf("%d objects under %s (want a metadata file, a manifest list, a manifest and a data file), strays %v %v; listed %v",
			gone, goneLoc, before[strayOld], before[strayYoung], before)
	}
	c := l.collector(gc.Options{Now: func() time.Time { return cut.Add(gc.DefaultGrace) }})
	defer c.Close()
	dry, err := c.Run(t.Context(), gc.RunOptions{DryRun: true, ListFiles: 1000, Explain: []string{strayYoung}})
	if err != nil {
		t.Fatal(err)
	}
	if after := l.objects(); len(after) != len(before) {
		t.Fatalf("a dry run deleted objects: %d before, %d after", len(before), len(after))
	}
	if dry.Deleted != int64(gone+1) || dry.Young != 1 || len(dry.Explained) != 1 || dry.Explained[0].Verdict != gc.VerdictKept {
		t.Fatalf("dry run: %d to delete, %d young, explained %+v; want %d (ns.gone's objects and the old stray) and 1 kept",
			dry.Deleted, dry.Young, dry.Explained, gone+1)
	}
	for _, f := range dry.Files {
		if !strings.HasPrefix(f.Location, goneLoc+"/") && f.Location != strayOld {
			t.Fatalf("the dry run would delete %s", f.Location)
		}
	}
	rep, err := c.Run(t.Context(), gc.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := l.objects()
	if rep.Deleted != int64(gone+1) || rep.DeleteErrors != 0 || len(after) != len(before)-gone-1 {
		t.Fatalf("run: %d deleted, %d errors, %d objects left of %d; want %d deleted", rep.Deleted, rep.DeleteErrors, len(after), len(before), gone+1)
	}
	for loc := range before {
		want := !strings.HasPrefix(loc, goneLoc+"/") && loc != strayOld
		if after[loc] != want {
			t.Errorf("%s: still there %v, want %v", loc, after[loc], want)
		}
	}
	t.Logf("%d objects listed; %d deleted (%d bytes), %d live, %d young", rep.Listed, rep.Deleted, rep.DeletedBytes, rep.Live, rep.Young)
	l.ScanAll()
	// Nothing is left to delete.
	again, err := c.Run(t.Context(), gc.RunOptions{DryRun: true})
	if err != nil || again.Deleted != 0 {
		t.Fatalf("second dry run: %v, %d to delete", err, again.Deleted)
	}
}

// createBucket makes the bucket with a plain PUT: moto takes unsigned
// requests.
func createBucket(t *testing.T, endpoint, bucket string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, strings.TrimRight(endpoint, "/")+"/"+bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("create bucket %s at %s: %v", bucket, endpoint, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create bucket %s at %s: HTTP %d", bucket, endpoint, resp.StatusCode)
	}
}

// objects lists the swept warehouse's objects.
func (l *lake) objects() map[string]bool {
	l.t.Helper()
	out := map[string]bool{}
	err := l.whs[0].WalkFiles(l.t.Context(), func(f icebergtable.StoredFile) error {
		out[f.Location] = true
		return nil
	})
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}
