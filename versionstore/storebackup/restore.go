package storebackup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// ErrNotEmpty reports a restore or import target directory that holds
// files.
var ErrNotEmpty = errors.New("the data directory is not empty")

// ErrNotBackup reports a directory that holds no Pebble database.
var ErrNotBackup = errors.New("not a backup")

// RestoreReport is what a restore copied and found.
type RestoreReport struct {
	DataDir string `json:"dataDir"`
	Files   int    `json:"files"`
	Bytes   int64  `json:"bytes"`
	Refs    int    `json:"refs"`
}

// Restore copies the backup in backupDir into dataDir, which must not exist
// or be empty, syncing every file, then opens the copy and reads every
// reference's head commit. The backup itself is only read, so it can be
// restored again. If the copy does not open, it is removed again.
func Restore(ctx context.Context, backupDir, dataDir string) (_ *RestoreReport, err error) {
	if err := isBackup(backupDir); err != nil {
		return nil, fmt.Errorf("restore %s: %w", backupDir, err)
	}
	created, err := emptyDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("restore into %s: %w", dataDir, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, undo(dataDir, created))
		}
	}()
	rep := &RestoreReport{DataDir: dataDir}
	entries, err := os.ReadDir(backupDir)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("restore %s: %w: %s is not a regular file", backupDir, ErrNotBackup, e.Name())
		}
		n, err := copyFile(filepath.Join(backupDir, e.Name()), filepath.Join(dataDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
		rep.Files++
		rep.Bytes += n
	}
	if err := syncDir(dataDir); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	refs, err := verify(ctx, dataDir)
	if err != nil {
		return nil, fmt.Errorf("restore: the restored store in %s does not open: %w", dataDir, err)
	}
	rep.Refs = refs
	return rep, nil
}

// isBackup checks that dir holds a Pebble database (a MANIFEST), so that a
// mistyped path does not "restore" an empty store.
func isBackup(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "MANIFEST-") {
			return nil
		}
	}
	return fmt.Errorf("%w: %s holds no Pebble MANIFEST", ErrNotBackup, dir)
}

// emptyDir makes sure dir exists and is empty; created says it was made
// here.
func emptyDir(dir string) (created bool, err error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return false, err
		}
		return true, nil
	case err != nil:
		return false, err
	case len(entries) > 0:
		return false, fmt.Errorf("%w: it holds %s", ErrNotEmpty, entries[0].Name())
	}
	return false, nil
}

// undo undoes a failed restore or import: the directory is removed if it
// was created for it, else emptied.
func undo(dir string, created bool) error {
	if created {
		return os.RemoveAll(dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return n, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// verify opens the store in dir and reads every reference's head commit.
// A restored store always has references; versionstore.Open would create
// main in one that has none, so none is an error checked first.
func verify(ctx context.Context, dir string) (int, error) {
	be, err := pebblebackend.Open(dir, pebblebackend.Options{})
	if err != nil {
		return 0, err
	}
	if refs, err := be.ListRefs(ctx); err != nil || len(refs) == 0 {
		return 0, errors.Join(fmt.Errorf("%w: it holds no reference", ErrNotBackup), err, be.Close())
	}
	s, err := versionstore.Open(ctx, be, versionstore.Options{})
	if err != nil {
		return 0, errors.Join(err, be.Close())
	}
	refs := s.ListRefs()
	for _, r := range refs {
		if r.Head == versionstore.NoAncestor {
			continue
		}
		if _, err := s.ReadCommit(ctx, r.Head); err != nil {
			return 0, errors.Join(fmt.Errorf("read the head %s of %s: %w", r.Head, r.Name, err), s.Close())
		}
	}
	if err := s.Close(); err != nil {
		return 0, err
	}
	return len(refs), nil
}
