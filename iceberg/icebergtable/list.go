package icebergtable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// StoredFile is one file found under a warehouse root by WalkFiles.
type StoredFile struct {
	// Location is "file://" + the absolute path, as the file system names
	// it (not percent-encoded), or "s3://bucket/key" with the key as
	// stored.
	Location string
	Size     int64
	ModTime  time.Time
}

// WalkFiles calls fn for every regular file under the warehouse root (a
// local directory walk, or an object store listing of the root's prefix),
// in lexical order; it stops at fn's first error. Symbolic links and other
// special files are skipped: they are not table files. It lists the root
// only, never the allowed locations, which may be shared with others.
// Garbage collection (package gc) is its user.
func (w *Warehouse) WalkFiles(ctx context.Context, fn func(StoredFile) error) error {
	if w.root.Scheme == "file" {
		return w.walkLocal(ctx, fn)
	}
	return w.walkObjects(ctx, fn)
}

func (w *Warehouse) walkLocal(ctx context.Context, fn func(StoredFile) error) error {
	root := filepath.FromSlash(w.root.Path)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != root {
				return nil // deleted since its directory was read
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return fn(StoredFile{Location: "file://" + filepath.ToSlash(p), Size: info.Size(), ModTime: info.ModTime()})
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no warehouse directory: nothing stored yet
	}
	if err != nil {
		return fmt.Errorf("list warehouse %s at %s: %w", w.name, w.Location(), err)
	}
	return nil
}

// objectPrefix is the key prefix of the warehouse root in its bucket.
func (w *Warehouse) objectPrefix() string {
	p := strings.TrimPrefix(w.root.Path, "/")
	if p != "" {
		p += "/"
	}
	return p
}

func (w *Warehouse) walkObjects(ctx context.Context, fn func(StoredFile) error) error {
	b, err := w.bucket.open(ctx, w)
	if err != nil {
		return fmt.Errorf("open the object store of warehouse %s at %s: %w", w.name, w.Location(), err)
	}
	it := b.List(&blob.ListOptions{Prefix: w.objectPrefix()})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list warehouse %s at %s: %w", w.name, w.Location(), describeStorageError(err))
		}
		if obj.IsDir {
			continue
		}
		loc := w.root.Scheme + "://" + w.root.Host + "/" + obj.Key
		if err := fn(StoredFile{Location: loc, Size: obj.Size, ModTime: obj.ModTime}); err != nil {
			return err
		}
	}
}

// DeleteStoredFile deletes a file WalkFiles listed, by its Location as
// WalkFiles gave it (not percent-decoded: a file named "a%20b" is that
// file, not "a b"). A file that is already gone is no error. A location
// not below the warehouse root is refused.
func (w *Warehouse) DeleteStoredFile(ctx context.Context, loc string) error {
	if w.root.Scheme == "file" {
		p, ok := strings.CutPrefix(loc, "file://")
		root := w.root.Path + "/"
		if !ok || !strings.HasPrefix(p, root) || len(p) == len(root) {
			return fmt.Errorf("delete %s: %w", loc, ErrOutsideWarehouse)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := os.Remove(filepath.FromSlash(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete %s: %w", loc, err)
		}
		return nil
	}
	key, ok := strings.CutPrefix(loc, w.root.Scheme+"://"+w.root.Host+"/")
	if !ok || !strings.HasPrefix(key, w.objectPrefix()) || key == w.objectPrefix() {
		return fmt.Errorf("delete %s: %w", loc, ErrOutsideWarehouse)
	}
	b, err := w.bucket.open(ctx, w)
	if err != nil {
		return fmt.Errorf("open the object store of warehouse %s at %s: %w", w.name, w.Location(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, metadataIOTimeout)
	defer cancel()
	if err := b.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("delete %s: %w", loc, describeStorageError(err))
	}
	return nil
}
