package icebergrest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// objectStoreSchemes are the location schemes served through iceberg-go's
// S3 driver (as iceberg-go registers them, minus oss, which floe does not
// claim to support).
var objectStoreSchemes = []string{"s3", "s3a", "s3n"}

func isObjectStore(scheme string) bool { return slices.Contains(objectStoreSchemes, scheme) }

func localOrObjectStore(scheme string) bool { return scheme == "file" || isObjectStore(scheme) }

// metadataIOTimeout bounds one metadata read, write or delete on an object
// store, on top of the request's own context: the AWS SDK retries failed
// requests, and a request must not hang on a store that stopped answering.
const metadataIOTimeout = 60 * time.Second

// objectStore is a warehouse's bucket client, made on first use and then
// shared by every request: making one loads the AWS configuration and
// builds an HTTP transport, so a client per request would cost a config
// load and a fresh connection (TLS handshake included) for every metadata
// file. iceberg-go's blob file system binds the context it is made with to
// all its operations, so each request wraps the shared bucket in a file
// system of its own context (see fileIO).
type objectStore struct {
	mu     sync.Mutex
	bucket *blob.Bucket
}

// fileIO returns the file system for loc, its operations bound to ctx, and
// a cancel func to call when done. Locations outside every warehouse (none
// should reach here) get iceberg-go's defaults.
func (a *api) fileIO(ctx context.Context, loc string) (iceio.IO, context.CancelFunc, error) {
	if a != nil {
		if wh := a.warehouseOf(loc); wh != nil {
			return wh.fileIO(ctx)
		}
	}
	fsys, err := iceio.LoadFS(ctx, nil, loc)
	return fsys, func() {}, err
}

// warehouseOf returns the warehouse whose root holds loc, or nil.
func (a *api) warehouseOf(loc string) *warehouse {
	u, err := normalizeLocation(loc)
	if err != nil {
		return nil
	}
	var best *warehouse
	for _, wh := range a.warehouses {
		if _, err := wh.contains(u.String()); err == nil && (best == nil || len(wh.root.Path) > len(best.root.Path)) {
			best = wh
		}
	}
	return best
}

// fileIO returns the warehouse's file system bound to ctx.
func (w *warehouse) fileIO(ctx context.Context) (iceio.IO, context.CancelFunc, error) {
	if !isObjectStore(w.root.Scheme) {
		fsys, err := iceio.LoadFS(ctx, w.ioProps, w.location())
		return fsys, func() {}, err
	}
	b, err := w.store.open(ctx, w)
	if err != nil {
		return nil, nil, fmt.Errorf("open the object store of warehouse %s at %s: %w", w.name, w.location(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, metadataIOTimeout)
	return blobfs.New(ctx, b, blobfs.DefaultObjectLocationExtractor(w.root.Host, objectStoreSchemes...)), cancel, nil
}

// open makes the bucket client once. A failure is not kept: the next
// request tries again (e.g. after credentials appear).
func (s *objectStore) open(ctx context.Context, w *warehouse) (*blob.Bucket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bucket != nil {
		return s.bucket, nil
	}
	// The client outlives this request: only the request's values, not its
	// cancellation, may reach it.
	fsys, err := iceio.LoadFS(context.WithoutCancel(ctx), w.ioProps, w.location())
	if err != nil {
		return nil, err
	}
	bfs, ok := fsys.(*blobfs.FileIO)
	if !ok {
		return nil, fmt.Errorf("unexpected file system %T for %s", fsys, w.location())
	}
	s.bucket = bfs.Bucket
	return s.bucket, nil
}

// describeStorageError says in words what went wrong with an object store,
// so the error a client reads names the cause rather than only an SDK
// error chain.
func describeStorageError(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the object store did not answer in time: %w", err)
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &ne):
		return fmt.Errorf("the object store is unreachable: %w", err)
	}
	switch gcerrors.Code(err) {
	case gcerrors.PermissionDenied:
		return fmt.Errorf("access to the object store was denied: %w", err)
	case gcerrors.NotFound:
		return fmt.Errorf("not found in the object store (does the bucket exist?): %w", err)
	}
	return err
}

// apiKey carries the api serving a request in its context, so that file
// helpers called without an api (readFile, writeFileSynced) still use the
// warehouse's file IO and its properties.
type apiKey struct{}

func withAPI(ctx context.Context, a *api) context.Context {
	return context.WithValue(ctx, apiKey{}, a)
}

// apiOf returns the api of withAPI, or nil: iceberg-go's defaults then apply.
func apiOf(ctx context.Context) *api {
	a, _ := ctx.Value(apiKey{}).(*api)
	return a
}
