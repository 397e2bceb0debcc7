package icebergo

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/floe-catalog/floe/versionstore"
)

// minioS3 is the MinIO conformance/s3/run.sh starts (minio.sh), reached
// with its root user's keys: floe's own, and the test's for looking
// behind floe's back.
type minioS3 struct {
	endpoint string
	keys     aws.Credentials
}

// minio returns the MinIO of FLOE_TEST_MINIO_*, or skips.
func minio(t *testing.T) minioS3 {
	t.Helper()
	ep := os.Getenv("FLOE_TEST_MINIO_ENDPOINT")
	if ep == "" {
		t.Skip("set FLOE_TEST_MINIO_ENDPOINT to a MinIO endpoint (conformance/s3/minio.sh) to run")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	return minioS3{endpoint: ep, keys: aws.Credentials{
		AccessKeyID: os.Getenv("FLOE_TEST_MINIO_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("FLOE_TEST_MINIO_SECRET_ACCESS_KEY")}}
}

// do sends one S3 request with the root user's keys; its status.
func (m minioS3) do(t *testing.T, method, path string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, m.endpoint+"/"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(nil)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).SignHTTP(t.Context(), m.keys, req, hash, "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// exists reports whether the object at s3://bucket/key is there.
func (m minioS3) exists(t *testing.T, loc string) bool {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	switch s := m.do(t, http.MethodHead, u.Host+u.EscapedPath()); s {
	case http.StatusOK:
		return true
	case http.StatusNotFound:
		return false
	default:
		t.Fatalf("HEAD %s: %d", loc, s)
		return false
	}
}

// ids reads a table at one snapshot (0: its current one); its ids,
// sorted.
func ids(t *testing.T, tbl *table.Table, snapshot int64) []int64 {
	t.Helper()
	var opts []table.ScanOption
	if snapshot != 0 {
		opts = append(opts, table.WithSnapshotID(snapshot))
	}
	at, err := tbl.Scan(opts...).ToArrowTable(t.Context())
	if err != nil {
		t.Fatalf("scan %v at %d: %v", tbl.Identifier(), snapshot, err)
	}
	defer at.Release()
	var out []int64
	rdr := array.NewTableReader(at, 0)
	defer rdr.Release()
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0).(*array.Int64)
		for i := range col.Len() {
			out = append(out, col.Value(i))
		}
	}
	slices.Sort(out)
	return out
}

// dataFiles are the data files a table's current snapshot lists.
func dataFiles(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		out = append(out, task.File.FilePath())
	}
	return out
}

// TestS3VendedCredentialsIcebergGo: iceberg-go (which refuses remote
// signing) writes and reads an s3:// warehouse on two catalog branches
// with the credentials floe vends (it asks for them by default), and
// cannot delete with them: neither its FileIO's Remove nor its own
// DeleteOrphanFiles on main (which ignores gc.enabled) removes a file dev
// reads.
func TestS3VendedCredentialsIcebergGo(t *testing.T) {
	m := minio(t)
	f, bucket := startVendingFloe(t, m)
	ctx := t.Context()
	mainCat := f.catalog(t, "lake")
	if err := mainCat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"ns", "events"}
	tbl := createTable(t, mainCat, ident)
	if tbl.Properties()["gc.enabled"] != "false" {
		t.Fatalf("gc.enabled = %q, want false", tbl.Properties()["gc.enabled"])
	}
	tbl = appendRows(t, tbl, []row{{1, "eu", 1}})
	first := tbl.CurrentSnapshot().SnapshotID
	tbl = appendRows(t, tbl, []row{{2, "us", 2}})

	head, err := f.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "dev", Type: versionstore.Branch, Target: head.Head}); err != nil {
		t.Fatal(err)
	}
	devCat := f.catalog(t, "lake@dev")
	devTbl, err := devCat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	devTbl = appendRows(t, devTbl, []row{{3, "dev", 3}})
	tbl = appendRows(t, tbl, []row{{4, "main", 4}})

	if got := ids(t, tbl, 0); !slices.Equal(got, []int64{1, 2, 4}) {
		t.Fatalf("main reads %v", got)
	}
	if got := ids(t, devTbl, 0); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("dev reads %v", got)
	}
	for _, tb := range []*table.Table{tbl, devTbl} {
		if got := ids(t, tb, first); !slices.Equal(got, []int64{1}) {
			t.Fatalf("time travel on %v: %v", tb.Identifier(), got)
		}
	}
	var devOnly []string
	mainFiles := dataFiles(t, tbl)
	for _, p := range dataFiles(t, devTbl) {
		if !slices.Contains(mainFiles, p) {
			devOnly = append(devOnly, p)
		}
	}
	if len(devOnly) != 1 || !strings.HasPrefix(devOnly[0], "s3://"+bucket+"/wh/") {
		t.Fatalf("dev-only data files %v", devOnly)
	}

	t.Run("its FileIO cannot delete", func(t *testing.T) {
		fsys, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = fsys.Remove(devOnly[0])
		if err == nil || !strings.Contains(err.Error(), "AccessDenied") {
			t.Fatalf("Remove(%s) = %v, want AccessDenied", devOnly[0], err)
		}
		t.Logf("Remove: %v", err)
		if !m.exists(t, devOnly[0]) {
			t.Fatal("the file is gone")
		}
	})

	t.Run("DeleteOrphanFiles on main leaves dev whole", func(t *testing.T) {
		res, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(0))
		t.Logf("DeleteOrphanFiles on main: orphans %v, deleted %v, error %v", res.OrphanFileLocations, res.DeletedFiles, err)
		// iceberg-go's cleanup does not read gc.enabled: it tries to
		// delete dev's data file, manifest, manifest list and metadata
		// file (on a file:// warehouse it would), and S3 refuses each.
		if err == nil || !strings.Contains(err.Error(), "AccessDenied") || len(res.DeletedFiles) != 0 {
			t.Errorf("DeleteOrphanFiles: deleted %v, error %v; want every deletion refused", res.DeletedFiles, err)
		}
		for _, p := range devOnly {
			if !m.exists(t, p) {
				t.Fatalf("%s is gone", p)
			}
		}
		devTbl, err := devCat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(t, devTbl, 0); !slices.Equal(got, []int64{1, 2, 3}) {
			t.Fatalf("dev reads %v after the cleanup", got)
		}
		if got := ids(t, devTbl, first); !slices.Equal(got, []int64{1}) {
			t.Fatalf("dev's time travel after the cleanup: %v", got)
		}
	})
}
