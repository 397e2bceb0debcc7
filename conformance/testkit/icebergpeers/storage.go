package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
)

// Storage writes the files a client writes before it commits a snapshot:
// its manifest list. file: locations are written to the local disk (the
// warehouses of floe and of the reference server); s3:// locations are a
// plain PUT to the S3-compatible endpoint (moto, which checks no
// signature), the store under Nessie's warehouse.
type Storage struct {
	S3Endpoint string // e.g. http://127.0.0.1:5000; "" refuses s3:// locations
	hc         *http.Client
}

// NewStorage returns a Storage with its own HTTP pool of conns connections.
func NewStorage(s3Endpoint string, conns int) *Storage {
	return &Storage{S3Endpoint: strings.TrimRight(s3Endpoint, "/"), hc: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: max(conns, 1), DisableCompression: true},
	}}
}

// Put writes data at location.
func (s *Storage) Put(ctx context.Context, location string, data []byte) error {
	switch {
	case strings.HasPrefix(location, "s3://"):
		if s.S3Endpoint == "" {
			return fmt.Errorf("writing %s: no S3 endpoint configured", location)
		}
		rest := strings.TrimPrefix(location, "s3://")
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.S3Endpoint+"/"+rest, bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("writing %s: %w", location, err)
		}
		resp, err := s.hc.Do(req)
		if err != nil {
			return fmt.Errorf("writing %s: %w", location, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("writing %s: HTTP %d: %s", location, resp.StatusCode, body)
		}
		return nil
	case strings.HasPrefix(location, "file:"), strings.HasPrefix(location, "/"):
		p, err := localPath(location)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("writing %s: %w", location, err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", location, err)
		}
		return nil
	}
	return fmt.Errorf("writing %s: unsupported scheme", location)
}

// CreateBucket creates the bucket named by an s3:// location's host.
func (s *Storage) CreateBucket(ctx context.Context, location string) error {
	u, err := url.Parse(location)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return fmt.Errorf("creating the bucket of %q: want s3://bucket/...", location)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.S3Endpoint+"/"+u.Host, nil)
	if err != nil {
		return err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return fmt.Errorf("creating bucket %s: %w", u.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusConflict {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		return fmt.Errorf("creating bucket %s: HTTP %d: %s", u.Host, resp.StatusCode, body)
	}
	return nil
}

// localPath turns file:/p, file:///p and /p into /p.
func localPath(location string) (string, error) {
	if strings.HasPrefix(location, "/") {
		return location, nil
	}
	u, err := url.Parse(location)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return "", fmt.Errorf("invalid file location %q", location)
	}
	return u.Path, nil
}

// ManifestList encodes a real, empty format-v2 manifest list (an Avro
// file with no manifests) for snapshot id with its parent and sequence
// number, written by iceberg-go as an engine would: the smallest honest
// file a snapshot can point at.
func ManifestList(id int64, parent *int64, seq int64) ([]byte, error) {
	var buf bytes.Buffer
	if err := iceberg.WriteManifestList(2, &buf, id, parent, &seq, 0, nil); err != nil {
		return nil, fmt.Errorf("encoding the manifest list of snapshot %d: %w", id, err)
	}
	return buf.Bytes(), nil
}
