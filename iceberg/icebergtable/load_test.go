package icebergtable

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestLoadConfirmsCachedFileOnS3: a load answered from the cache first
// asks the object store whether the file is still there, with a HEAD
// request (no GET of the whole file), at most once per recheck interval,
// and a file the store no longer has is missing (fs.ErrNotExist), not
// served from memory.
func TestLoadConfirmsCachedFileOnS3(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	const key = "/bucket/wh/ns/t/metadata/00001-x.metadata.json"
	var mu sync.Mutex
	present := true
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		methods = append(methods, r.Method)
		if r.URL.Path != key || !present {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`))
			return
		}
		w.Header().Set("Content-Length", "10")
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte("0123456789"))
		}
	}))
	defer srv.Close()
	opts := S3Options{Endpoint: srv.URL, Region: "us-east-1", PathStyle: true, AccessKeyID: "k", SecretAccessKey: "s"}
	cache := NewMetadataCache(1 << 20)
	open := func(recheck time.Duration) *Warehouse {
		wh, err := OpenWarehouse(Config{Name: "lake", Location: "s3://bucket/wh", IOProperties: opts.IOProperties(),
			Cache: cache, ObjectStoreRecheck: recheck})
		if err != nil {
			t.Fatal(err)
		}
		return wh
	}
	wh := open(time.Hour)
	loc := "s3://bucket/wh/ns/t/metadata/00001-x.metadata.json"
	cached := file(loc, 10)
	wh.cache.add(cached)
	ctx := context.Background()

	got, err := wh.LoadTableMetadata(ctx, loc)
	if err != nil || got != cached {
		t.Fatalf("load of a cached file that exists: %v, %p (want the cached %p)", err, got, cached)
	}
	if got, err := wh.LoadTableMetadata(ctx, loc); err != nil || got != cached {
		t.Fatalf("second load: %v", err)
	}
	mu.Lock()
	if len(methods) != 1 || methods[0] != http.MethodHead {
		t.Errorf("requests %v, want one HEAD for two loads within the recheck interval", methods)
	}
	present, methods = false, nil
	mu.Unlock()

	wh = open(-1) // check on every load
	if _, err := wh.LoadTableMetadata(ctx, loc); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("load of a cached file the store lost: %v, want fs.ErrNotExist", err)
	}
	// Reads inside floe (merges, commits) still use the cache.
	if got, err := wh.ReadTableMetadata(ctx, loc); err != nil || got != cached {
		t.Fatalf("read from the cache: %v", err)
	}
}
