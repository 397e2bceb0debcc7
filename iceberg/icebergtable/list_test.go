package icebergtable_test

import (
	"context"
	"encoding/xml"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

func TestWalkAndDeleteLocalFiles(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"ns/t/data/a.parquet", "ns/t/data/part=a%20b/b.parquet", "ns/t/metadata/m.json"} {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("abc"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "ns/t/metadata/m.json"), filepath.Join(root, "ns/link")); err != nil {
		t.Fatal(err)
	}
	w, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: root})
	if err != nil {
		t.Fatal(err)
	}
	got := walk(t, w)
	want := []string{"file://" + root + "/ns/t/data/a.parquet", "file://" + root + "/ns/t/data/part=a%20b/b.parquet", "file://" + root + "/ns/t/metadata/m.json"}
	if !slices.Equal(got, want) {
		t.Fatalf("walk: %q, want %q (no symbolic link)", got, want)
	}
	// The percent sign is part of the name: the file with "%20" goes.
	if err := w.DeleteStoredFile(t.Context(), want[1]); err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteStoredFile(t.Context(), want[1]); err != nil {
		t.Fatalf("deleting a file already gone: %v", err)
	}
	if got := walk(t, w); len(got) != 2 {
		t.Fatalf("after delete: %q", got)
	}
	for _, bad := range []string{"file://" + filepath.Dir(root) + "/elsewhere", "file://" + root, "/etc/passwd"} {
		if err := w.DeleteStoredFile(t.Context(), bad); !errors.Is(err, icebergtable.ErrOutsideWarehouse) {
			t.Errorf("delete %s: %v; want ErrOutsideWarehouse", bad, err)
		}
	}
}

func walk(t *testing.T, w *icebergtable.Warehouse) []string {
	t.Helper()
	var out []string
	err := w.WalkFiles(t.Context(), func(f icebergtable.StoredFile) error {
		if f.Size != 3 || f.ModTime.IsZero() {
			t.Errorf("%s: size %d, modified %v", f.Location, f.Size, f.ModTime)
		}
		out = append(out, f.Location)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fakeS3 answers the S3 calls a listing and a delete make (ListObjectsV2,
// HEAD and DELETE of an object, path style), over objects in memory.
type fakeS3 struct {
	mu      sync.Mutex
	objects map[string]int // "bucket/key" → size
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ := strings.Cut(path, "/")
	switch {
	case r.Method == http.MethodGet && key == "" && r.URL.Query().Get("list-type") == "2":
		type content struct {
			Key          string
			LastModified string
			ETag         string
			Size         int
		}
		var res struct {
			XMLName     xml.Name `xml:"ListBucketResult"`
			Name        string
			Prefix      string
			KeyCount    int
			MaxKeys     int
			IsTruncated bool
			Contents    []content
		}
		res.Name, res.Prefix, res.MaxKeys = bucket, r.URL.Query().Get("prefix"), 1000
		var keys []string
		for k := range f.objects {
			if b, k, _ := strings.Cut(k, "/"); b == bucket && strings.HasPrefix(k, res.Prefix) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			res.Contents = append(res.Contents, content{Key: k, LastModified: "2026-11-01T00:00:00.000Z", ETag: `"e"`, Size: f.objects[bucket+"/"+k]})
		}
		res.KeyCount = len(res.Contents)
		w.Header().Set("Content-Type", "application/xml")
		_ = xml.NewEncoder(w).Encode(res)
	case r.Method == http.MethodHead:
		size, ok := f.objects[path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Header().Set("Last-Modified", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Format(http.TimeFormat))
		w.Header().Set("ETag", `"e"`)
	case r.Method == http.MethodDelete:
		delete(f.objects, path)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "not faked: "+r.Method+" "+r.URL.String(), http.StatusNotImplemented)
	}
}

func TestWalkAndDeleteObjects(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	fake := &fakeS3{objects: map[string]int{
		"bucket/wh/ns/t/data/a.parquet": 3, "bucket/wh/ns/t/metadata/m.json": 5,
		"bucket/whx/other": 1, "bucket/outside": 1, "other/wh/x": 1,
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	opts := icebergtable.S3Options{Endpoint: srv.URL, Region: "us-east-1", PathStyle: true, AccessKeyID: "k", SecretAccessKey: "s"}
	w, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: "s3://bucket/wh", IOProperties: opts.IOProperties()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var got []string
	err = w.WalkFiles(ctx, func(f icebergtable.StoredFile) error {
		got = append(got, f.Location+" "+strconv.FormatInt(f.Size, 10))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"s3://bucket/wh/ns/t/data/a.parquet 3", "s3://bucket/wh/ns/t/metadata/m.json 5"}
	if !slices.Equal(got, want) {
		t.Fatalf("walk: %q, want %q", got, want)
	}
	if err := w.DeleteStoredFile(ctx, "s3://bucket/wh/ns/t/data/a.parquet"); err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteStoredFile(ctx, "s3://bucket/wh/ns/t/data/a.parquet"); err != nil {
		t.Fatalf("deleting an object already gone: %v", err)
	}
	fake.mu.Lock()
	_, still := fake.objects["bucket/wh/ns/t/data/a.parquet"]
	n := len(fake.objects)
	fake.mu.Unlock()
	if still || n != 4 {
		t.Fatalf("after delete: still there %v, %d objects", still, n)
	}
	for _, bad := range []string{"s3://bucket/whx/other", "s3://other/wh/x", "s3://bucket/wh/"} {
		if err := w.DeleteStoredFile(ctx, bad); !errors.Is(err, icebergtable.ErrOutsideWarehouse) {
			t.Errorf("delete %s: %v; want ErrOutsideWarehouse", bad, err)
		}
	}
}
