package icebergtable

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	iceio "github.com/apache/iceberg-go/io"
)

// BenchmarkS3ReadMetadata compares reading one metadata file through the
// warehouse's shared bucket client (what Warehouse does) with making a
// client per read (iceberg-go's io.LoadFS on every call), against a local
// stand-in for S3 that answers every GET with the same object.
func BenchmarkS3ReadMetadata(b *testing.B) {
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	b.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	b.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	object := bytes.Repeat([]byte("x"), 4096)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(object)))
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_, _ = w.Write(object)
		}
	}))
	defer srv.Close()
	opts := S3Options{Endpoint: srv.URL, Region: "us-east-1", PathStyle: true, AccessKeyID: "k", SecretAccessKey: "s"}
	wh, err := OpenWarehouse(Config{Name: "lake", Location: "s3://bucket/wh", IOProperties: opts.IOProperties()})
	if err != nil {
		b.Fatal(err)
	}
	loc := "s3://bucket/wh/ns/t/metadata/00000-x.metadata.json"
	ctx := context.Background()

	b.Run("shared-client", func(b *testing.B) {
		for b.Loop() {
			raw, err := wh.ReadFile(ctx, loc)
			if err != nil || len(raw) != len(object) {
				b.Fatalf("read %d bytes: %v", len(raw), err)
			}
		}
	})
	b.Run("client-per-read", func(b *testing.B) {
		for b.Loop() {
			fsys, err := iceio.LoadFS(ctx, wh.ioProps, loc)
			if err != nil {
				b.Fatal(err)
			}
			raw, err := fsys.(iceio.ReadFileIO).ReadFile(loc)
			if err != nil || len(raw) != len(object) {
				b.Fatalf("read %d bytes: %v", len(raw), err)
			}
		}
	})
}
