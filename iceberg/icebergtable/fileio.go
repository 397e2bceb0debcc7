package icebergtable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
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
// store, on top of the caller's own context: the AWS SDK retries failed
// requests, and a request must not hang on a store that stopped answering.
const metadataIOTimeout = 60 * time.Second

// objectStore is a warehouse's bucket client, made on first use and then
// shared by every caller: making one loads the AWS configuration and
// builds an HTTP transport, so a client per call would cost a config load
// and a fresh connection (TLS handshake included) for every metadata file.
// iceberg-go's blob file system binds the context it is made with to all
// its operations, so each call wraps the shared bucket in a file system of
// its own context (see fileIO).
type objectStore struct {
	mu     sync.Mutex
	bucket *blob.Bucket
}

// fileIO returns the file system for loc, its operations bound to ctx, and
// a cancel func to call when done. Locations outside the warehouse get
// iceberg-go's defaults; under an allowed location of the warehouse's own
// scheme, its IO properties too (the same object store's credentials).
func (w *Warehouse) fileIO(ctx context.Context, loc string) (iceio.IO, context.CancelFunc, error) {
	if u, err := normalizeLocation(loc); err != nil || !w.holds(u) {
		var props map[string]string
		if err == nil && w.permits(u) && u.Scheme == w.root.Scheme {
			props = w.ioProps
		}
		fsys, err := iceio.LoadFS(ctx, props, loc)
		return fsys, func() {}, err
	}
	if !isObjectStore(w.root.Scheme) {
		fsys, err := iceio.LoadFS(ctx, w.ioProps, w.Location())
		return fsys, func() {}, err
	}
	b, err := w.bucket.open(ctx, w)
	if err != nil {
		return nil, nil, fmt.Errorf("open the object store of warehouse %s at %s: %w", w.name, w.Location(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, metadataIOTimeout)
	return blobfs.New(ctx, b, blobfs.DefaultObjectLocationExtractor(w.root.Host, objectStoreSchemes...)), cancel, nil
}

// open makes the bucket client once. A failure is not kept: the next
// call tries again (e.g. after credentials appear).
func (s *objectStore) open(ctx context.Context, w *Warehouse) (*blob.Bucket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bucket != nil {
		return s.bucket, nil
	}
	// The client outlives this call: only the caller's values, not its
	// cancellation, may reach it.
	fsys, err := iceio.LoadFS(context.WithoutCancel(ctx), w.ioProps, w.Location())
	if err != nil {
		return nil, err
	}
	bfs, ok := fsys.(*blobfs.FileIO)
	if !ok {
		return nil, fmt.Errorf("unexpected file system %T for %s", fsys, w.Location())
	}
	s.bucket = bfs.Bucket
	return s.bucket, nil
}

// ReadFile reads the metadata file at loc through the warehouse's file IO.
// Only a regular file inside the warehouse (or an allowed location) is read, and at most
// MaxMetadataFileBytes of it: a location that entered the store before
// locations were checked, or a file replaced since, must never make the
// server read a device, a FIFO or a file of unbounded size, or anything
// outside the warehouse. The read stops when ctx ends. Errors name the
// file, never its content.
func (w *Warehouse) ReadFile(ctx context.Context, loc string) ([]byte, error) {
	u, err := normalizeLocation(loc)
	if err != nil {
		return nil, fmt.Errorf("read metadata file %s: %w", loc, err)
	}
	if !w.permits(u) {
		return nil, fmt.Errorf("read metadata file %s: %w", loc, ErrOutsideWarehouse)
	}
	var raw []byte
	if u.Scheme == "file" {
		raw, err = w.readLocalFile(ctx, filepath.FromSlash(u.Path))
	} else {
		raw, err = w.readObject(ctx, loc)
	}
	if err != nil {
		return nil, fmt.Errorf("read metadata file %s: %w", loc, describeStorageError(err))
	}
	return raw, nil
}

// ErrOutsideWarehouse is returned for a read of a file outside the
// warehouse.
var ErrOutsideWarehouse = errors.New("the file lies outside the warehouse")

// ErrTooLarge is returned for a read of a file larger than
// MaxMetadataFileBytes.
var ErrTooLarge = errors.New("the file exceeds the metadata file size limit")

// ErrNotRegularFile is returned for a read of a directory, device, FIFO,
// socket or symbolic link.
var ErrNotRegularFile = errors.New("not a regular file")

// readLocalFile reads a local file: opened without following a final
// symbolic link and without blocking on a FIFO, then checked to be a
// regular file through the open descriptor, so nothing can be swapped in
// between the check and the read.
func (w *Warehouse) readLocalFile(ctx context.Context, name string) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%w (a symbolic link)", ErrNotRegularFile)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (mode %s)", ErrNotRegularFile, st.Mode().Type())
	}
	if st.Size() > w.maxRead {
		return nil, fmt.Errorf("%w of %d bytes (%d bytes)", ErrTooLarge, w.maxRead, st.Size())
	}
	return readBounded(ctx, f, w.maxRead)
}

// statFile checks that the file at loc exists and is a regular file,
// without reading it, under the rules of ReadFile.
func (w *Warehouse) statFile(ctx context.Context, loc string) error {
	u, err := normalizeLocation(loc)
	if err != nil {
		return err
	}
	if !w.permits(u) {
		return ErrOutsideWarehouse
	}
	if u.Scheme == "file" {
		st, err := os.Lstat(filepath.FromSlash(u.Path))
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%w (mode %s)", ErrNotRegularFile, st.Mode().Type())
		}
		return nil
	}
	if w.holds(u) && isObjectStore(w.root.Scheme) {
		b, err := w.bucket.open(ctx, w)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, metadataIOTimeout)
		defer cancel()
		_, err = b.Attributes(ctx, strings.TrimPrefix(u.Path, "/"))
		if gcerrors.Code(err) == gcerrors.NotFound {
			return fmt.Errorf("%s: %w", loc, fs.ErrNotExist)
		}
		return err
	}
	// An allowed location elsewhere: opening it is the check.
	fsys, done, err := w.fileIO(ctx, loc)
	if err != nil {
		return err
	}
	defer done()
	f, err := fsys.Open(loc)
	if err != nil {
		return err
	}
	return f.Close()
}

// readObject reads an object of the warehouse's object store.
func (w *Warehouse) readObject(ctx context.Context, loc string) ([]byte, error) {
	fsys, done, err := w.fileIO(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer done()
	f, err := fsys.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > w.maxRead {
		return nil, fmt.Errorf("%w of %d bytes (%d bytes)", ErrTooLarge, w.maxRead, st.Size())
	}
	return readBounded(ctx, f, w.maxRead)
}

// readBounded reads r to its end, refusing more than limit bytes and
// stopping when ctx ends.
func readBounded(ctx context.Context, r io.Reader, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	chunk := make([]byte, 256<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := r.Read(chunk)
		if int64(buf.Len())+int64(n) > limit {
			return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, limit)
		}
		buf.Write(chunk[:n])
		if err == io.EOF {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// WriteFile creates a new file at loc with data and syncs it: a catalog
// commit that names the file may follow, and must never point at a file a
// crash could lose. A failed write leaves no file behind. A local file is
// synced with its directory entry, and one that exists already is an
// error, never overwritten (writeLocalFile). On an object
// store the object exists once Close returns, which is when the upload
// completes.
func (w *Warehouse) WriteFile(ctx context.Context, loc string, data []byte) error {
	if u, err := normalizeLocation(loc); err == nil && u.Scheme == "file" {
		if err := writeLocalFile(filepath.FromSlash(u.Path), data, w.dirs, deferredSyncOf(ctx)); err != nil {
			return fmt.Errorf("write metadata file %s: %w", loc, err)
		}
		return nil
	}
	fsys, done, err := w.fileIO(ctx, loc)
	if err != nil {
		return fmt.Errorf("open file system for %s: %w", loc, err)
	}
	defer done()
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("the file system of %s is read-only", loc)
	}
	out, err := wfs.Create(loc)
	if err != nil {
		return fmt.Errorf("create metadata file %s: %w", loc, describeStorageError(err))
	}
	_, err = out.Write(data)
	if s, ok := out.(interface{ Sync() error }); ok && err == nil {
		err = s.Sync()
	}
	if err = errors.Join(err, out.Close()); err != nil {
		_ = fsys.Remove(loc)
		return fmt.Errorf("write metadata file %s: %w", loc, describeStorageError(err))
	}
	syncParentDir(loc)
	return nil
}

// writeLocalFile creates the local file name, which must not exist,
// writes data, syncs it, and syncs its directory where the file system
// needs that for the entry to be durable too (dirs; nil: always): the
// file survives a crash once this returns. Directories it has to create
// are synced into their parents on every file system. With deferred
// non-nil, the syncs are left to deferred.Sync: the file and the
// directories to sync are recorded there instead. A failure removes the
// file it created (never one that existed).
//
// It uses system calls directly rather than iceberg-go's LocalFS (which
// os.Create's): that took 17 system calls per file, where 7 do (5 on
// ext4). os.Open
// of a regular file or directory tries to register it with the poller
// (two fcntl calls to set O_NONBLOCK, an epoll_ctl that fails, two to
// clear it), and MkdirAll stats the directory first; on this project's
// machine, where kernel time is most of a commit's CPU, each call counts.
// O_EXCL also means a metadata file is never overwritten: names are
// unique, and a clash is an error, not a replaced file.
func writeLocalFile(name string, data []byte, dirs *dirSync, deferred *DeferredSync) error {
	const flags = syscall.O_WRONLY | syscall.O_CREAT | syscall.O_EXCL | syscall.O_CLOEXEC
	dir := filepath.Dir(name)
	fd, err := syscall.Open(name, flags, 0o666)
	var made []string // directories made for the file, outermost first
	if errors.Is(err, syscall.ENOENT) {
		// The first file of a table: make its directory (as LocalFS did).
		if made, err = mkdirAll(dir); err != nil {
			return err
		}
		fd, err = syscall.Open(name, flags, 0o666)
	}
	if err != nil {
		return &fs.PathError{Op: "create", Path: name, Err: err}
	}
	err = writeAll(fd, data)
	if err == nil && deferred == nil {
		err = ignoringEINTR(func() error { return syscall.Fsync(fd) })
	}
	syncDirToo := len(made) > 0 || dirs.needed(fd)
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		_ = syscall.Unlink(name)
		return &fs.PathError{Op: "write", Path: name, Err: err}
	}
	var toSync []string
	if syncDirToo {
		// Each made directory's entry is in its parent; the file's is in
		// dir.
		toSync = append(toSync, dir)
		for _, d := range made {
			toSync = append(toSync, filepath.Dir(d))
		}
	}
	if deferred != nil {
		deferred.add(name, toSync)
		return nil
	}
	for _, d := range toSync {
		if err := syncDir(d); err != nil {
			// The entry may not be durable: no commit may name the file.
			_ = syscall.Unlink(name)
			return err
		}
	}
	return nil
}

// mkdirAll makes dir and its missing parents, and returns the ones it
// made, outermost first.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	slices.Reverse(missing)
	return missing, nil
}

// writeAll writes data to fd, however many calls it takes.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := syscall.Write(fd, data)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// syncDir makes the entries of directory dir durable.
func syncDir(dir string) error {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	err = ignoringEINTR(func() error { return syscall.Fsync(fd) })
	_ = syscall.Close(fd)
	if err != nil {
		return &fs.PathError{Op: "sync", Path: dir, Err: err}
	}
	return nil
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// syncParentDir makes a new local file's directory entry durable.
func syncParentDir(loc string) {
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "file" {
		return
	}
	if d, err := os.Open(filepath.Dir(filepath.FromSlash(u.Path))); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// RemoveFile deletes the file at loc; a file that does not exist is no
// error. Callers delete metadata files no commit references, so a failure
// leaves an orphan that wastes space but is never read.
func (w *Warehouse) RemoveFile(ctx context.Context, loc string) error {
	fsys, done, err := w.fileIO(ctx, loc)
	if err == nil {
		err = fsys.Remove(loc)
		done()
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove metadata file %s: %w", loc, describeStorageError(err))
	}
	return nil
}

// describeStorageError says in words what went wrong with an object store,
// so the error a client reads names the cause rather than only an SDK
// error chain.
func describeStorageError(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the object store did not answer in time: %w", err)
	case errors.Is(err, context.Canceled), errors.Is(err, fs.ErrNotExist):
		// A missing file is not a store problem; and a local one's
		// syscall.Errno would pass for a net.Error below.
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
